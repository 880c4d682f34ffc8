"""Wick position, calibration-ring measurer and fixed-anchor polar profiles.

The ring measurer is registered for declared concentric calibration conditions only (an Airy
pattern, possibly moved by prism). It is not a general halo detector: on defocused, astigmatic,
finite-source, holed or polychromatic fields a single circle is not a faithful description, and the
release keeps the full 2-D field and polar profiles instead.

All coordinates are arcmin on the detector's tangent plane; images are indexed ``[row = +y, col = +x]``
with pixel centres at ``(j - (N-1)/2) * pitch``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.ndimage import map_coordinates

from icl import libm, linalg
from icl.halo.cases import FIRST_DARK, SECOND_DARK

# Registered detection rule (docs/halo.md): the ring's annular-mean peak must stand above the lower
# of its two neighbouring minima by this many azimuthal standard deviations of the peak annulus.
SIGNIFICANCE_K = 3.0
PROFILE_BIN = 0.5  # annulus width of the azimuthal-mean profile, in pixels
FIT_HALF_WIDTH = 0.30  # half-width (lambda/D) of the radial band fitted by a polynomial around the peak
FIT_DEGREE = 6
CRITICAL_GRID = 2049  # samples of [-1, 1] bracketing the fitted polynomial's extrema
SECTORS = 16  # sectors used for the ring-only circle fit
POLAR_RADII = 96
POLAR_ANGLES = 72
POLAR_MAX_ARCMIN = 12.0


def polar_grid() -> tuple[np.ndarray, np.ndarray]:
    """Radii (arcmin) and angles (degrees) of the fixed-anchor polar profiles.

    Radii are the midpoints ``(i + 1/2) * 12/96`` arcmin, i = 0..95 (0.0625 to 11.9375 arcmin, so a
    sum weighted by radius is the midpoint rule for the area integral); angles are ``5 j`` degrees,
    j = 0..71, counter-clockwise from +x.
    """
    radii = (np.arange(POLAR_RADII) + 0.5) * (POLAR_MAX_ARCMIN / POLAR_RADII)
    angles = np.arange(POLAR_ANGLES) * (360.0 / POLAR_ANGLES)
    return radii, angles


def polar_profile(image: np.ndarray, axis: np.ndarray, centre: tuple[float, float]) -> np.ndarray:
    """Pixel flux sampled on the polar grid about ``centre``, shape (96 radii, 72 angles).

    Values are bilinear interpolations of the pixel map (flux per pixel); samples outside the square
    spanned by the pixel centres are NaN (never wrapped to the other side).
    """
    radii, angles = polar_grid()
    phi = np.deg2rad(angles)
    x = centre[0] + radii[:, None] * np.cos(phi)[None, :]
    y = centre[1] + radii[:, None] * np.sin(phi)[None, :]
    pitch = axis[1] - axis[0]
    col = (x - axis[0]) / pitch
    row = (y - axis[0]) / pitch
    n = image.shape[0]
    inside = (col >= 0) & (col <= n - 1) & (row >= 0) & (row <= n - 1)
    out = map_coordinates(np.asarray(image, dtype=float), [row.ravel(), col.ravel()], order=1, mode="nearest")
    out = out.reshape(x.shape)
    out[~inside] = np.nan
    return out


def wick_centre(
    image: np.ndarray,
    axis: np.ndarray,
    window_arcmin: float,
    start: tuple[float, float] | None = None,
    max_iter: int = 100,
) -> tuple[float, float] | None:
    """Centre of the main image from its local intensity.

    Starts at the brightest pixel (or near ``start``) and iterates an intensity-weighted centroid
    over the pixels whose centres lie within ``window_arcmin`` of the current estimate. For a
    centro-symmetric main lobe the first moment about its centre vanishes, so the symmetry centre is
    the fixed point; with the window edge on the first dark ring, pixels entering or leaving the
    window carry almost no flux and the pixelised edge adds no measurable bias. A parabolic fit to
    the peak would instead depend on where the peak falls inside its pixel.

    Returns None for an image without positive flux.
    """
    img = np.asarray(image, dtype=float)
    if not np.any(img > 0):
        return None
    pitch = float(axis[1] - axis[0])
    if start is None:
        i, j = np.unravel_index(int(np.argmax(img)), img.shape)
        cx, cy = float(axis[j]), float(axis[i])
    else:
        cx, cy = start
    h = int(math.ceil(window_arcmin / pitch)) + 1
    n = img.shape[0]
    for _ in range(max_iter):
        j0 = int(round((cx - axis[0]) / pitch))
        i0 = int(round((cy - axis[0]) / pitch))
        rs, cs = slice(max(i0 - h, 0), min(i0 + h + 1, n)), slice(max(j0 - h, 0), min(j0 + h + 1, n))
        sub = img[rs, cs]
        xs, ys = axis[cs][None, :], axis[rs][:, None]
        # Clip the window symmetrically where the detector edge cuts it, so that the window stays
        # point-symmetric about the estimate (a one-sided cut would pull the centroid inwards).
        ax_ = min(window_arcmin, axis[-1] - cx, cx - axis[0])
        ay_ = min(window_arcmin, axis[-1] - cy, cy - axis[0])
        keep = (
            ((xs - cx) ** 2 + (ys - cy) ** 2 <= window_arcmin**2)
            & (np.abs(xs - cx) <= ax_ + 1e-9)
            & (np.abs(ys - cy) <= ay_ + 1e-9)
        )
        w = np.where(keep, sub, 0.0)
        total = w.sum()
        if total <= 0:
            return None
        nx, ny = float((w * xs).sum() / total), float((w * ys).sum() / total)
        done = math.hypot(nx - cx, ny - cy) < 1e-7
        cx, cy = nx, ny
        if done:
            break
    return cx, cy


def arc_coverage(
    centre: tuple[float, float], radius: float, half_width: float, samples: int = 36000
) -> float:
    """Fraction of the circle's circumference inside the square detector window ``|x|, |y| <= half_width``."""
    t = (np.arange(samples) + 0.5) * (2 * math.pi / samples)
    x = centre[0] + radius * np.cos(t)
    y = centre[1] + radius * np.sin(t)
    return float(np.mean((np.abs(x) <= half_width) & (np.abs(y) <= half_width)))


def _annular_profile(img: np.ndarray, r: np.ndarray, r_max: float, step: float):
    nb = int(math.ceil(r_max / step))
    idx = np.floor(r / step).astype(np.int64)
    ok = idx < nb
    idx, v = idx[ok], img[ok]
    count = np.bincount(idx, minlength=nb)
    s1 = np.bincount(idx, weights=v, minlength=nb)
    s2 = np.bincount(idx, weights=v * v, minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / count
        std = np.sqrt(np.maximum(s2 / count - mean**2, 0.0))
    centres = (np.arange(nb) + 0.5) * step
    return centres, mean, std, count


def _poly_peak(r: np.ndarray, v: np.ndarray, r0: float, half: float) -> tuple[float, float] | None:
    """Maximum of a degree-6 polynomial fitted to (r, v) in [r0 - half, r0 + half]."""
    sel = np.abs(r - r0) <= half
    if sel.sum() < 3 * (FIT_DEGREE + 1):
        return None
    t = (r[sel] - r0) / half
    coef = linalg.polyfit(t, v[sel], FIT_DEGREE)
    crit = _critical_points(coef)
    if crit.size == 0:
        return None
    vals = np.polynomial.polynomial.polyval(crit, coef)
    k = int(np.argmax(vals))
    if vals[k] <= 0:
        return None
    return r0 + crit[k] * half, float(vals[k])


def _critical_points(coef: np.ndarray) -> np.ndarray:
    """Points of [-1, 1] where the polynomial's derivative changes sign (every maximum and minimum there).

    Brackets on a fine grid refined by Brent's method: the same bits on every host, which eigenvalues of
    the companion matrix (LAPACK) are not. Extrema closer together than the grid step (1/1024) are missed;
    a degree-6 fit over the ring's band has none.
    """
    from scipy.optimize import brentq

    P = np.polynomial.polynomial
    der = P.polyder(coef)
    t = np.linspace(-1.0, 1.0, CRITICAL_GRID)
    d = P.polyval(t, der)
    roots = list(t[d == 0.0])
    for i in np.nonzero(((d[:-1] < 0.0) & (d[1:] > 0.0)) | ((d[:-1] > 0.0) & (d[1:] < 0.0)))[0]:
        roots.append(brentq(lambda x: float(P.polyval(x, der)), t[i], t[i + 1], xtol=1e-15))
    return np.array(sorted(roots))


def _crossing(x: np.ndarray, y: np.ndarray, level: float, k: int, step: int) -> float | None:
    """Radius where y falls below ``level`` walking from index k in direction ``step``."""
    i = k
    while 0 <= i + step < len(y):
        if np.isfinite(y[i + step]) and y[i + step] < level:
            y0, y1 = y[i], y[i + step]
            return float(x[i] + (x[i + step] - x[i]) * (y0 - level) / (y0 - y1))
        i += step
    return None


def _circle_fit(points: np.ndarray) -> tuple[float, float, float]:
    """Algebraic (Kasa) least-squares circle through points [n, 2]."""
    x, y = points[:, 0], points[:, 1]
    a = np.column_stack([x, y, np.ones_like(x)])
    b = x * x + y * y
    p, q, c = linalg.lstsq(a, b)
    cx, cy = p / 2, q / 2
    return float(cx), float(cy), float(math.sqrt(c + cx * cx + cy * cy))


def measure_ring(
    image: np.ndarray, axis: np.ndarray, lambda_over_d: float, start: tuple[float, float] | None = None
) -> dict:
    """Measure the first bright ring of a concentric calibration pattern.

    Parameters
    ----------
    image : ndarray, shape (N, N)
        Pixel flux of one source (row = +y).
    axis : ndarray, shape (N,)
        Pixel-centre coordinates (arcmin), the same for x and y.
    lambda_over_d : float
        lambda / D of the condition (arcmin); sets the centring window (first dark ring), the
        search band (first to second dark ring) and the fitted band.
    start : (float, float), optional
        Where to start the centring (default: the brightest pixel).

    Returns
    -------
    dict
        ``status`` ('detected' or 'not_detected' with ``reason``), ``centre_arcmin`` (main image),
        ``radius_arcmin`` (polynomial peak), ``fwhm_arcmin`` (radial FWHM above the mean of the
        neighbouring minima), ``significance`` (prominence / azimuthal sigma), ``arc_coverage`` (fraction
        of the circle inside the window), ``ring_centre_arcmin`` (circle fitted to per-sector ridge
        points, independent of the main image) and the rule parameters.

    """
    img = np.asarray(image, dtype=float)
    pitch = float(axis[1] - axis[0])
    half_width = (len(axis) * pitch) / 2.0
    rule = {
        "significance_k": SIGNIFICANCE_K,
        "search_band_lambda_over_d": [FIRST_DARK, SECOND_DARK],
        "fit_half_width_lambda_over_d": FIT_HALF_WIDTH,
        "fit_degree": FIT_DEGREE,
        "profile_bin_arcmin": PROFILE_BIN * pitch,
    }
    centre = wick_centre(img, axis, FIRST_DARK * lambda_over_d, start)
    if centre is None:
        return {"status": "not_detected", "reason": "no positive flux", "rule": rule}
    cx, cy = centre
    lo, hi = FIRST_DARK * lambda_over_d, SECOND_DARK * lambda_over_d
    reach = hi + lambda_over_d
    # Only the square of half-width `reach` about the centre is read (the ridge fit stays within
    # hi + 2 FIT_HALF_WIDTH lambda/D); cropping keeps every selection and its order, so the same numbers.
    c0, c1 = np.searchsorted(axis, cx - reach, "left"), np.searchsorted(axis, cx + reach, "right")
    r0, r1 = np.searchsorted(axis, cy - reach, "left"), np.searchsorted(axis, cy + reach, "right")
    img = img[r0:r1, c0:c1]
    xs, ys = np.meshgrid(axis[c0:c1], axis[r0:r1])
    r = np.hypot(xs - cx, ys - cy)
    near = r < reach
    rn, vn = r[near], img[near]
    step = PROFILE_BIN * pitch
    rc, mean, std, count = _annular_profile(vn, rn, reach, step)
    band = np.flatnonzero((rc >= lo) & (rc <= hi) & (count > 0))
    out = {"centre_arcmin": [cx, cy], "rule": rule}
    if band.size < 3:
        return {**out, "status": "not_detected", "reason": "search band outside the window"}
    k = int(band[np.nanargmax(mean[band])])
    if k in (band[0], band[-1]):
        return {**out, "status": "not_detected", "reason": "no local maximum inside the search band"}
    win = int(round(lambda_over_d / step))
    left = mean[max(k - win, 0) : k]
    right = mean[k + 1 : k + 1 + win]
    if not (np.any(np.isfinite(left)) and np.any(np.isfinite(right))):
        return {**out, "status": "not_detected", "reason": "no neighbouring minima"}
    base_l, base_r = float(np.nanmin(left)), float(np.nanmin(right))
    prominence = float(mean[k] - max(base_l, base_r))
    sigma = float(std[k])
    significance = prominence / sigma if sigma > 0 else (math.inf if prominence > 0 else 0.0)
    out["significance"] = significance if math.isfinite(significance) else None
    if not prominence > SIGNIFICANCE_K * sigma or prominence <= 0:
        return {
            **out,
            "status": "not_detected",
            "reason": f"peak stands {significance:.3g} sigma above its neighbouring minima "
            f"(< {SIGNIFICANCE_K})",
        }
    fit = _poly_peak(rn, vn, float(rc[k]), FIT_HALF_WIDTH * lambda_over_d)
    if fit is None:
        return {**out, "status": "not_detected", "reason": "polynomial fit has no maximum in the band"}
    radius, peak = fit
    base = 0.5 * (base_l + base_r)
    level = base + 0.5 * (peak - base)
    r_in, r_out = _crossing(rc, mean, level, k, -1), _crossing(rc, mean, level, k, +1)
    fwhm = r_out - r_in if r_in is not None and r_out is not None else None
    return {
        **out,
        "status": "detected",
        "radius_arcmin": radius,
        "peak_flux_per_pixel": peak,
        "fwhm_arcmin": fwhm,
        "arc_coverage": arc_coverage((cx, cy), radius, half_width),
        "ring_centre_arcmin": _ring_centre(
            img, r, xs - cx, ys - cy, (cx, cy), radius, FIT_HALF_WIDTH * lambda_over_d
        ),
    }


def _ring_centre(img, r, dx, dy, centre, radius, half) -> list[float] | None:
    """Centre of a circle fitted to the ridge of the ring in each angular sector (ignores the wick).

    Sectors with too few in-window pixels are skipped; at least six are needed.
    """
    sel = np.abs(r - radius) <= half
    rr, vv = r[sel], img[sel]
    ang = np.mod(libm.arctan2(dy[sel], dx[sel]), 2 * math.pi)
    sector = np.floor(ang / (2 * math.pi / SECTORS)).astype(int)
    points = []
    for s in range(SECTORS):
        m = sector == s
        if m.sum() < 10:
            continue
        t = (rr[m] - radius) / half
        coef = linalg.polyfit(t, vv[m], 2)
        if coef[2] >= 0:
            continue
        rs = radius - half * coef[1] / (2 * coef[2])
        if abs(rs - radius) > half:
            continue
        phi = (s + 0.5) * 2 * math.pi / SECTORS
        points.append((centre[0] + rs * math.cos(phi), centre[1] + rs * math.sin(phi)))
    if len(points) < 6:
        return None
    cx, cy, _ = _circle_fit(np.array(points))
    return [cx, cy]

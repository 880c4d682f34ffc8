"""Second wave solver: a matrix Fourier transform of the thin-phase pupil straight onto detector pixels.

It shares no code path with the FFT engine (:mod:`icl.optics.render`, ``cpp/pupil.cpp``,
``cpp/psf.cpp``): it reads the same scene description (:class:`~icl.optics.model.Pupil`,
:class:`~icl.optics.model.Scene`) but has its own pupil quadrature, its own transform and its own
pixel integration.

- **Pupil quadrature, exact at the edges.** The pupil is a sum of terms, each a smooth phase factor
  over a region that is an intersection of disks (pupil, optic zone, hole). A region is integrated
  column by column: along u piecewise Gauss-Legendre between the breakpoints (disk extremes and circle
  crossings) under the map ``u = mid + half sin(pi t / 2)``, which removes the square-root endpoint
  behaviour of the chord length; along v Gauss-Legendre between the chord's ends. The integrand is
  then smooth on every piece and the quadrature converges spectrally: no cell is cut by an edge.
- **Transform.** ``E(theta) = (1/lambda) sum_nodes c exp(-2 pi i (u theta_x + v theta_y) / lambda)``,
  evaluated as two matrix products (columns, then rows), straight at the points where it is needed.
- **Pixel integration.** The intensity ``|E|^2 / area`` is integrated over each pixel by
  ``subpixel x subpixel`` Gauss-Legendre nodes; the intensity's band (at most ``D p / lambda`` cycles
  per pixel) makes 3 nodes exact to ~1e-8 for the halo cases' pupils.

Point sources only (any spectrum); the pattern is translated to each source (the thin eye is
isoplanatic). It is slow compared with the FFT engine (cost ~ pixels x pupil nodes), so callers may ask
for a subsample of rows and columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import roots_legendre

from icl.optics.model import ARCSEC, Pupil, Scene, Source

Disk = tuple[float, float, float]  # centre u, centre v, radius (m)


@dataclass(frozen=True)
class MftSampling:
    """Numerical parameters of the matrix-Fourier solver (justified by ``bench/convergence.py --mft``).

    Parameters
    ----------
    nodes_per_cycle : float
        Gauss-Legendre nodes per cycle of the integrand's highest spatial frequency, along each pupil axis.
    min_nodes : int
        Nodes added to every piece and chord (resolves the smooth part and short pieces).
    subpixel : int
        Gauss-Legendre nodes per pixel side for the pixel integration.
    chunk : int
        Pupil columns transformed at once (memory and speed only).

    """

    nodes_per_cycle: float = 2.0
    min_nodes: int = 12
    subpixel: int = 3
    chunk: int = 64


@lru_cache(maxsize=64)
def _gauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (SciPy's O(n) asymptotic rule for large n)."""
    return roots_legendre(n)


def _chord(disks: tuple[Disk, ...], u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper v of the intersection of ``disks`` at abscissae ``u`` (upper < lower: empty)."""
    lo = np.full(u.shape, -np.inf)
    hi = np.full(u.shape, np.inf)
    for cu, cv, r in disks:
        h = np.sqrt(np.maximum(r * r - (u - cu) ** 2, 0.0))
        lo = np.maximum(lo, cv - h)
        hi = np.minimum(hi, cv + h)
    return lo, hi


def _breakpoints(disks: tuple[Disk, ...]) -> list[float]:
    """u-range of the intersection split where its chord is not smooth."""
    a = max(cu - r for cu, _, r in disks)
    b = min(cu + r for cu, _, r in disks)
    if b <= a:
        return []
    pts = {a, b}
    for i, (u1, v1, r1) in enumerate(disks):
        pts.update(e for e in (u1 - r1, u1 + r1) if a < e < b)
        for u2, v2, r2 in disks[i + 1 :]:
            d = math.hypot(u2 - u1, v2 - v1)
            if d == 0.0 or d >= r1 + r2 or d <= abs(r1 - r2):
                continue
            x = (d * d + r1 * r1 - r2 * r2) / (2 * d)  # along the line of centres
            y = math.sqrt(max(r1 * r1 - x * x, 0.0))
            for s in (1.0, -1.0):
                e = u1 + (x * (u2 - u1) - s * y * (v2 - v1)) / d
                if a < e < b:
                    pts.add(e)
    return sorted(pts)


def region_nodes(
    disks: tuple[Disk, ...], freq_u: float, freq_v: float, sampling: MftSampling
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Quadrature of the intersection of ``disks``: a list of ``(u [A], v [A, B], w [A, B])`` blocks.

    ``freq_u``, ``freq_v`` bound the integrand's spatial frequency (cycles per metre) along each axis.
    ``sum w f(u, v)`` integrates a smooth ``f`` over the region to spectral accuracy.
    """
    pts = _breakpoints(disks)
    blocks = []
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        half = 0.5 * (b - a)
        n_u = int(math.ceil(sampling.nodes_per_cycle * 0.5 * math.pi * freq_u * (b - a))) + sampling.min_nodes
        t, wt = _gauss(n_u)
        s = 0.5 * math.pi * t
        u = 0.5 * (a + b) + half * np.sin(s)
        wu = wt * half * 0.5 * math.pi * np.cos(s)
        lo, hi = _chord(disks, u)
        length = np.maximum(hi - lo, 0.0)
        n_v = int(math.ceil(sampling.nodes_per_cycle * freq_v * float(length.max()))) + sampling.min_nodes
        g, wg = _gauss(n_v)
        v = 0.5 * (lo + hi)[:, None] + 0.5 * length[:, None] * g[None, :]
        w = wu[:, None] * 0.5 * length[:, None] * wg[None, :]
        blocks.append((u, v, w))
    return blocks


class _Wave:
    """Quadratic wavefront ``W = p - (K/2)|x - c|^2 - (C/2) d_perp^2`` (m); ``d_perp`` across the axis alpha,
    ``p`` a piston (m).
    """

    def __init__(self, power: float, centre: tuple[float, float] = (0.0, 0.0), cyl: float = 0.0,
                 axis_rad: float = 0.0, piston: float = 0.0) -> None:
        self.k, self.c, self.cyl, self.piston = power, centre, cyl, piston
        self.sa, self.ca = math.sin(axis_rad), math.cos(axis_rad)

    def __call__(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        du, dv = u - self.c[0], v - self.c[1]
        dp = -du * self.sa + dv * self.ca
        return self.piston - 0.5 * self.k * (du * du + dv * dv) - 0.5 * self.cyl * dp * dp

    def slope(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        du, dv = u - self.c[0], v - self.c[1]
        dp = -du * self.sa + dv * self.ca
        return -self.k * du + self.cyl * dp * self.sa, -self.k * dv - self.cyl * dp * self.ca


class _Sum(_Wave):
    """Sum of wavefronts."""

    def __init__(self, *parts: _Wave) -> None:
        self.parts = parts

    def __call__(self, u, v):
        return sum(p(u, v) for p in self.parts)

    def slope(self, u, v):
        gs = [p.slope(u, v) for p in self.parts]
        return sum(g[0] for g in gs), sum(g[1] for g in gs)


def _pupil_terms(pupil: Pupil) -> list[tuple[tuple[Disk, ...], list[tuple[float, _Wave]]]]:
    """Split the pupil into terms ``(region, [(amplitude, W)])``.

    ``P = sum over terms of 1_region sum_j a_j exp(i k W_j)``; each region is an intersection of disks.
    """
    rp = 0.5e-3 * pupil.diameter_mm
    pupil_disk: Disk = (0.0, 0.0, rp)
    eye = _Wave(pupil.eye_excess_d)
    icl = pupil.icl
    if icl is None:
        return [((pupil_disk,), [(1.0, eye)])]
    c = (1e-3 * icl.decentre_mm[0], 1e-3 * icl.decentre_mm[1])
    both = _Sum(eye, _Wave(icl.power_d, c, icl.cylinder_d, math.radians(icl.axis_deg), 1e-6 * icl.optic_opd_um))
    zone: Disk = (*c, 0.5e-3 * icl.optic_zone_mm)
    if math.hypot(*c) + rp <= zone[2]:  # the pupil lies inside the optic zone
        terms = [((pupil_disk,), [(1.0, both)])]
    else:
        terms = [((pupil_disk,), [(1.0, eye)]), ((pupil_disk, zone), [(1.0, both), (-1.0, eye)])]
    if icl.hole_mm > 0 and icl.hole != "index_matched":
        hole: Disk = (*c, 0.5e-3 * icl.hole_mm)
        parts = [(-1.0, both)] + ([(1.0, eye)] if icl.hole == "clear" else [])
        terms.append(((pupil_disk, hole), parts))
    return terms


def _max_slope(disks: tuple[Disk, ...], waves: list[tuple[float, _Wave]]) -> float:
    """Bound |grad W| over the region (rad).

    |grad W| is convex, so its maximum over the region is at most its maximum on the boundary of the
    smallest of the region's disks.
    """
    cu, cv, r = min(disks, key=lambda d: d[2])
    phi = np.linspace(0.0, 2.0 * math.pi, 721)
    u, v = cu + r * np.cos(phi), cv + r * np.sin(phi)
    return max(float(np.hypot(*w.slope(u, v)).max()) for _, w in waves)


def pupil_quadrature(
    pupil: Pupil, lam: float, theta_max: tuple[float, float], sampling: MftSampling
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Nodes and complex weights ``(u [A], v [A, B], c [A, B])`` with ``sum c g(u, v) = int P g``.

    ``theta_max`` bounds |theta_x| and |theta_y| (rad) of the far-field points to be evaluated; with the
    wavefront's largest slope on each region it bounds the integrand's spatial frequency.
    """
    k = 2.0 * math.pi / lam
    out = []
    for disks, waves in _pupil_terms(pupil):
        slope = _max_slope(disks, waves)
        fu, fv = ((slope + t) / lam for t in theta_max)
        for u, v, w in region_nodes(disks, fu, fv, sampling):
            uu = np.broadcast_to(u[:, None], v.shape)
            out.append((u, v, w * sum(a * np.exp(1j * k * wave(uu, v)) for a, wave in waves)))
    return out


def far_field(
    quad: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    lam: float,
    theta_y: np.ndarray,
    theta_x: np.ndarray,
    chunk: int = 64,
) -> np.ndarray:
    """``E[(i, s), j] = (1/lambda) sum c exp(-2 pi i (u theta_x[j] + v theta_y[i, s]) / lambda)``.

    ``theta_y`` is (rows, sub-nodes); output rows are in that order, flattened. When the rows are evenly
    spaced the row kernel is advanced from row to row by one complex factor per node (``exp`` once per
    node and sub-node instead of once per row): rounding grows by ~1e-16 per row.
    """
    kk = -2j * math.pi / lam
    rows, subs = theta_y.shape
    out = np.zeros((rows * subs, theta_x.size), dtype=complex)
    step = np.diff(theta_y[:, 0])
    even = rows > 1 and bool(np.all(np.abs(step - step[0]) <= 1e-12 * np.abs(theta_y).max()))
    for u, v, c in quad:
        for a0 in range(0, u.size, chunk):
            sl = slice(a0, a0 + chunk)
            vs, cs = v[sl], c[sl]
            # Rows first: g[i, s, a] = sum_b c[a, b] exp(kk v[a, b] theta_y[i, s]).
            if even:
                g = np.empty((rows, subs, vs.shape[0]), dtype=complex)
                cur = np.exp(kk * theta_y[0][:, None, None] * vs[None]) * cs[None]
                advance = np.exp(kk * step[0] * vs)
                for i in range(rows):
                    g[i] = cur.sum(axis=-1)
                    if i + 1 < rows:
                        cur *= advance
            else:
                g = np.einsum("isab,ab->isa", np.exp(kk * theta_y[:, :, None, None] * vs), cs)
            out += g.reshape(rows * subs, -1) @ np.exp(kk * np.outer(u[sl], theta_x))
    return out / lam


def _nodes(centres_rad: np.ndarray, pitch_rad: float, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel Gauss-Legendre abscissae [pixel, node] and weights (fractions of the pixel)."""
    g, w = _gauss(order)
    return centres_rad[:, None] + 0.5 * pitch_rad * g[None, :], 0.5 * w


def point_component(
    scene: Scene,
    source: Source,
    rows: np.ndarray | None = None,
    cols: np.ndarray | None = None,
    sampling: MftSampling | None = None,
) -> np.ndarray:
    """Pixel flux of one point source on the pixels ``rows x cols`` of the detector (all by default)."""
    sampling = sampling or MftSampling()
    return pixel_flux(
        lambda lam, theta_max: pupil_quadrature(scene.pupil, lam, theta_max, sampling),
        scene.pupil.diameter_mm, scene, source, rows, cols, sampling,
    )


Quadrature = list[tuple[np.ndarray, np.ndarray, np.ndarray]]


def pixel_flux(
    quadrature: Callable[[float, tuple[float, float]], Quadrature],
    diameter_mm: float,
    scene: Scene,
    source: Source,
    rows: np.ndarray | None = None,
    cols: np.ndarray | None = None,
    sampling: MftSampling | None = None,
) -> np.ndarray:
    """Pixel flux of one point source through any pupil given by its quadrature.

    ``quadrature(lambda_m, theta_max)`` returns the pupil's nodes and complex weights (as
    :func:`pupil_quadrature`) resolving far-field angles up to ``theta_max`` (rad, x and y);
    ``diameter_mm`` is the clear pupil's diameter (a clear pupil sends the whole flux into the plane).
    The far field is evaluated at ``subpixel x subpixel`` Gauss nodes of each pixel of ``rows x cols``,
    relative to the source, and integrated over the pixel. In the scene's ``visual`` frame the pattern is
    point-reflected about the source (the far field is evaluated at the negated offsets), as the observer
    sees it; the ``halo`` frame takes it as it is (docs/conventions.md, "Frames").
    """
    if source.extent.kind != "point":
        raise ValueError(f"source {source.id!r}: the matrix-Fourier solver takes point sources only")
    sampling = sampling or MftSampling()
    det = scene.detector
    axis = det.axis_arcmin
    rows = np.arange(det.n) if rows is None else np.asarray(rows)
    cols = np.arange(det.n) if cols is None else np.asarray(cols)
    p = det.pitch_arcsec * ARCSEC
    g = sampling.subpixel
    sign = -1.0 if scene.frame == "visual" else 1.0
    ty, wy = _nodes(sign * (axis[rows] - source.y_arcmin) * 60 * ARCSEC, p, g)
    tx, wx = _nodes(sign * (axis[cols] - source.x_arcmin) * 60 * ARCSEC, p, g)
    tx = tx.ravel()
    theta_max = (float(np.abs(tx).max()), float(np.abs(ty).max()))
    area = math.pi * (0.5e-3 * diameter_mm) ** 2
    out = np.zeros((rows.size, cols.size))
    for lam_nm, weight in source.spectrum:
        if weight == 0.0:
            continue
        lam = lam_nm * 1e-9
        quad = quadrature(lam, theta_max)
        inten = np.abs(far_field(quad, lam, ty, tx, sampling.chunk)) ** 2 / area
        pix = inten.reshape(rows.size, g, cols.size, g)
        out += weight * np.einsum("igjh,g,h->ij", pix, wy, wx) * p * p
    return source.flux * out


def render_mft(
    scene: Scene,
    rows: np.ndarray | None = None,
    cols: np.ndarray | None = None,
    sampling: MftSampling | None = None,
) -> np.ndarray:
    """Components ``[n_sources, len(rows), len(cols)]`` of a scene of point sources (see module doc)."""
    return np.stack([point_component(scene, s, rows, cols, sampling) for s in scene.sources])

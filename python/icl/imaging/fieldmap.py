"""Off-axis PSFs of a non-isoplanatic eye and field-dependent rendering by blended patches.

The thin-phase engine is isoplanatic: a source at angle ``theta`` gets the on-axis PSF translated to
``theta``. A thick eye is not. Here an eye is any callable
``pupil_at(x_deg, y_deg) -> PupilModel`` giving the pupil function of the field angle (its tilt
term carries the distortion, its higher terms the field aberrations); the functions below measure
how far each field's PSF is from the translated on-axis PSF, and render scenes with PSFs that vary
over the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from icl.imaging.mtf import DEFAULT_PERIOD, otf_from_samples, psf_period
from icl.optics.model import Detector, Extent, Scene, Source
from icl.optics.render import PupilModel, render
from icl.optics.sampling import Sampling

PupilAt = Callable[[float, float], PupilModel]


@dataclass(frozen=True)
class FieldDeviation:
    """How the PSF at one field angle differs from the on-axis PSF translated there.

    Attributes
    ----------
    x_deg, y_deg : float
        Field angle.
    flux_ratio : float
        Flux of this field's PSF over the on-axis one (vignetting, obliquity).
    shift_arcmin : (float, float)
        Translation of the on-axis PSF that best matches this one (cross-correlation peak): the
        local distortion relative to the nominal direction.
    tv_nominal : float
        Total-variation distance ``0.5 sum |a - b|`` between the unit-flux PSFs with no shift: the
        error of rendering this field with the thin-phase (translated on-axis) PSF.
    tv_translated : float
        The same after the best shift: the change of shape alone.
    strehl_ratio : float
        Peak of this PSF over the on-axis peak (both unit flux).
    mtf_tangential, mtf_sagittal : ndarray
        MTF at the requested frequencies.

    """

    x_deg: float
    y_deg: float
    flux_ratio: float
    shift_arcmin: tuple[float, float]
    tv_nominal: float
    tv_translated: float
    strehl_ratio: float
    mtf_tangential: np.ndarray
    mtf_sagittal: np.ndarray


def fourier_shift(a: np.ndarray, sy: float, sx: float) -> np.ndarray:
    """Exact sub-sample translation of a periodic band-limited map by (sy, sx) samples."""
    m = a.shape[0]
    f = np.fft.fftfreq(m)
    ph = np.exp(-2j * np.pi * (f[:, None] * sy + f[None, :] * sx))
    return np.fft.ifft2(np.fft.fft2(a) * ph).real


def best_shift(a: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """Translation (rows, cols, in samples) of ``ref`` that best matches ``a``.

    Peak of the circular cross-correlation, refined to sub-sample by a parabola through the peak
    and its neighbours along each axis.
    """
    xc = np.fft.ifft2(np.fft.fft2(a) * np.conj(np.fft.fft2(ref))).real
    m = a.shape[0]
    i, j = np.unravel_index(int(np.argmax(xc)), xc.shape)

    def refine(c0: float, cm: float, cp: float) -> float:
        den = cm - 2 * c0 + cp
        return 0.0 if den == 0 else 0.5 * (cm - cp) / den

    di = refine(xc[i, j], xc[(i - 1) % m, j], xc[(i + 1) % m, j])
    dj = refine(xc[i, j], xc[i, (j - 1) % m], xc[i, (j + 1) % m])
    wrap = lambda k: k - m if k >= m // 2 else k  # noqa: E731
    return wrap(i) + di, wrap(j) + dj


def field_deviations(pupil_at: PupilAt, fields_deg: Iterable[tuple[float, float]], wavelength_nm: float,
                     pitch_arcsec: float, freqs_cpd: np.ndarray, period: int = DEFAULT_PERIOD) -> list[FieldDeviation]:
    """PSF of each field angle against the on-axis PSF translated to it.

    All PSFs are computed on one grid (``pitch_arcsec``, ``period``) in each field's own frame, whose
    origin is the nominal image of the field direction.
    """
    axis = psf_period(pupil_at(0.0, 0.0), wavelength_nm, pitch_arcsec, period).samples
    axis_flux = float(axis.sum())
    axis_n = axis / axis_flux
    out = []
    for x, y in fields_deg:
        pupil = pupil_at(float(x), float(y))
        s = psf_period(pupil, wavelength_nm, pitch_arcsec, period).samples
        flux = float(s.sum())
        sn = s / flux
        sy, sx = best_shift(sn, axis_n)
        moved = fourier_shift(axis_n, sy, sx)
        otf = otf_from_samples(s, pitch_arcsec, wavelength_nm, 1.0 - pupil.blocked_fraction())
        t, sag = otf.tangential_sagittal(np.asarray(freqs_cpd, dtype=float), x, y)
        out.append(FieldDeviation(
            float(x), float(y), flux / axis_flux, (sx * pitch_arcsec / 60.0, sy * pitch_arcsec / 60.0),
            0.5 * float(np.abs(sn - axis_n).sum()), 0.5 * float(np.abs(sn - moved).sum()),
            float(sn.max() / axis_n.max()), t, sag))
    return out


def patch_weights(x_arcmin: np.ndarray, y_arcmin: np.ndarray, patch_arcmin: float) -> dict[tuple[int, int], np.ndarray]:
    """Bilinear weights of patch centres ``(i, j) * patch`` at each point; they sum to 1 everywhere.

    The weights are continuous and piecewise linear in position, so a blended image has no seams.
    """
    u = np.asarray(x_arcmin, dtype=float) / patch_arcmin
    v = np.asarray(y_arcmin, dtype=float) / patch_arcmin
    i0, j0 = np.floor(v).astype(int), np.floor(u).astype(int)
    tv, tu = v - i0, u - j0
    out: dict[tuple[int, int], np.ndarray] = {}
    for di, wv in ((0, 1 - tv), (1, tv)):
        for dj, wu in ((0, 1 - tu), (1, tu)):
            w = wv * wu
            for key in set(zip((i0 + di).ravel().tolist(), (j0 + dj).ravel().tolist())):
                sel = ((i0 + di) == key[0]) & ((j0 + dj) == key[1])
                out.setdefault(key, np.zeros(u.shape))[sel] += w[sel]
    return out


def render_patched(sources: tuple[Source, ...], detector: Detector, pupil_at: PupilAt, patch_arcmin: float,
                   sampling: Sampling | None = None,
                   progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Render with a field-dependent PSF: piecewise-isoplanatic patches blended bilinearly.

    Each source is split among the (up to four) patch centres around it with bilinear weights, per
    map cell for image extents and at the centre for points and disks; each part is rendered with
    the pupil of its patch centre and the parts are summed. The weights sum to one, so flux is
    conserved, and they vary continuously with position, so there are no seams. With a PSF that
    does not vary over the field the result is the isoplanatic render.

    Returns
    -------
    components : ndarray, shape (n_sources, n, n)
    scene : ndarray, shape (n, n)

    """
    parts: dict[tuple[int, int], list[tuple[int, Source]]] = {}
    for k, src in enumerate(sources):
        if src.extent.kind == "image":
            img = src.extent.image
            rows, cols = img.shape
            q = img.pitch_arcsec / 60.0
            cy = src.y_arcmin + (np.arange(rows) - (rows - 1) / 2.0) * q
            cx = src.x_arcmin + (np.arange(cols) - (cols - 1) / 2.0) * q
            weights = patch_weights(cx[None, :] + 0 * cy[:, None], cy[:, None] + 0 * cx[None, :], patch_arcmin)
            for key, w in weights.items():
                share = float((img.values * w).sum())
                if share > 0:
                    from icl.optics.image_source import ImageMap

                    sub = ImageMap(img.values * w, img.pitch_arcsec)
                    parts.setdefault(key, []).append(
                        (k, replace(src, flux=src.flux * share, extent=Extent("image", image=sub))))
        else:
            for key, w in patch_weights(np.array([src.x_arcmin]), np.array([src.y_arcmin]), patch_arcmin).items():
                if w[0] > 0:
                    parts.setdefault(key, []).append((k, replace(src, flux=src.flux * float(w[0]))))
    sampling = sampling or Sampling()
    if sampling.support_arcmin is None:
        # One support window (hence one FFT grid) for every patch, as if the scene were rendered whole.
        offset = max(max(abs(s.x_arcmin), abs(s.y_arcmin)) for s in sources)
        radius = detector.half_width_arcmin + offset + max(s.extent.radius_arcmin for s in sources)
        sampling = replace(sampling, support_arcmin=radius)
    comps = np.zeros((len(sources), detector.n, detector.n))
    for done, (key, members) in enumerate(sorted(parts.items())):
        pupil = pupil_at(key[1] * patch_arcmin / 60.0, key[0] * patch_arcmin / 60.0)
        res = render(Scene(tuple(s for _, s in members), pupil, detector), sampling)
        for (k, _), comp in zip(members, res.components):
            comps[k] += comp
        if progress is not None:
            progress(done + 1, len(parts))
    return comps, comps.sum(axis=0)


def patch_error(pupil_at: PupilAt, patch_arcmin: float, corner_arcmin: tuple[float, float], detector: Detector,
                wavelength_nm: float = 550.0) -> float:
    """Total-variation distance between the blended and the exact PSF of a point at a patch midpoint.

    The point sits at ``corner + patch / 2`` in x and y (where all four weights are 1/4, the worst
    place for bilinear blending); the exact render uses the pupil of that very field angle.
    """
    x = corner_arcmin[0] + 0.5 * patch_arcmin
    y = corner_arcmin[1] + 0.5 * patch_arcmin
    src = Source("p", x, y, spectrum=((wavelength_nm, 1.0),))
    _, blended = render_patched((src,), detector, pupil_at, patch_arcmin)
    exact = render(Scene((src,), pupil_at(x / 60.0, y / 60.0), detector)).scene
    return 0.5 * float(np.abs(blended - exact).sum()) / max(float(exact.sum()), 1e-300)

"""Numerical sampling of the far field and the exact pixel-integration kernels.

The far-field intensity of a pupil of extent ``n * du`` is band-limited: in units of the detector
pitch its spectrum lies inside ``|f| <= xb = (n - 1) / m`` cycles per sample. Sampled at the pixel
pitch (``xb < 1/2``), its samples determine it exactly, so the integral over each pixel at any
sub-pixel source position is a discrete filter on the samples whose response is
``sinc(f) exp(2 pi i f delta)`` inside the band. Outside the band the response is free; a C-infinity
taper to zero at ``|f| = 1/2`` makes the taps decay faster than any power, so a short filter is exact
to rounding (see ``bench/convergence.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import erfc, j1

from icl import linalg
from icl._core_loader import core

# Leave room for the taper between the band edge and Nyquist; a multiple of 1/128 (the design grid of
# design_band), so that every band up to it has a filter.
MAX_BAND = 57 / 128
# Cell frequencies (cycles per pupil cell, i.e. angle / FFT period) on which the pupil cells' area average
# is undone. The support window spans at most 1 / (2 fft_factor) of the period per axis: 1/3 at the
# smallest factor of the convergence study, 1/4 at the default.
EDGE_BAND = 0.34
EDGE_SUB = 4  # fine cells per pupil cell for the aperture coverages
EDGE_TOL = 1e-5  # largest error of the compensated cell transfer on EDGE_BAND (field, relative)
EDGE_STOP = 1e-4  # largest response where aliases would fold into EDGE_BAND
COARSE_BAND = 0.25  # point sources sample the far field q pixels apart while q * band stays below this


@dataclass(frozen=True)
class Sampling:
    """Numerical parameters of a render; the defaults are justified by ``bench/convergence.py``.

    Parameters
    ----------
    fft_factor : float
        Lower bound on the FFT period divided by the support window (>= 1): keeps the periodic
        copies of the far field away from the support. From 1.47 up the window lies inside the edge
        filter's band (:data:`EDGE_BAND`) and the thin pupil's coverages are filtered; below, only when
        the period floors make the period that long (else plain: the far field keeps the cells' sinc).
    min_period_arcmin : float
        Lower bound on the FFT period. The period sets what the discrete far field holds (its
        unresolved tail falls as 1 / period) and, with the pupil pitch ``du = lambda / period``, how
        finely the pupil is sampled.
    min_pupil_samples : int
        Lower bound on the pupil samples across its diameter, so that small detectors still resolve
        the 0.36 mm hole (about 29 samples across it at the default).
    support_arcmin : float or None
        Half-width of the PSF support window; by default detector half-width + largest source offset
        + largest extent radius (docs/conventions.md, "Scenes").
    tap_tolerance : float
        Largest error allowed in the pixel-integration filter's response on the intensity band.
    single_precision_fft : bool
        Far-field transforms of an image window in single precision (the pupil and everything after the
        transforms stay in double; a full period, as for the MTF, is always double): several times faster;
        the intensity changes by about 1e-7 of its peak, 1e-7 in relative L1 and 2e-6 relative in the
        faintest wings at 30 arcmin (docs/performance.md).
    single_precision_placement : bool
        Pixel integration of point sources with the samples, taps and filter sums in single precision (the
        flux scale and the image in double): about 1.5 times faster, about 1e-7 relative per pixel
        (``bench/precision.py``). Off by default; on in :meth:`fast`.

    """

    fft_factor: float = 2.0
    min_period_arcmin: float = 140.0
    min_pupil_samples: int = 256
    support_arcmin: float | None = None
    tap_tolerance: float = 1e-10
    single_precision_fft: bool = True
    single_precision_placement: bool = False

    @classmethod
    def fast(cls) -> Sampling:
        """Coarser settings for images that need a relative L1 error of 1e-3 rather than the defaults' 1e-6.

        The FFT period 1.5 times the support window with no floor of its own (``min_period_arcmin`` 0), at
        least 128 pupil samples across the diameter, pixel-integration taps exact to 1e-6 on the band (16 to
        18 taps instead of 28 at the reference problem's band), summed in single precision. The window stays
        inside the edge filter's band, so the aperture coverages are still filtered. Measured errors are in
        docs/convergence.md (rows ``fast``; ``bench/convergence.py``): at most 1.3e-5 in full-image L1 and
        1.6e-4 in halo-region L1 on the convergence cases, 1.7e-5 against the analytic Airy pattern at
        1024 x 1024 (the defaults: 3.2e-6). The defaults stay what releases and references use.
        """
        return cls(fft_factor=1.5, min_period_arcmin=0.0, min_pupil_samples=128, tap_tolerance=1e-6,
                   single_precision_placement=True)


def taper(f: np.ndarray, xb: float) -> np.ndarray:
    """Error-function roll-off: 1 - 1e-13 at ``|f| = xb``, 1e-13 at ``|f| = 1/2``.

    A Gaussian-smoothed edge makes the taps decay like ``exp(-(pi sigma t)^2)``, much faster than a
    compactly supported C-infinity bump of the same width.
    """
    mid = 0.5 * (xb + 0.5)
    sigma = (0.5 - xb) / (2.0 * _EDGE_Z)
    return 0.5 * erfc((np.abs(f) - mid) / sigma)


_EDGE_Z = 5.3  # erfc(5.3) / 2 ~ 1e-13: the taper's deviation at the band edge and at Nyquist
_L = 4096  # frequency samples for the disk kernel's integral (trapezoid rule, spectrally exact here)
_GAUSS = np.polynomial.legendre.leggauss(96)  # nodes on the band for the least-squares tap design
# The designs' least squares are numerically rank-deficient (condition numbers up to 1e16); a Tikhonov
# damping of 1e-14 of the matrix norm (LAPACK's default singular-value cutoff is about 4e-14 of the largest)
# selects a small-norm solution without a cutoff decision. Solved in a fixed order (icl.linalg), so the taps
# are the same bits on every host; the halfwidths and response errors equal LAPACK's on the bands tried.
_DAMPING = 1e-14


def _ls_taps(delta: float, xb: float, k: int, q: int = 1, check: bool = False) -> tuple[np.ndarray, float]:
    """Least-squares taps for offsets m = -k-1..k matching sinc(f / q) / q exp(2 pi i f delta) on |f| <= xb.

    Frequencies are in cycles per sample; the samples are q pixels apart, so a pixel is 1/q sample
    wide and holds 1/q of a sample's flux per axis. Returns the taps (indexed by m) and, with
    ``check``, the largest response error on the band relative to the response at f = 0 (else NaN).
    """
    g, w = _GAUSS
    f, wf = xb * g, np.sqrt(xb * w)
    m = np.arange(-k - 1, k + 1)  # taps centred on the pixel: positions m + delta in [-k - 1, k + 1)
    phase = 2 * np.pi * np.outer(f, m + delta)
    target = np.sinc(f / q) / q * wf
    design = np.vstack([np.cos(phase) * wf[:, None], np.sin(phase) * wf[:, None]])
    h = linalg.lstsq(design, np.concatenate([target, np.zeros_like(target)]), _DAMPING)
    if not check:
        return h, float("nan")
    fe = np.linspace(-xb, xb, 2001)
    phase = 2 * np.pi * np.outer(fe, m + delta)
    re, im = (np.cos(phase) * h).sum(axis=1), (np.sin(phase) * h).sum(axis=1)
    return h, float(np.hypot(q * re - np.sinc(fe / q), q * im).max())


@dataclass(frozen=True)
class EdgeFilter:
    """How aperture coverages are sampled: on cells ``sub`` times finer, filtered by ``taps`` onto the grid.

    ``taps[t]`` sits ``(t - (len - 1) / 2) / sub`` grid cells from the cell centre along each axis.
    """

    taps: tuple[float, ...]
    sub: int

    @property
    def spread(self) -> int:
        """Grid cells the filtered coverage reaches beyond the aperture's own cells, per side."""
        return int(math.ceil(len(self.taps) / (2.0 * self.sub)))


@lru_cache(maxsize=8)
def edge_filter(
    band: float = EDGE_BAND, sub: int = EDGE_SUB, pass_tol: float = EDGE_TOL, stop_tol: float = EDGE_STOP
) -> EdgeFilter:
    """Anti-aliasing filter of the aperture coverages that also undoes the cells' area average.

    A plain coverage is the area average of the aperture over each cell: samples of the aperture convolved
    with the cell, whose far field carries ``sinc(f)`` per axis (f in cycles per cell, the angle over the
    FFT period: 12 % low at 30-36 arcmin from the source at the default period) plus aliases of the
    aperture's transform from ``f +/- 1, 2, ...`` (the edge diffraction of the neighbouring periods; a
    few tenths of a percent of an annulus' energy where the two waves stay in phase, on the line between the
    copies). Taking the coverage on cells ``sub`` times finer (exact areas) and filtering it onto the grid
    with a response ``1 / sinc(f / sub)`` on ``|f| <= band`` (``pass_tol``) and 0 on
    ``1 - band <= |f| <= sub / 2`` (``stop_tol``) restores the aperture's own transform on the band and
    removes the aliases that fall into it, except the fine grid's own, ``sub`` times further and weaker.
    Least squares on Gauss-Legendre nodes, shortest even/odd length (parity of ``sub``) meeting both
    tolerances, scaled to a unit response at f = 0 (interior cells unchanged, the exact area kept).
    """
    g, w = _GAUSS
    fp, wp = 0.5 * band * (g + 1), np.sqrt(0.5 * band * w)
    lo, hi = 1.0 - band, 0.5 * sub
    fs, ws = lo + 0.5 * (hi - lo) * (g + 1), np.sqrt(0.5 * (hi - lo) * w)
    check_p, check_s = np.linspace(0.0, band, 2001), np.linspace(lo, hi, 4001)

    def attempt(half: int) -> EdgeFilter | None:
        length = 2 * half + sub % 2
        d = (np.arange(length) - (length - 1) / 2.0)[length // 2 :] / sub  # offsets >= 0 (grid cells)
        mult = np.where(d == 0.0, 1.0, 2.0)
        basis = lambda f: np.cos(2 * np.pi * np.outer(f, d)) * mult  # noqa: B023, E731
        design = np.vstack([basis(fp) * wp[:, None], basis(fs) * ws[:, None]])
        rhs = np.concatenate([wp / np.sinc(fp / sub), np.zeros(fs.size)])
        c = linalg.lstsq(design, rhs, _DAMPING)
        c = c / linalg.dot(basis(np.zeros(1))[0], c)
        if (np.abs(linalg.matmul(basis(check_p), c) * np.sinc(check_p / sub) - 1.0).max() > pass_tol
                or np.abs(linalg.matmul(basis(check_s), c)).max() > stop_tol):
            return None
        full = np.concatenate([c[::-1], c]) if sub % 2 == 0 else np.concatenate([c[:0:-1], c])
        return EdgeFilter(tuple(float(v) for v in full), sub)

    # Errors fall geometrically with the length: step by 8, then back to the shortest that passes.
    for top in range(8, 400, 8):
        if attempt(top) is not None:
            for half in range(top - 7, top + 1):
                found = attempt(half)
                if found is not None:
                    return found
    raise ValueError(f"no edge filter reaches {pass_tol} / {stop_tol} on the band {band}")


@lru_cache(maxsize=64)
def taper_halfwidth(xb: float, tol: float) -> int:
    """Half-width beyond which the tapered kernel's taps stay below ``tol`` of their peak."""
    f = np.fft.fftfreq(_L)
    m = np.fft.fftfreq(_L, 1.0 / _L)
    g = np.fft.ifft(np.sinc(f) * taper(f, xb)).real
    return int(np.abs(m[np.abs(g) >= tol * np.abs(g).max()]).max()) + 1


def design_band(xb: float) -> float:
    """Band edge the filters are designed for: ``xb`` rounded up to 1/128 cycle per sample.

    A filter exact on a wider band is exact on the narrower one, and rounding up lets eyes with
    nearly the same band share one cached design.
    """
    return math.ceil(xb * 128.0 - 1e-9) / 128.0


@lru_cache(maxsize=64)
def tap_halfwidth(xb: float, tol: float, q: int = 1) -> int:
    """Smallest k whose 2k + 2 least-squares taps meet ``tol`` on the band for every sub-sample offset."""
    for k in range(2, 64):
        if all(_ls_taps(delta, xb, k, q, check=True)[1] <= tol for delta in (0.0, 0.25, 0.5)):
            return k
    raise ValueError(f"no pixel-integration filter reaches {tol} for band {xb}")


def pixel_taps(delta: float, xb: float, tol: float, q: int = 1) -> np.ndarray:
    """Return :func:`design_taps`, cached (offsets rounded to 1e-12 sample; sources often share them)."""
    return _cached_taps(round(delta, 12), design_band(xb), tol, q)


@lru_cache(maxsize=256)
def _cached_taps(delta: float, xb: float, tol: float, q: int) -> np.ndarray:
    taps = design_taps(delta, xb, tol, q)
    taps.setflags(write=False)
    return taps


def design_taps(delta: float, xb: float, tol: float, q: int = 1) -> np.ndarray:
    """Taps ``t[b] = g(k - b + delta)``, b = 0..2k+1, of the pixel-integration kernel.

    ``g(t)`` integrates the band-limited intensity over a pixel centred at ``t`` samples; the sum
    ``sum_b t[b] s[j0 + b]`` is the flux of the pixel centred at ``j0 + k + delta``. The taps are the
    least-squares fit of the exact response ``sinc(f / q) / q exp(2 pi i f delta)`` on the band ``|f| <= xb``;
    outside the band the samples carry nothing, so the response there does not matter.

    Parameters
    ----------
    delta : float
        Sub-sample offset in [0, 1), in samples.
    xb : float
        Band edge of the intensity in cycles per sample.
    tol : float
        Largest allowed response error on the band.
    q : int
        Samples are q pixels apart (the pixel is 1/q sample wide).

    """
    xb = design_band(xb)
    k = tap_halfwidth(xb, tol, q)
    h, _ = _ls_taps(delta, xb, k, q)
    return np.ascontiguousarray(h[::-1])


def disk_kernel(
    delta_y: float, delta_x: float, diameter_px: float, xb: float, tol: float
) -> tuple[np.ndarray, int]:
    """2-D kernel ``g2(b - K2 + delta)`` for a uniform disk, pixel-integrated and band-limited.

    Returns the kernel of shape (2 K2 + 1, 2 K2 + 1) and K2.
    """
    k2 = int(math.ceil(diameter_px / 2.0)) + taper_halfwidth(design_band(xb), tol) + 1
    n = int(core.fast_length(max(64, 4 * (2 * k2 + 1))))
    f = np.fft.fftfreq(n)
    fy, fx = f[:, None], f[None, :]
    rho = np.hypot(fx, fy)
    arg = np.pi * diameter_px * rho
    with np.errstate(invalid="ignore", divide="ignore"):
        disk = np.where(arg > 0, 2.0 * j1(arg) / np.where(arg > 0, arg, 1.0), 1.0)
    h = (
        np.sinc(fx)
        * taper(fx, design_band(xb))
        * np.sinc(fy)
        * taper(fy, design_band(xb))
        * disk
        * np.exp(2j * np.pi * (fx * delta_x + fy * delta_y))
    )
    g = np.fft.ifft2(h).real
    idx = np.arange(-k2, k2 + 1) % n
    return np.ascontiguousarray(g[np.ix_(idx, idx)]), k2


@dataclass(frozen=True)
class Grid:
    """FFT and pupil grid for one wavelength.

    Attributes
    ----------
    m : int
        FFT length; the angular sample spacing is the detector pitch, the period ``m`` pitches.
    du : float
        Pupil sample pitch (m), ``wavelength / (m * pitch)``.
    n : int
        Pupil samples per side: the pupil, one guard cell and the edge filter's half-width on each side.

    """

    m: int
    du: float
    n: int

    @property
    def band(self) -> float:
        """Intensity band edge in cycles per detector pixel."""
        return (self.n - 1) / self.m


def make_grid(
    wavelength_m: float, pitch_rad: float, pupil_diameter_m: float, support: int, sampling: Sampling
) -> Grid:
    """Choose the FFT length for a support of ``support`` samples and derive the pupil grid."""
    # du = lambda / (m p) <= D / min_pupil_samples and m p >= min_period bound m from below as well.
    m_pupil = sampling.min_pupil_samples * wavelength_m / (pupil_diameter_m * pitch_rad)
    m_period = sampling.min_period_arcmin * math.pi / (180 * 60) / pitch_rad
    m = int(core.fast_length(int(math.ceil(max(sampling.fft_factor * support, m_pupil, m_period)))))
    du = wavelength_m / (m * pitch_rad)
    n = int(math.ceil(pupil_diameter_m / du)) + 2 + 2 * edge_filter().spread
    if n > m:
        raise ValueError("FFT length smaller than the pupil grid: increase fft_factor")
    return Grid(m, du, n)

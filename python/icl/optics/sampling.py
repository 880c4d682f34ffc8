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

from icl._core_loader import core

MAX_BAND = 0.45  # leave room for the taper between the band edge and Nyquist


@dataclass(frozen=True)
class Sampling:
    """Numerical parameters of a render; the defaults are justified by ``bench/convergence.py``.

    Parameters
    ----------
    fft_factor : float
        FFT period divided by the support window (>= 1). Larger values push the periodic copies of
        the far field further out and sample the pupil more finely.
    support_arcmin : float or None
        Half-width of the PSF support window; by default detector half-width + largest source offset
        + largest extent radius (DESIGN.md section 4).
    tap_tolerance : float
        Pixel-integration taps are truncated where they fall below this fraction of their peak.
    """

    fft_factor: float = 4.0
    support_arcmin: float | None = None
    tap_tolerance: float = 1e-12


def _taper(f: np.ndarray, xb: float) -> np.ndarray:
    """Error-function roll-off: 1 - 1e-13 at ``|f| = xb``, 1e-13 at ``|f| = 1/2``.

    A Gaussian-smoothed edge makes the taps decay like ``exp(-(pi sigma t)^2)``, much faster than a
    compactly supported C-infinity bump of the same width.
    """
    mid = 0.5 * (xb + 0.5)
    sigma = (0.5 - xb) / (2.0 * _EDGE_Z)
    return 0.5 * erfc((np.abs(f) - mid) / sigma)


_EDGE_Z = 5.3  # erfc(5.3) / 2 ~ 1e-13: the taper's deviation at the band edge and at Nyquist
_L = 4096  # frequency samples for the tap integrals (trapezoid rule, spectrally exact here)


@lru_cache(maxsize=64)
def tap_halfwidth(xb: float, tol: float) -> int:
    """Smallest K with |g(t)| < tol * max|g| for |t| > K, over sub-pixel offsets 0 and 1/2."""
    f = np.fft.fftfreq(_L)
    k = 0
    for delta in (0.0, 0.5):
        g = np.fft.ifft(np.sinc(f) * _taper(f, xb) * np.exp(2j * np.pi * f * delta)).real
        m = np.fft.fftfreq(_L, 1.0 / _L)
        big = np.abs(g) >= tol * np.abs(g).max()
        k = max(k, int(np.abs(m[big]).max()) + 1)
    return k


def pixel_taps(delta: float, xb: float, tol: float) -> np.ndarray:
    """Taps ``g(K - b + delta)``, b = 0..2K, of the band-limited pixel-integration kernel.

    Parameters
    ----------
    delta : float
        Sub-pixel offset in [0, 1), in pixels.
    xb : float
        Band edge of the intensity in cycles per pixel.
    tol : float
        Relative truncation level of the taps.
    """
    k = tap_halfwidth(round(xb, 6), tol)
    f = np.fft.fftfreq(_L)
    g = np.fft.ifft(np.sinc(f) * _taper(f, round(xb, 6)) * np.exp(2j * np.pi * f * delta)).real
    m = np.arange(k, -k - 1, -1)
    return np.ascontiguousarray(g[m % _L])


def disk_kernel(delta_y: float, delta_x: float, diameter_px: float, xb: float, tol: float) -> tuple[np.ndarray, int]:
    """2-D kernel ``g2(b - K2 + delta)`` for a uniform disk, pixel-integrated and band-limited.

    Returns the kernel of shape (2 K2 + 1, 2 K2 + 1) and K2.
    """
    k2 = int(math.ceil(diameter_px / 2.0)) + tap_halfwidth(round(xb, 6), tol) + 1
    n = int(core.fast_length(max(64, 4 * (2 * k2 + 1))))
    f = np.fft.fftfreq(n)
    fy, fx = f[:, None], f[None, :]
    rho = np.hypot(fx, fy)
    arg = np.pi * diameter_px * rho
    with np.errstate(invalid="ignore", divide="ignore"):
        disk = np.where(arg > 0, 2.0 * j1(arg) / np.where(arg > 0, arg, 1.0), 1.0)
    h = (np.sinc(fx) * _taper(fx, round(xb, 6)) * np.sinc(fy) * _taper(fy, round(xb, 6)) * disk
         * np.exp(2j * np.pi * (fx * delta_x + fy * delta_y)))
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
        Pupil samples per side (covers the pupil plus one guard cell on each side).
    """

    m: int
    du: float
    n: int

    @property
    def band(self) -> float:
        """Intensity band edge in cycles per detector pixel."""
        return (self.n - 1) / self.m


def make_grid(wavelength_m: float, pitch_rad: float, pupil_diameter_m: float, support: int,
              sampling: Sampling) -> Grid:
    """Choose the FFT length for a support of ``support`` samples and derive the pupil grid."""
    m = int(core.fast_length(int(math.ceil(sampling.fft_factor * support))))
    du = wavelength_m / (m * pitch_rad)
    n = int(math.ceil(pupil_diameter_m / du)) + 2
    if n > m:
        raise ValueError("FFT length smaller than the pupil grid: increase fft_factor")
    return Grid(m, du, n)

"""Scalar image-quality metrics from the engine's PSF: Strehl ratio, encircled energy, Parseval.

All PSF-side quantities come from one full period of band-limited samples
(:func:`icl.imaging.mtf.psf_period`); integrals over the continuous angle are then exact sums or
exact Fourier series (the intensity, and its square, are band-limited below the sampling rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import quad
from scipy.special import j0, j1

from icl._core_loader import core
from icl.imaging.mtf import DEFAULT_PERIOD, analytic_mtf, default_pitch_arcsec, psf_period
from icl.optics.model import ARCSEC
from icl.optics.render import PupilModel
from icl.optics.sampling import Sampling, make_grid

# Pure defocus of a = peak-to-valley waves has S = sinc^2(pi a) exactly and rms s = a / sqrt(12).
# With k = (2 pi s)^2: ln S = -k - k^2/10 - 2 k^3/105 - ..., so |S - exp(-k)| <= k^2/10 + k^3/20: the
# stated error of the Marechal value.
MARECHAL_K2, MARECHAL_K3 = 0.1, 0.05
EE_DROP = 1e-14  # relative size below which encircled_energy drops a Fourier coefficient


@dataclass(frozen=True)
class Strehl:
    """Strehl ratio by three routes for one pupil and wavelength.

    Attributes
    ----------
    from_psf : float
        PSF intensity at the origin over that of the aberration-free PSF of the same aperture
        (``|P|`` with its phase removed), both from the engine's far field.
    peak_from_psf : float
        Largest PSF sample over the aberration-free peak (differs from ``from_psf`` when the
        aberration moves the peak).
    from_pupil : float
        ``|sum P|^2 / (sum |P|)^2``: the same ratio computed on the pupil.
    rms_waves : float
        Rms wavefront error in waves over the clear aperture, piston removed; each pupil cell is
        weighted by its amplitude, i.e. its area fraction for a uniform pupil with anti-aliased edge.
    marechal : float
        ``exp(-(2 pi rms_waves)^2)``.
    marechal_error : float
        Stated error of the Marechal value for defocus, ``k^2/10 + k^3/20`` with ``k = (2 pi rms)^2``.
    phase_span_waves : float
        Largest |phase - mean| in waves; above 1/2 the phase is wrapped and ``rms_waves`` is invalid.

    """

    from_psf: float
    peak_from_psf: float
    from_pupil: float
    rms_waves: float
    marechal: float
    marechal_error: float
    phase_span_waves: float


def strehl(pupil: PupilModel, wavelength_nm: float, pitch_arcsec: float | None = None,
           period: int = DEFAULT_PERIOD) -> Strehl:
    """Strehl ratio of ``pupil`` at one wavelength from the PSF and from the wavefront."""
    if pitch_arcsec is None:
        pitch_arcsec = default_pitch_arcsec(pupil.diameter_mm, wavelength_nm)
    lam = wavelength_nm * 1e-9
    grid = make_grid(lam, pitch_arcsec * ARCSEC, pupil.diameter_mm * 1e-3, period, Sampling(fft_factor=1.0))
    p = np.ascontiguousarray(pupil.field(grid.n, grid.du, lam), dtype=complex)
    amp = np.ascontiguousarray(np.abs(p).astype(complex))
    ref = core.psf_window(amp, grid.m, period, 1.0)
    cur = core.psf_window(p, grid.m, period, 1.0)
    c = period // 2
    ref_peak = float(ref[c, c])
    weight = np.abs(p)
    mean_phasor = np.sum(p)  # sets the piston
    phase = np.angle(p * np.conj(mean_phasor))
    lit = weight > 0
    mean = float(np.sum(weight * phase) / weight.sum())
    rms = math.sqrt(float(np.sum(weight * (phase - mean) ** 2) / weight.sum())) / (2 * math.pi)
    span = float(np.max(np.abs(phase[lit] - mean))) / (2 * math.pi)
    k = (2 * math.pi * rms) ** 2
    return Strehl(
        from_psf=float(cur[c, c]) / ref_peak,
        peak_from_psf=float(cur.max()) / ref_peak,
        from_pupil=float(abs(p.sum()) ** 2 / np.abs(p).sum() ** 2),
        rms_waves=rms,
        marechal=math.exp(-k),
        marechal_error=MARECHAL_K2 * k * k + MARECHAL_K3 * k**3,
        phase_span_waves=span,
    )


def encircled_energy(samples: np.ndarray, pitch_arcsec: float, radii_arcmin: np.ndarray,
                     centre_arcmin: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """Flux inside circles of the given radii, from one full period of PSF samples.

    The periodic, band-limited intensity is a finite Fourier series whose coefficients are the DFT
    of the samples; the integral of each term over a disk is ``pi r^2 2 J1(2 pi r f) / (2 pi r f)``
    (times the phase of the centre), so the result is exact for radii below half the period.

    Parameters
    ----------
    samples : ndarray, shape (m, m)
        ``p^2 I`` with the angle origin at index ``m // 2``.
    pitch_arcsec : float
        Sample pitch.
    radii_arcmin : array_like
        Radii (arcmin), each below half the period.
    centre_arcmin : (x, y)
        Centre of the circles.

    """
    s = np.asarray(samples, dtype=float)
    m = s.shape[0]
    radii = np.atleast_1d(np.asarray(radii_arcmin, dtype=float)) * 60.0 / pitch_arcsec  # in samples
    if np.any(radii >= m / 2):
        raise ValueError(f"radii must be below half the period ({m / 2 * pitch_arcsec / 60:.3f} arcmin)")
    coeff = np.fft.fft2(np.fft.ifftshift(s))  # c_k, f in cycles per sample
    f = np.fft.fftfreq(m)
    fy, fx = np.meshgrid(f, f, indexing="ij")
    # Beyond the band edge the coefficients are round-off; dropping those below EE_DROP |c_0| changes
    # the result by at most m^2 EE_DROP |c_0| pi/4 (2e-8 of the flux at m = 1536) and saves ~10x.
    keep = np.abs(coeff) > EE_DROP * abs(coeff[0, 0])
    coeff, fx, fy = coeff[keep], fx[keep], fy[keep]
    rho = np.hypot(fx, fy)
    cx, cy = (v * 60.0 / pitch_arcsec for v in centre_arcmin)
    shifted = coeff * np.exp(2j * np.pi * (fx * cx + fy * cy))
    out = np.empty(radii.size)
    for i, r in enumerate(radii):
        arg = 2 * np.pi * r * rho
        with np.errstate(invalid="ignore", divide="ignore"):
            jinc = np.where(arg > 0, 2 * j1(arg) / np.where(arg > 0, arg, 1.0), 1.0)
        out[i] = float(np.sum(shifted * jinc).real) * math.pi * r * r / (m * m)
    return out


def airy_encircled_energy(radius_arcmin: np.ndarray, diameter_mm: float, wavelength_nm: float) -> np.ndarray:
    """Encircled energy of the aberration-free circular pupil, ``1 - J0(v)^2 - J1(v)^2``, ``v = pi D theta / lambda``."""
    theta = np.asarray(radius_arcmin, dtype=float) * math.pi / (180.0 * 60.0)
    v = math.pi * diameter_mm * 1e-3 * theta / (wavelength_nm * 1e-9)
    return 1.0 - j0(v) ** 2 - j1(v) ** 2


def psf_square_integral(samples: np.ndarray, pitch_arcsec: float) -> float:
    """``integral of I^2`` (per square degree) from the samples ``p^2 I``.

    ``I^2`` has twice the band of ``I``, still below one cycle per sample, so the Riemann sum is exact.
    """
    p_deg = pitch_arcsec / 3600.0
    return float(np.sum(np.asarray(samples, dtype=float) ** 2)) / p_deg**2


def analytic_mtf_square_integral(diameter_mm: float, wavelength_nm: float) -> float:
    """``integral of MTF^2 over the frequency plane`` (cycles^2 per square degree) for the circle.

    By Parseval it equals :func:`psf_square_integral` of the aberration-free PSF of unit flux.
    """
    fc = diameter_mm * 1e-3 / (wavelength_nm * 1e-9) * math.pi / 180.0
    val, _ = quad(lambda v: float(analytic_mtf(v)) ** 2 * v, 0.0, 1.0, epsabs=1e-13, epsrel=1e-12)
    return 2 * math.pi * fc * fc * val


def pupil_psf_period(pupil: PupilModel, wavelength_nm: float, pitch_arcsec: float | None = None,
                     period: int = DEFAULT_PERIOD) -> tuple[np.ndarray, float]:
    """Samples of one period and the pitch used (a convenience over :func:`psf_period`)."""
    if pitch_arcsec is None:
        pitch_arcsec = default_pitch_arcsec(pupil.diameter_mm, wavelength_nm)
    return psf_period(pupil, wavelength_nm, pitch_arcsec, period).samples, pitch_arcsec

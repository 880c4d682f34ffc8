"""Optical transfer function of the eye from the engine's PSF, in cycles per degree.

Two routes, both from what the far-field engine produces:

* :func:`psf_period` / :func:`otf_from_samples`: the band-limited point samples of one full FFT
  period (``icl.optics.render.psf_samples`` with ``fft_factor = 1``). Their DFT is the OTF on the
  grid ``k / (m p)`` exactly: the intensity is band-limited below Nyquist, so the Riemann sum of
  ``I exp(-2 pi i f theta)`` over the period is the integral.
* :func:`otf_from_detector`: a rendered detector image. Its pixels hold intensity integrated over
  the pixel, i.e. ``I conv box_p`` sampled at the pitch, so its DFT is ``OTF(f) sinc(f_x p)
  sinc(f_y p)``; the pixel MTF is divided out here. The window truncates the PSF: at every frequency
  the error is at most the flux outside the window (``|sum_outside I e^...| <= sum_outside I``),
  divided by the pixel MTF, which is returned as the error bound.

Frequencies are in cycles per degree of visual angle; the OTF is normalised to 1 at zero frequency
for the MTF (the unnormalised value at 0 is the recorded flux). Arrays follow docs/conventions.md: row = +y
frequency, column = +x frequency, zero frequency at index ``m // 2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icl import libm
from icl._core_loader import core
from icl.optics.model import ARCSEC
from icl.optics.render import PupilModel, psf_samples
from icl.optics.sampling import MAX_BAND, Sampling

DEG = math.pi / 180.0
DEFAULT_PERIOD = 1024  # FFT period in samples: frequency step fc / (band * m), fc / 410 at band 0.4
DEFAULT_BAND = 0.4  # band edge (cycles per sample) at which the default pitch is chosen


def analytic_mtf(v: np.ndarray) -> np.ndarray:
    """Diffraction-limited MTF of an aberration-free uniform circular pupil.

    ``(2/pi) (acos v - v sqrt(1 - v^2))`` for ``v = f / fc`` in [0, 1], 0 beyond; ``fc = D / lambda``.
    """
    v = np.clip(np.abs(np.asarray(v, dtype=float)), 0.0, 1.0)
    return (2.0 / np.pi) * (libm.arccos(v) - v * np.sqrt(1.0 - v * v))


def cutoff_cpd(diameter_mm: float, wavelength_nm: float) -> float:
    """Incoherent cut-off frequency ``D / lambda`` in cycles per degree."""
    return diameter_mm * 1e-3 / (wavelength_nm * 1e-9) * DEG


def default_pitch_arcsec(diameter_mm: float, wavelength_nm: float, band: float = DEFAULT_BAND) -> float:
    """Pitch (arcsec) at which the intensity band edge ``p D / lambda`` equals ``band``."""
    return band * wavelength_nm * 1e-9 / (diameter_mm * 1e-3) / ARCSEC


@dataclass(frozen=True)
class Otf:
    """Two-dimensional OTF on a square frequency grid.

    Attributes
    ----------
    values : ndarray of complex, shape (m, m)
        OTF in units of the source flux (``values[m//2, m//2]`` = flux in the PSF); row = f_y.
    freq_cpd : ndarray, shape (m,)
        Frequency of each row / column (cycles per degree).
    wavelength_nm : float or None
        Wavelength, if monochromatic.
    error_bound : float
        Bound on ``|OTF - exact|`` at every frequency from the window (0 for a full period).

    """

    values: np.ndarray
    freq_cpd: np.ndarray
    wavelength_nm: float | None = None
    error_bound: float = 0.0

    @property
    def dc(self) -> float:
        """OTF at zero frequency: flux carried by the PSF."""
        m = self.values.shape[0]
        return float(self.values[m // 2, m // 2].real)

    @property
    def mtf(self) -> np.ndarray:
        """``|OTF| / OTF(0)``."""
        return np.abs(self.values) / self.dc

    def at(self, fx_cpd: np.ndarray, fy_cpd: np.ndarray) -> np.ndarray:
        """MTF at arbitrary frequencies by bilinear interpolation of the modulus.

        The grid step is ``fc / (band m)``; the circle MTF has bounded curvature away from f = 0, where
        it is linear, so the interpolation error is ``O((step / fc)^2)`` (below 1e-5 by default).
        """
        mtf = self.mtf
        m = mtf.shape[0]
        step = self.freq_cpd[1] - self.freq_cpd[0]
        cx = np.asarray(fx_cpd, dtype=float) / step + m // 2
        cy = np.asarray(fy_cpd, dtype=float) / step + m // 2
        x0 = np.clip(np.floor(cx).astype(int), 0, m - 2)
        y0 = np.clip(np.floor(cy).astype(int), 0, m - 2)
        tx, ty = cx - x0, cy - y0
        out = ((1 - ty) * ((1 - tx) * mtf[y0, x0] + tx * mtf[y0, x0 + 1])
               + ty * ((1 - tx) * mtf[y0 + 1, x0] + tx * mtf[y0 + 1, x0 + 1]))
        outside = (cx < 0) | (cx > m - 1) | (cy < 0) | (cy > m - 1)
        return np.where(outside, np.nan, out)

    def cut(self, freqs_cpd: np.ndarray, direction_deg: float) -> np.ndarray:
        """MTF along the frequency direction ``direction_deg`` (counter-clockwise from +x)."""
        a = math.radians(direction_deg)
        f = np.asarray(freqs_cpd, dtype=float)
        return self.at(f * math.cos(a), f * math.sin(a))

    def radial(self, freqs_cpd: np.ndarray, n_azimuth: int = 360) -> np.ndarray:
        """Azimuthal mean of the MTF at each frequency (``n_azimuth`` equally spaced directions)."""
        az = np.arange(n_azimuth) * (360.0 / n_azimuth)
        return np.mean([self.cut(freqs_cpd, a) for a in az], axis=0)

    def tangential_sagittal(self, freqs_cpd: np.ndarray, field_x: float = 0.0,
                            field_y: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Tangential and sagittal MTF for a field point at (field_x, field_y) (any angular unit).

        Tangential: frequency vector along the field direction (the meridional plane through the
        fixation axis and the field point); sagittal: perpendicular to it. On axis the meridional
        plane is taken as the y-z plane, so tangential is along +y and sagittal along +x.
        """
        az = math.degrees(math.atan2(field_y, field_x)) if (field_x or field_y) else 90.0
        return self.cut(freqs_cpd, az), self.cut(freqs_cpd, az - 90.0)


def psf_period(pupil: PupilModel, wavelength_nm: float, pitch_arcsec: float | None = None,
               period: int = DEFAULT_PERIOD):
    """Band-limited PSF samples over one full FFT period (``period`` x ``period``).

    Parameters
    ----------
    pupil : PupilModel
        Thin :class:`~icl.optics.model.Pupil` or a thick eye's model for one field angle.
    wavelength_nm : float
        Wavelength (nm).
    pitch_arcsec : float, optional
        Sample pitch; by default :func:`default_pitch_arcsec` (band edge 0.4 cycles per sample).
    period : int
        FFT length; must be even and 7-smooth so that the window is exactly one period.

    Returns
    -------
    icl.optics.render.PsfSamples
        ``samples[i, j] = p^2 I`` at angle ``((i - m/2) p, (j - m/2) p)``.

    """
    if period % 2 or int(core.fast_length(period)) != period:
        raise ValueError(f"period {period} must be even with prime factors 2, 3, 5, 7 only")
    if pitch_arcsec is None:
        pitch_arcsec = default_pitch_arcsec(pupil.diameter_mm, wavelength_nm)
    band = pitch_arcsec * ARCSEC * pupil.diameter_mm * 1e-3 / (wavelength_nm * 1e-9)
    if band > MAX_BAND:
        raise ValueError(f"pitch {pitch_arcsec} arcsec under-samples the PSF (band {band:.3f} > {MAX_BAND})")
    return psf_samples(pupil, float(wavelength_nm), float(pitch_arcsec), period, Sampling(fft_factor=1.0))


def _freqs(m: int, pitch_arcsec: float) -> np.ndarray:
    return np.fft.fftshift(np.fft.fftfreq(m, d=pitch_arcsec / 3600.0))


def otf_from_samples(samples: np.ndarray, pitch_arcsec: float, wavelength_nm: float | None = None,
                     total_flux: float | None = None) -> Otf:
    """OTF from one full period of point samples centred at index ``m // 2`` (exact on the grid).

    Parameters
    ----------
    samples : ndarray, shape (m, m)
        ``p^2 I`` over one period (:func:`psf_period`).
    pitch_arcsec : float
        Sample pitch.
    wavelength_nm : float, optional
        Recorded on the result.
    total_flux : float, optional
        Flux of the whole PSF (the transmitted flux, ``1 - blocked_fraction`` for unit flux). The
        sampled pupil's sharp edge diffracts a small flux (the ledger's ``beyond_grid``) beyond the
        period; light spread that wide has a transfer function confined to ``|f| < 1 / period``, so
        it is missing only from the zero-frequency sample, which this value restores.

    """
    s = np.asarray(samples, dtype=float)
    m = s.shape[0]
    values = np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(s)))
    if total_flux is not None:
        values[m // 2, m // 2] = total_flux
    return Otf(values, _freqs(m, pitch_arcsec), wavelength_nm, 0.0)


def pupil_otf(pupil: PupilModel, spectrum: tuple[tuple[float, float], ...] | float,
              pitch_arcsec: float | None = None, period: int = DEFAULT_PERIOD) -> Otf:
    """OTF of ``pupil`` for a spectrum ``((wavelength_nm, weight), ...)`` or a single wavelength.

    Wavelengths are summed incoherently on one grid whose pitch is chosen for the shortest one;
    the result is in units of the (weighted) source flux.
    """
    spec = ((float(spectrum), 1.0),) if isinstance(spectrum, (int, float)) else tuple(spectrum)
    lam_min = min(lam for lam, _ in spec)
    pitch = pitch_arcsec if pitch_arcsec is not None else default_pitch_arcsec(pupil.diameter_mm, lam_min)
    transmitted = 1.0 - pupil.blocked_fraction()
    total = None
    for lam, w in spec:
        ps = psf_period(pupil, lam, pitch, period)
        part = otf_from_samples(ps.samples, pitch, lam, transmitted).values * w
        total = part if total is None else total + part
    return Otf(total, _freqs(period, pitch), spec[0][0] if len(spec) == 1 else None, 0.0)


def pixel_mtf(freq_cpd: np.ndarray, pitch_arcsec: float) -> np.ndarray:
    """Transfer function ``sinc(f p)`` of integration over one pixel of side ``p`` (one axis)."""
    return np.sinc(np.asarray(freq_cpd) * pitch_arcsec / 3600.0)


def otf_from_detector(image: np.ndarray, pitch_arcsec: float, centre_arcmin: tuple[float, float] = (0.0, 0.0),
                      outside_flux: float = 0.0, wavelength_nm: float | None = None) -> Otf:
    """OTF from a rendered (pixel-integrated) detector image, with the pixel MTF divided out.

    Parameters
    ----------
    image : ndarray, shape (n, n)
        Pixel flux on the detector grid of docs/conventions.md (origin between the four central pixels).
    pitch_arcsec : float
        Pixel pitch.
    centre_arcmin : (x, y)
        Phase reference (the source position): the OTF phase is taken about this point.
    outside_flux : float
        Flux of the PSF outside the window (the ledger's ``outside_window``); with the pixel MTF it
        gives :attr:`Otf.error_bound`.

    """
    img = np.asarray(image, dtype=float)
    n = img.shape[0]
    if img.ndim != 2 or img.shape[1] != n:
        raise ValueError(f"expected a square image, got shape {img.shape}")
    f = _freqs(n, pitch_arcsec)
    p_deg = pitch_arcsec / 3600.0
    # Pixel centres sit at (j - (n-1)/2) p: the DFT's phase refers to pixel 0, so move it to the centre.
    x0 = -(n - 1) / 2.0 * p_deg - centre_arcmin[0] / 60.0
    y0 = -(n - 1) / 2.0 * p_deg - centre_arcmin[1] / 60.0
    raw = np.fft.fftshift(np.fft.fft2(img))
    phase = np.exp(-2j * np.pi * (f[:, None] * y0 + f[None, :] * x0))
    pix = pixel_mtf(f, pitch_arcsec)
    values = raw * phase / (pix[:, None] * pix[None, :])
    bound = outside_flux / float(pixel_mtf(f.max(), pitch_arcsec) ** 2)
    return Otf(values, f, wavelength_nm, bound)

"""Imaging metrics against analytic truth: diffraction-limited MTF, Parseval, encircled energy, Strehl."""

import math

import numpy as np
import pytest
from icl.imaging.metrics import (
    airy_encircled_energy,
    analytic_mtf_square_integral,
    encircled_energy,
    psf_square_integral,
    pupil_psf_period,
    strehl,
)
from icl.imaging.mtf import analytic_mtf, cutoff_cpd, otf_from_detector, pupil_otf
from icl.optics import Detector, Pupil, Scene, Source, render

CLEAR = Pupil(diameter_mm=3.2, eye_excess_d=0.0, icl=None)
# Contract tolerance for the diffraction-limited MTF. Measured: 6.4e-4 (pupil-edge discretisation
# at 1024-sample period, 2.9e-4 on grid points, plus bilinear interpolation off the grid).
MTF_TOL = 1e-3


@pytest.mark.parametrize("lam", [450.0, 550.0, 650.0], ids=["450nm", "550nm", "650nm"])
def test_diffraction_limited_mtf_matches_analytic(lam):
    otf = pupil_otf(CLEAR, lam)
    fc = cutoff_cpd(3.2, lam)
    f = np.linspace(0.0, 1.05 * fc, 301)
    expected = analytic_mtf(f / fc)
    for direction in (0.0, 17.0, 45.0, 90.0):
        assert np.nanmax(np.abs(otf.cut(f, direction) - expected)) < MTF_TOL
    np.testing.assert_allclose(otf.radial(f, 36), expected, atol=MTF_TOL)
    t, s = otf.tangential_sagittal(f)
    np.testing.assert_allclose(t, expected, atol=MTF_TOL)
    np.testing.assert_allclose(s, expected, atol=MTF_TOL)
    # Cut-off: nothing passes beyond D / lambda (101.5 cycles/deg at 550 nm).
    assert np.nanmax(otf.cut(np.linspace(1.01 * fc, 1.3 * fc, 20), 0.0)) < 1e-9


def test_cutoff_value():
    assert cutoff_cpd(3.2, 550.0) == pytest.approx(3.2e-3 / 550e-9 * math.pi / 180, rel=1e-14)
    assert cutoff_cpd(3.2, 550.0) == pytest.approx(101.54, abs=0.01)


@pytest.mark.parametrize("lam", [450.0, 650.0])
def test_parseval_psf_against_analytic_mtf(lam):
    samples, pitch = pupil_psf_period(CLEAR, lam)
    # integral of I^2 from the engine's PSF vs integral of the analytic MTF^2. The engine's grid misses
    # the 1.6e-3 of flux the pupil edge sends beyond the period; squared and spread that wide it
    # changes the integral by < 1e-5 relative (measured 7e-6).
    assert psf_square_integral(samples, pitch) == pytest.approx(analytic_mtf_square_integral(3.2, lam), rel=2e-5)


def test_encircled_energy_matches_airy():
    samples, pitch = pupil_psf_period(CLEAR, 550.0)
    radii = np.array([0.1, 0.3, 0.7207, 1.0, 2.0, 5.0])  # 0.7207: first dark ring
    ee = encircled_energy(samples, pitch, radii)
    # Measured deviation <= 4e-5 (the flux beyond the period, 1.6e-3, lies far outside 5 arcmin).
    np.testing.assert_allclose(ee, airy_encircled_energy(radii, 3.2, 550.0), atol=1e-4)
    assert airy_encircled_energy(np.array([0.7207]), 3.2, 550.0)[0] == pytest.approx(0.838, abs=1e-3)


def test_encircled_energy_follows_the_centre():
    # A pure prism (ICL decentred, no hole) moves the PSF by -5.5004 arcmin per 0.2 mm at -8 D.
    decentred = Pupil(3.2, 8.0)
    from icl.optics.model import ICL

    decentred = Pupil(3.2, 8.0, ICL(decentre_mm=(0.2, 0.0)))
    samples, pitch = pupil_psf_period(decentred, 550.0, period=2048)
    at_shift = encircled_energy(samples, pitch, [1.0], centre_arcmin=(-5.5004, 0.0))[0]
    assert at_shift == pytest.approx(airy_encircled_energy(np.array([1.0]), 3.2, 550.0)[0], abs=2e-4)
    assert encircled_energy(samples, pitch, [1.0])[0] < 0.01


@pytest.mark.parametrize("excess_d", [0.05, 0.1, 0.15])
def test_strehl_psf_equals_wavefront(excess_d):
    st = strehl(Pupil(3.2, excess_d, None), 550.0)
    a = excess_d * (1.6e-3) ** 2 / 2 / 550e-9  # peak-to-valley defocus, waves
    exact = np.sinc(a) ** 2
    # PSF route and pupil route are the same quantity computed two ways (FFT vs sum): rounding.
    assert st.from_psf == pytest.approx(st.from_pupil, rel=1e-10)
    assert st.peak_from_psf == pytest.approx(st.from_psf, rel=1e-12)  # defocus keeps the peak at 0
    # Against the exact defocus Strehl: pupil-edge discretisation (measured 1e-5 at 0.1 D).
    assert st.from_psf == pytest.approx(exact, abs=5e-5)
    assert st.rms_waves == pytest.approx(a / math.sqrt(12.0), rel=2e-3)
    # Marechal within its stated error.
    assert abs(st.from_psf - st.marechal) <= st.marechal_error
    assert st.phase_span_waves < 0.5


def test_strehl_of_clear_pupil_is_one():
    st = strehl(CLEAR, 450.0)
    assert st.from_psf == pytest.approx(1.0, abs=1e-12)
    assert st.rms_waves < 1e-12


def test_detector_otf_divides_pixel_mtf():
    pitch = 12.0  # coarse pixels (band edge 0.34 cycles/pixel) make the pixel MTF matter
    res = render(Scene((Source("p", 0.37, -0.21),), CLEAR, Detector(512, pitch)))
    led = res.ledgers[0]
    otf = otf_from_detector(res.scene, pitch, (0.37, -0.21), outside_flux=led["outside_window"] + led["beyond_grid"])
    fc = cutoff_cpd(3.2, 550.0)
    m = otf.values.shape[0]
    got = otf.values[m // 2, m // 2:]
    freq = otf.freq_cpd[m // 2:]
    # The un-normalised OTF against the analytic one (unit flux): within the window-truncation bound
    # (flux outside the 51-arcmin half-width window, 2.4e-3, over the pixel MTF at Nyquist).
    assert np.max(np.abs(np.abs(got) - analytic_mtf(freq / fc))) <= otf.error_bound
    assert otf.error_bound < 0.01
    # Without the pixel-MTF division the error would be several times the bound.
    pix = np.sinc(freq * pitch / 3600.0)
    assert np.max(np.abs(np.abs(got) * pix ** 2 - analytic_mtf(freq / fc))) > 3 * otf.error_bound
    # The phase reference is the source: the OTF of a point-symmetric PSF about it is real.
    assert np.max(np.abs(got.imag)) < otf.error_bound

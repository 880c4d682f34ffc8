"""Measured FFTW plans: wisdom saved in the user cache, same results as estimated plans to rounding."""

import atexit

import numpy as np
from icl import _core, fftw
from icl.optics import Detector, Pupil, Sampling, Scene, Source, render
from icl.optics.render import psf_samples


def test_measured_plans_store_wisdom_and_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scene = Scene((Source(x_arcmin=0.3),), Pupil(), Detector(n=96))
    double = Sampling(single_precision_fft=False)
    psf_samples.cache_clear()
    estimated = [render(scene).scene, render(scene, double).scene]
    try:
        assert fftw.use_measured_plans() is False  # nothing cached yet
        psf_samples.cache_clear()
        measured = [render(scene).scene, render(scene, double).scene]
        fftw._save_wisdom()
    finally:
        fftw.use_measured_plans(False)
        atexit.unregister(fftw._save_wisdom)  # keep the exit hook off the real cache
        psf_samples.cache_clear()
    assert fftw.wisdom_path().is_relative_to(tmp_path)
    text = fftw.wisdom_path().read_text()
    # One block per planner (double and single precision); both read back.
    assert "fftw_wisdom" in text and "fftwf_wisdom" in text
    assert _core.import_wisdom(text)
    # Different plans, same transform: rounding-level differences only (single precision: its own rounding).
    np.testing.assert_allclose(measured[0], estimated[0], rtol=0, atol=1e-6 * estimated[0].max())
    np.testing.assert_allclose(measured[1], estimated[1], rtol=0, atol=1e-13 * estimated[1].max())

"""Measured FFTW plans: wisdom saved in the user cache, same results as estimated plans to rounding."""

import atexit

import numpy as np
from icl import fftw
from icl.optics import Detector, Pupil, Scene, Source, render
from icl.optics.render import psf_samples


def test_measured_plans_store_wisdom_and_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scene = Scene((Source(x_arcmin=0.3),), Pupil(), Detector(n=96))
    psf_samples.cache_clear()
    estimated = render(scene).scene
    try:
        assert fftw.use_measured_plans() is False  # nothing cached yet
        psf_samples.cache_clear()
        measured = render(scene).scene
        fftw._save_wisdom()
    finally:
        fftw.use_measured_plans(False)
        atexit.unregister(fftw._save_wisdom)  # keep the exit hook off the real cache
        psf_samples.cache_clear()
    assert fftw.wisdom_path().is_relative_to(tmp_path)
    assert "fftw" in fftw.wisdom_path().read_text()
    # Different plans, same transform: rounding-level differences only.
    np.testing.assert_allclose(measured, estimated, rtol=0, atol=1e-13 * estimated.max())

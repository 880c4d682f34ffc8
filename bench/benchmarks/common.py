"""Shared set-up of the asv suites: the reference problem and single-threaded kernels."""

from __future__ import annotations

import math

WAVELENGTH_NM = 550.0
PITCH_ARCSEC = 4.0


def single_thread() -> None:
    """Pin icl's kernels to one thread so that timings compare across machines and commits."""
    from icl import _core

    _core.set_num_threads(1)


def airy_scene(n: int, extent=None):
    """3.2 mm aberration-free pupil at 550 nm on an n x n detector at 4 arcsec (one source at 0, 0)."""
    from icl.optics import Detector, Pupil, Scene, Source

    src = Source() if extent is None else Source(extent=extent)
    return Scene((src,), Pupil(eye_excess_d=0.0, icl=None), Detector(n=n, pitch_arcsec=PITCH_ARCSEC))


def clear_caches() -> None:
    """Forget cached far fields so that every timed render computes its PSF."""
    from icl.optics.render import psf_samples

    psf_samples.cache_clear()


def pupil_area_m2(diameter_mm: float = 3.2) -> float:
    """Area of the clear pupil (m^2)."""
    return math.pi * (diameter_mm * 1e-3) ** 2 / 4.0

"""Ray tracing: the Navarro 1985 eye at 550 nm, 1e4 to 1e7 rays, apertures, optical path and Fresnel on.

The same problem as bench/raytrace_peers.py (which adds optiland beside it), single-threaded.
"""

from __future__ import annotations

import numpy as np

from .common import WAVELENGTH_NM, single_thread


class Trace:
    """``icl.eye.trace`` through every surface of the eye in one call."""

    params = [10_000, 100_000, 1_000_000, 10_000_000]
    param_names = ["rays"]
    timeout = 300

    def setup(self, n):
        try:
            from icl.eye import navarro_1985, paraxial, trace
            from icl.eye.wavefront import pupil_rays
        except ImportError as exc:  # a version of icl without the thick eye
            raise NotImplementedError from exc
        single_thread()
        eye = navarro_1985()
        par = paraxial(eye, None, WAVELENGTH_NM)
        rng = np.random.default_rng(1)
        r = np.sqrt(rng.uniform(0, 1, n)) * 1.6
        phi = rng.uniform(0, 2 * np.pi, n)
        self.rays = pupil_rays(r * np.cos(phi), r * np.sin(phi), (0.0, 0.0), par.entrance_pupil_z)
        self.steps = [s.to_core() for s in eye.steps(WAVELENGTH_NM)]
        for st in self.steps:
            st.r_outer = 5.0  # clear apertures on
        self.trace = trace

    def time_trace(self, n):
        self.trace(self.steps, self.rays)

    def peakmem_trace(self, n):
        self.trace(self.steps, self.rays)

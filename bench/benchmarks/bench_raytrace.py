"""Ray tracing: the Navarro 1985 eye at 550 nm, 1e4 to 1e7 rays, apertures, optical path and Fresnel on.

The same problem as bench/raytrace_peers.py (which adds optiland beside it), single-threaded; also in place
(no output arrays) and on to the curved retina of the Escudero-Sanz & Navarro 1999 eye.
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


class TraceInPlace(Trace):
    """The same trace overwriting its rays (``in_place=True``): no output arrays to allocate and touch.

    Each sample is one call on a fresh copy made in ``setup`` (asv runs ``setup`` before every sample).
    """

    number = 1
    warmup_time = 0.0
    repeat = (5, 20, 30.0)

    def setup(self, n):
        import inspect

        super().setup(n)
        if "in_place" not in inspect.signature(self.trace).parameters:
            raise NotImplementedError("icl.eye.trace has no in_place argument in this version of icl")
        self.batch = self.rays.copy()

    def time_trace(self, n):
        self.trace(self.steps, self.batch, in_place=True)

    def peakmem_trace(self, n):
        self.trace(self.steps, self.batch, in_place=True)


class TraceToCurvedRetina:
    """The Escudero-Sanz & Navarro 1999 eye: every surface and the spherical retina (R = -12 mm)."""

    params = [100_000, 1_000_000]
    param_names = ["rays"]
    timeout = 300

    def setup(self, n):
        try:
            from icl.eye import escudero_sanz_1999, paraxial, trace
            from icl.eye.wavefront import pupil_rays
        except ImportError as exc:  # a version of icl without the curved retina
            raise NotImplementedError from exc
        single_thread()
        eye = escudero_sanz_1999()
        par = paraxial(eye, None, WAVELENGTH_NM)
        rng = np.random.default_rng(2)
        r = np.sqrt(rng.uniform(0, 1, n)) * 1.6
        phi = rng.uniform(0, 2 * np.pi, n)
        self.rays = pupil_rays(r * np.cos(phi), r * np.sin(phi), (0.0, 0.0), par.entrance_pupil_z)
        steps = [*eye.steps(WAVELENGTH_NM), eye.retina_step(WAVELENGTH_NM)]
        self.steps = [s.to_core() for s in steps]
        self.trace = trace

    def time_trace(self, n):
        self.trace(self.steps, self.rays)


class TraceImplant:
    """Navarro eye with a decentred, tilted and rotated synthetic ICL (-6 D, 0.36 mm hole), in place.

    Each path exercises other passes of the kernel: ``lens`` the rotated distance, normal and commit passes
    and the hole wall (outside), ``hole`` the wall (inside) and the clear aperture, ``ghost_icl`` two mirrors.
    Rays fill a 3.2 mm pupil uniformly; many stop at the apertures, which costs the kernel as much as the rays
    that pass.
    """

    params = ([100_000, 1_000_000], ["lens", "hole", "ghost_icl"])
    param_names = ["rays", "path"]
    number = 1
    warmup_time = 0.0
    repeat = (5, 20, 30.0)
    timeout = 300

    def setup(self, n, path):
        try:
            from icl.eye import navarro_1985, paraxial, trace
            from icl.eye.model import path_steps, synthetic_icl
            from icl.eye.wavefront import pupil_rays
        except ImportError as exc:  # a version of icl without the thick implant
            raise NotImplementedError from exc
        import inspect

        if "in_place" not in inspect.signature(trace).parameters:
            raise NotImplementedError("icl.eye.trace has no in_place argument in this version of icl")
        single_thread()
        eye = navarro_1985()
        implant = synthetic_icl(-6.0, decentre_mm=(0.2, -0.1), tilt_deg=(2.0, -1.0), rotation_deg=15.0)
        par = paraxial(eye, None, WAVELENGTH_NM)
        rng = np.random.default_rng(3)
        r = np.sqrt(rng.uniform(0, 1, n)) * 1.6
        phi = rng.uniform(0, 2 * np.pi, n)
        self.steps = [s.to_core() for s in path_steps(eye, implant, path, WAVELENGTH_NM)]
        self.batch = pupil_rays(r * np.cos(phi), r * np.sin(phi), (0.0, 0.0), par.entrance_pupil_z)
        self.trace = trace

    def time_trace(self, n, path):
        self.trace(self.steps, self.batch, in_place=True)

    def peakmem_trace(self, n, path):
        self.trace(self.steps, self.batch, in_place=True)

"""Thin-phase optics: pupil construction, far-field FFT, full render, pixel placement, disk convolution.

All on the reference problem of bench/peers.py (3.2 mm, 550 nm, 4 arcsec pixels), single-threaded.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .common import PITCH_ARCSEC, WAVELENGTH_NM, airy_scene, clear_caches, pupil_area_m2, single_thread


def _grid(support: int):
    """icl's FFT and pupil grid for a PSF support window of ``support`` samples."""
    from icl.optics.model import ARCSEC
    from icl.optics.sampling import Sampling, make_grid

    return make_grid(WAVELENGTH_NM * 1e-9, PITCH_ARCSEC * ARCSEC, 3.2e-3, support, Sampling())


class Pupil:
    """``build_pupil``: complex thin-phase pupil with exact edge coverage, ICL with a 0.36 mm hole."""

    params = [256, 512, 1024, 2048]
    param_names = ["samples"]

    def setup(self, n):
        from icl import _core
        from icl.optics import ICL
        from icl.optics import Pupil as ThinPupil
        from icl.optics.thin import pupil_params

        single_thread()
        self.build = _core.build_pupil
        self.params_ = pupil_params(ThinPupil(icl=ICL(hole_mm=0.36, cylinder_d=1.0, decentre_mm=(0.2, 0.0))))
        self.du = 3.4e-3 / n  # the 3.2 mm pupil plus guard cells spans the grid

    def time_build_pupil(self, n):
        self.build(self.params_, n, self.du, WAVELENGTH_NM * 1e-9)

    def peakmem_build_pupil(self, n):
        self.build(self.params_, n, self.du, WAVELENGTH_NM * 1e-9)


class PsfWindow:
    """``psf_window``: pruned 2-D FFT of the pupil, |.|^2 on the centred support window.

    The FFT length and pupil samples are the renderer's own for each support (``fft_factor`` 4).
    """

    params = [256, 1024, 2048, 4096]
    param_names = ["support"]
    timeout = 300

    def setup(self, support):
        from icl import _core
        from icl.optics import Pupil as ThinPupil
        from icl.optics.thin import pupil_field

        single_thread()
        g = _grid(support)
        self.m, self.s = g.m, support
        self.pupil = np.ascontiguousarray(pupil_field(ThinPupil(eye_excess_d=0.0, icl=None), g.n, g.du,
                                                      WAVELENGTH_NM * 1e-9), dtype=complex)
        self.scale = g.du**2 / (g.m**2 * pupil_area_m2())
        self.psf_window = _core.psf_window
        self.psf_window(self.pupil, self.m, self.s, self.scale)  # FFTW planning stays out of the timing

    def time_psf_window(self, support):
        self.psf_window(self.pupil, self.m, self.s, self.scale)

    def peakmem_psf_window(self, support):
        self.psf_window(self.pupil, self.m, self.s, self.scale)


class Render:
    """``render``: the whole pipeline for one point source (pupil, FFT, pixel integration, ledger)."""

    params = [512, 1024]
    param_names = ["detector"]
    timeout = 180

    def setup(self, n):
        from icl.optics import render

        single_thread()
        self.render = render
        self.scene = airy_scene(n)
        clear_caches()
        self.render(self.scene)  # FFTW planning and tap design are cached from here on

    def time_render(self, n):
        clear_caches()
        self.render(self.scene)

    def peakmem_render(self, n):
        clear_caches()
        self.render(self.scene)


class RenderFast:
    """``render`` at the coarser preset ``Sampling.fast()`` (its target: a relative L1 of 1e-3).

    Skipped (``NotImplementedError``) for versions of icl without the preset.
    """

    params = [512, 1024]
    param_names = ["detector"]
    timeout = 180

    def setup(self, n):
        from icl.optics import Sampling, render

        if not hasattr(Sampling, "fast"):
            raise NotImplementedError("Sampling.fast() is not in this version")
        single_thread()
        self.render = render
        self.scene = airy_scene(n)
        self.sampling = Sampling.fast()
        clear_caches()
        self.render(self.scene, self.sampling)

    def time_render_fast(self, n):
        clear_caches()
        self.render(self.scene, self.sampling)

    def peakmem_render_fast(self, n):
        clear_caches()
        self.render(self.scene, self.sampling)


class FieldEnergy:
    """``field_energy``: the far-field pupil's Parseval total (sum of |p|^2 in C++), 284 to 1136 samples."""

    params = [284, 568, 1136]
    param_names = ["samples"]

    def setup(self, n):
        from icl import _core

        if not hasattr(_core, "field_energy"):
            raise NotImplementedError("_core.field_energy is not in this version")
        rng = np.random.default_rng(0)
        self.p = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
        self.field_energy = _core.field_energy

    def time_field_energy(self, n):
        self.field_energy(self.p)


class Placement:
    """Exact pixel integration of a point source from its far-field samples.

    ``place`` is the renderer's routine (polyphase separable taps when the far field is sampled every
    q pixels); ``place_separable`` is its kernel alone for one phase.
    """

    params = [512, 1024, 2048]
    param_names = ["detector"]

    def setup(self, n):
        from icl import _core
        from icl.optics import Source
        from icl.optics.render import place, psf_samples, sample_step, support_samples
        from icl.optics.sampling import Sampling, pixel_taps

        single_thread()
        scene = airy_scene(n)
        sampling = Sampling()
        q = sample_step(scene)
        support = support_samples(scene, sampling, q)
        ps = psf_samples(scene.pupil, WAVELENGTH_NM, q * PITCH_ARCSEC, support, sampling)
        samples = np.asarray(ps.samples, dtype=float)
        # A source a third of a pixel off the grid in x and a quarter in y: generic sub-pixel phases.
        step = PITCH_ARCSEC / 60.0
        src = Source(x_arcmin=step / 3.0, y_arcmin=step / 4.0)
        self.place = lambda: place(samples, src, scene, ps.grid.band, sampling, q)
        self.place()  # tap design is cached from here on
        out, sums = np.empty((n, n)), np.empty(n)
        try:
            place(samples, src, scene, ps.grid.band, sampling, q, out=out, row_sums=sums)
            self.place_fused = lambda: place(samples, src, scene, ps.grid.band, sampling, q, out=out,
                                             row_sums=sums)
        except TypeError:
            self.place_fused = None
        if "single_precision_placement" in {f.name for f in dataclasses.fields(Sampling)}:
            single = dataclasses.replace(sampling, single_precision_placement=True)
            self.place_single = lambda: place(samples, src, scene, ps.grid.band, single, q)
            self.place_single()
        else:
            self.place_single = None
        tx = pixel_taps(1.0 / 3.0, ps.grid.band, sampling.tap_tolerance, q)
        ty = pixel_taps(0.25, ps.grid.band, sampling.tap_tolerance, q)
        k = (tx.size - 1) // 2
        start = -(n // (2 * q)) - k + support // 2
        self.kernel_args = (samples, ty, tx, start, start, n // q, n // q)
        self.place_separable = _core.place_separable

    def time_place(self, n):
        self.place()

    def peakmem_place(self, n):
        self.place()

    def time_place_separable(self, n):
        self.place_separable(*self.kernel_args)

    def time_place_single_precision(self, n):
        # The same placement, samples, taps and filter sums in float (Sampling.single_precision_placement).
        if self.place_single is None:
            raise NotImplementedError("place_polyphase has no single-precision path in this version")
        self.place_single()

    def time_place_with_row_sums(self, n):
        # What render() asks of the kernel: the image written into the component, and its row sums.
        if self.place_fused is None:
            raise NotImplementedError("place_polyphase has no row_sums output in this version")
        self.place_fused()


class DiskConvolution:
    """``convolve_linear``: zero-padded linear convolution of the PSF samples with a disk source kernel."""

    params = [[512, 1024], [1.0, 4.0, 16.0]]
    param_names = ["detector", "disk_arcmin"]
    timeout = 180

    def setup(self, n, diameter):
        from icl import _core
        from icl.optics.model import Extent
        from icl.optics.render import psf_samples, support_samples
        from icl.optics.sampling import Sampling, disk_kernel

        single_thread()
        scene = airy_scene(n, Extent(kind="disk", diameter_arcmin=diameter))
        sampling = Sampling()
        support = support_samples(scene, sampling)
        ps = psf_samples(scene.pupil, WAVELENGTH_NM, PITCH_ARCSEC, support, sampling)
        self.samples = np.asarray(ps.samples, dtype=float)
        step = PITCH_ARCSEC / 60.0
        kern, k2 = disk_kernel(0.25, 1.0 / 3.0, diameter / step, ps.grid.band, sampling.tap_tolerance)
        start = -n // 2 + k2 + support // 2
        self.args = (self.samples, kern, start, start, n, n)
        self.convolve = _core.convolve_linear
        self.convolve(*self.args)

    def time_convolve_linear(self, n, diameter):
        self.convolve(*self.args)

    def peakmem_convolve_linear(self, n, diameter):
        self.convolve(*self.args)


class EdgeFilter:
    """Aperture coverages on 4x finer cells filtered onto the grid (the far-field wings' pupil).

    ``disk_coverage_filtered`` alone for the 3.2 mm pupil, and ``build_pupil`` with the edge taps (ICL with a
    0.36 mm hole, cylinder and decentre: three filtered disks), on the renderer's pupil grid for each support.
    """

    params = [256, 1024, 2048]
    param_names = ["support"]

    def setup(self, support):
        from icl import _core
        from icl.optics import ICL
        from icl.optics import Pupil as ThinPupil
        from icl.optics.thin import pupil_params

        try:
            from icl.optics.sampling import edge_filter
        except ImportError as exc:  # a version of icl without the filtered coverages
            raise NotImplementedError from exc
        single_thread()
        g = _grid(support)
        edge = edge_filter()
        self.coverage = _core.disk_coverage_filtered
        self.args = (0.0, 0.0, 1.6e-3, g.n, g.du, list(edge.taps), edge.sub)
        self.params_ = pupil_params(ThinPupil(icl=ICL(hole_mm=0.36, cylinder_d=1.0, decentre_mm=(0.2, 0.0))))
        self.params_.edge_taps, self.params_.edge_sub = list(edge.taps), edge.sub
        self.pupil_args = (g.n, g.du, WAVELENGTH_NM * 1e-9)
        self.build = _core.build_pupil

    def time_disk_coverage_filtered(self, support):
        self.coverage(*self.args)

    def time_build_pupil_filtered(self, support):
        self.build(self.params_, *self.pupil_args)

    def peakmem_build_pupil_filtered(self, support):
        self.build(self.params_, *self.pupil_args)


class MatrixFourier:
    """The second solver (``icl.optics.mft.render_mft``) on every 4th row and column of the reference
    problem."""

    params = [256, 512]
    param_names = ["detector"]
    timeout = 300

    def setup(self, n):
        try:
            from icl.optics.mft import render_mft
        except ImportError as exc:  # a version of icl without the second solver
            raise NotImplementedError from exc
        single_thread()
        self.render_mft = render_mft
        self.scene = airy_scene(n)
        self.idx = np.arange(2, n, 4)

    def time_render_mft(self, n):
        self.render_mft(self.scene, self.idx, self.idx)

    def peakmem_render_mft(self, n):
        self.render_mft(self.scene, self.idx, self.idx)


class CrossCheck:
    """``icl.crosscheck.crosscheck``: a render of an ICL pupil with a 0.36 mm hole checked by the second
    solver on its default pixel subsample (64 rows and columns)."""

    params = [256, 512]
    param_names = ["detector"]
    timeout = 300

    def setup(self, n):
        try:
            from icl.crosscheck import crosscheck
        except ImportError as exc:  # a version of icl without the cross-check
            raise NotImplementedError from exc
        from icl.optics import ICL, Detector, Pupil, Scene, Source, render

        single_thread()
        self.crosscheck = crosscheck
        self.scene = Scene((Source(x_arcmin=2.0),), Pupil(icl=ICL(hole_mm=0.36)),
                           Detector(n=n, pitch_arcsec=PITCH_ARCSEC))
        self.components = render(self.scene).components

    def time_crosscheck(self, n):
        self.crosscheck(self.scene, self.components, {"full_l1": 0.03, "energy": 0.03})

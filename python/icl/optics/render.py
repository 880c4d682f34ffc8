"""Render a scene through the thin-phase eye: per-source pixel-integrated components and a ledger."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

import numpy as np

from icl import fftw  # noqa: F401  (honours ICL_FFTW_MEASURE)
from icl._core_loader import core
from icl.errors import InputError
from icl.optics.model import ARCSEC, MAX_RENDER_BYTES, Detector, Pupil, Scene, Source, render_memory_estimate
from icl.optics.sampling import (
    COARSE_BAND,
    EDGE_BAND,
    MAX_BAND,
    Grid,
    Sampling,
    design_band,
    disk_kernel,
    edge_filter,
    make_grid,
    pixel_taps,
    tap_halfwidth,
)
from icl.optics.thin import pupil_field


class PupilModel(Protocol):
    """What the far-field engine needs from an eye model (thin :class:`Pupil` or a thick eye).

    Implementations must be hashable (results are cached per model and wavelength).
    """

    @property
    def diameter_mm(self) -> float:
        """Diameter of the circle (centred on the grid origin) outside which the field is zero."""

    def field(self, n: int, du: float, wavelength: float) -> np.ndarray:
        """Complex pupil on an n x n grid of pitch ``du`` (m), centred on the origin (row = v, column = u).

        A clear pupil has unit amplitude.
        """

    def blocked_fraction(self) -> float:
        """Exact fraction of the clear pupil's area that is opaque."""


@dataclass(frozen=True)
class PointReflected:
    """The pupil function ``P(-u, -v)`` of a pupil model: its far field is the point reflection of the model's.

    The engine's grid is symmetric about the origin (nodes at ``(j - (n - 1) / 2) du``), so reversing both
    axes of the model's samples is the reflection, exactly. What the model blocks does not change.
    """

    pupil: PupilModel

    @property
    def diameter_mm(self) -> float:
        """The reflected model's diameter."""
        return self.pupil.diameter_mm

    @property
    def takes_edge_filter(self) -> bool:
        """Whether the reflected model takes the engine's edge filter."""
        return bool(getattr(self.pupil, "takes_edge_filter", False))

    def field(self, n: int, du: float, wavelength: float, *edge) -> np.ndarray:
        """The model's field with both axes reversed (``edge``: the edge filter, passed on)."""
        return np.ascontiguousarray(self.pupil.field(n, du, wavelength, *edge)[::-1, ::-1])

    def blocked_fraction(self) -> float:
        """The model's opaque fraction."""
        return self.pupil.blocked_fraction()


def propagated_pupil(scene: Scene) -> PupilModel:
    """The pupil whose far field, placed at each source, draws ``scene`` in its frame.

    The engine maps a pupil tilt ``W = a . u`` to the angle ``+a`` from the source: the direction into which
    the light is deviated. That is the ``halo`` frame. Seen by the observer, light deviated toward +x lands on
    the retina beside the spot of a source at +x, and the inverted retinal image is seen toward -x: the
    ``visual`` frame is the point reflection of every pattern about its source, i.e. the far field of
    ``P(-u, -v)``. A thin :class:`Pupil` is reflected by negating its implant's decentre (the defocus and the
    cylinder are even); any other model through :class:`PointReflected`.
    """
    pupil = scene.pupil
    if scene.frame == "halo":
        return pupil
    if isinstance(pupil, Pupil):
        if pupil.icl is None or pupil.icl.decentre_mm == (0.0, 0.0):
            return pupil
        u, v = pupil.icl.decentre_mm
        return replace(pupil, icl=replace(pupil.icl, decentre_mm=(-u, -v)))
    if isinstance(pupil, PointReflected):
        return pupil.pupil
    return PointReflected(pupil)


@dataclass(frozen=True)
class PsfSamples:
    """Far-field intensity of one pupil at one wavelength, sampled at the detector pitch.

    ``samples[i, j]`` is ``pitch^2 * I(theta)`` at angular indices ``(i - s/2, j - s/2)`` (row = +y),
    in units of the source flux, so that summing over the whole period gives ``grid_energy``.
    """

    samples: np.ndarray
    grid: Grid
    grid_energy: float


@lru_cache(maxsize=16)
def psf_samples(
    pupil: PupilModel, wavelength_nm: float, pitch_arcsec: float, support: int, sampling: Sampling
) -> PsfSamples:
    """Compute (and cache) the sampled far-field intensity of ``pupil`` at one wavelength."""
    lam = wavelength_nm * 1e-9
    pitch = pitch_arcsec * ARCSEC
    d = pupil.diameter_mm * 1e-3
    grid = make_grid(lam, pitch, d, support, sampling)
    p = np.ascontiguousarray(far_field_pupil(pupil, grid, lam, support), dtype=complex)
    if p.shape != (grid.n, grid.n):
        raise ValueError(f"pupil field has shape {p.shape}, expected {(grid.n, grid.n)}")
    area = math.pi * d * d / 4.0
    scale = grid.du**2 / (grid.m**2 * area)
    # Single precision for an image window (its rounding, 1e-7 of the peak, lies far below the image's other
    # errors); a full period (MTF, Parseval) stays in double: its uses need the whole dynamic range.
    single = sampling.single_precision_fft and support <= 2.0 * EDGE_BAND * grid.m
    samples = core.psf_window(p, grid.m, support, scale, single)
    samples.setflags(write=False)
    energy = core.field_energy(p) * grid.du**2 / area
    return PsfSamples(samples, grid, energy)


def far_field_pupil(pupil: PupilModel, grid: Grid, wavelength: float, support: int) -> np.ndarray:
    """Pupil samples whose discrete far field is the continuous one on the support window.

    The aperture coverages of the thin pupil, and of a pupil model that declares ``takes_edge_filter``
    (the thick eye's :class:`icl.eye.pupil.ThickPupil`), go through
    :func:`icl.optics.sampling.edge_filter` (the cells' area average undone, aliases of the neighbouring
    periods removed) when the window of ``support`` samples lies inside the filter's band. A window wider
    than that (a full period for the MTF) and other pupil models get the plain field, whose far field
    keeps the cells' ``sinc(f)`` per axis (f = angle / FFT period) and the autocorrelation support of the
    pupil itself.
    """
    if support <= 2.0 * EDGE_BAND * grid.m:
        if isinstance(pupil, Pupil):
            return pupil_field(pupil, grid.n, grid.du, wavelength, edge_filter())
        if getattr(pupil, "takes_edge_filter", False):
            return pupil.field(grid.n, grid.du, wavelength, edge_filter())
    return pupil.field(grid.n, grid.du, wavelength)


def _band_estimate(scene: Scene) -> float:
    """Upper estimate of the intensity band edge in cycles per pixel.

    That is pitch * D / lambda_min, plus the pupil grid's guard cells.
    """
    lam = min(lam for s in scene.sources for lam, _ in s.spectrum) * 1e-9
    return scene.detector.pitch_arcsec * ARCSEC * scene.pupil.diameter_mm * 1e-3 / lam + 0.01


def sample_step(scene: Scene) -> int:
    """Pixels between far-field samples for point sources.

    The intensity is band-limited far below the pixel Nyquist limit (about 0.11 cycles per pixel for
    3.2 mm at 550 nm and 4 arcsec), so sampling it every q pixels loses nothing while q times the band
    stays below ``COARSE_BAND``; the placement filter then integrates each pixel from the coarse
    samples. This divides the FFT work by about q^2.
    """
    return max(1, int(COARSE_BAND // _band_estimate(scene)))


def support_samples(scene: Scene, sampling: Sampling, q: int = 1) -> int:
    """Side of the (even) PSF support window in samples q pixels apart (the radius of docs/conventions.md, "Scenes")."""
    det = scene.detector
    if sampling.support_arcmin is not None:
        radius = sampling.support_arcmin
    else:
        offset = max(max(abs(s.x_arcmin), abs(s.y_arcmin)) for s in scene.sources)
        radius = det.half_width_arcmin + offset + max(s.extent.radius_arcmin for s in scene.sources)
    # The pixel-integration taps read up to their half-width beyond the farthest detector pixel.
    margin = _filter_halfwidth(scene, q * _band_estimate(scene), sampling, q) + 1
    return 2 * (int(math.ceil(radius * 60.0 / (q * det.pitch_arcsec))) + margin)


def _filter_halfwidth(scene: Scene, band: float, sampling: Sampling, q: int) -> int:
    """Half-width of the pixel-integration filter for ``band``, or a clear error naming the detector pitch.

    Past about 0.41 cycles per sample no filter of at most 64 taps a side reaches the default 1e-10.
    """
    try:
        if band > MAX_BAND:
            raise ValueError(f"above {MAX_BAND:.4f}")
        return tap_halfwidth(design_band(band), sampling.tap_tolerance, q)
    except ValueError as exc:
        lam = min(lam for s in scene.sources for lam, _ in s.spectrum)
        raise InputError(
            f"{scene.detector.pitch_arcsec} arcsec under-samples the far field of a {scene.pupil.diameter_mm} mm "
            f"pupil at {lam} nm (band {band:.3f} cycles per sample: {exc}); use a finer pitch",
            field="detector.pitch_arcsec",
        ) from None


@dataclass
class RenderResult:
    """Output of :func:`render`.

    Attributes
    ----------
    components : ndarray, shape (n_sources, n, n)
        Pixel flux of each source (linear, units of the source flux; row = +y, column = +x). Read-only.
    scene : ndarray, shape (n, n)
        Sum of the components; for one source, ``components[0]`` itself. Read-only: copy it to change it.
    x_arcmin, y_arcmin : ndarray
        Pixel-centre coordinates.
    angular_pixel_arcsec : float
        Pixel pitch.
    ledgers : list of dict
        Energy ledger of each source (see :func:`energy_ledger`).
    sampling : dict
        Numerical parameters actually used.
    frame : str
        How the images are drawn (the scene's frame, :data:`icl.optics.model.FRAMES`).

    """

    components: np.ndarray
    scene: np.ndarray
    x_arcmin: np.ndarray
    y_arcmin: np.ndarray
    angular_pixel_arcsec: float
    ledgers: list[dict] = field(default_factory=list)
    sampling: dict = field(default_factory=dict)
    frame: str = "visual"

    @property
    def ledger(self) -> dict:
        """Ledger of the whole scene (sum over sources)."""
        keys = self.ledgers[0].keys() if self.ledgers else ()
        return {k: float(sum(led[k] for led in self.ledgers)) for k in keys}


def pixel_offsets(source: Source, detector: Detector) -> tuple[float, float]:
    """Position of pixel (0, 0) relative to the source, in pixels: ``(base_y, base_x)``.

    Pixel (i, j) lies at ``(i + base_y, j + base_x)`` pixels from the source.
    """
    step = detector.pitch_arcsec / 60.0
    half = (detector.n - 1) / 2.0
    return -half - source.y_arcmin / step, -half - source.x_arcmin / step


def place(
    samples: np.ndarray,
    source: Source,
    scene: Scene,
    band: float,
    sampling: Sampling,
    q: int = 1,
    *,
    scale: float = 1.0,
    out: np.ndarray | None = None,
    row_sums: np.ndarray | None = None,
) -> np.ndarray:
    """Integrate the band-limited intensity over each detector pixel at the source's exact position.

    ``samples`` are taken every ``q`` pixels (``q`` > 1 only for point sources). Pixel j sits at
    ``t_j = (j + base) / q`` samples from the source; the pixels of one phase ``j mod q`` share the
    sub-sample offset and use one separable filter. The result is multiplied by ``scale`` (last, so that
    1 changes nothing) and written into ``out`` (float64, detector shape) when given; ``row_sums`` (float64,
    one per row) receives each row's sum when given (for a point source in the placement kernel itself, while
    each row is in cache).
    """
    det = scene.detector
    n = det.n
    s = samples.shape[0]
    step = det.pitch_arcsec / 60.0
    base_y, base_x = pixel_offsets(source, det)
    tol = sampling.tap_tolerance
    if source.extent.kind == "image":
        from icl.optics.image_source import place_image

        img = place_image(samples, source, scene, band, sampling)
        img = img if out is None and scale == 1.0 else np.multiply(img, scale, out=out)
        return _sum_rows(img, row_sums)
    if source.extent.kind == "point":
        (ty, r0), (tx, c0) = (_tap_table(base, band, tol, q, s) for base in (base_y, base_x))
        return core.place_polyphase(samples, ty, tx, r0, c0, n, n, scale, out, row_sums,
                                    sampling.single_precision_placement)
    fx, fy = math.floor(base_x), math.floor(base_y)
    kern, k2 = disk_kernel(base_y - fy, base_x - fx, source.extent.diameter_arcmin / step, band, tol)
    img = core.convolve_linear(samples, kern, fy + k2 + s // 2, fx + k2 + s // 2, n, n)
    img = img if out is None and scale == 1.0 else np.multiply(img, scale, out=out)
    return _sum_rows(img, row_sums)


@lru_cache(maxsize=256)
def _tap_table(base: float, band: float, tol: float, q: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Polyphase taps (q, taps) and first sample indices (q,) along one axis.

    Pixel 0 sits ``base`` pixels from the source; samples are q pixels apart on a window of ``s``. Cached:
    renders of one scene share them.
    """
    taps, offsets = [], []
    for phi in range(q):
        c = (phi + base) / q
        t = pixel_taps(c - math.floor(c), band, tol, q)
        taps.append(t)
        offsets.append(math.floor(c) - (t.size - 1) // 2 + s // 2)
    table, first = np.stack(taps), np.array(offsets, dtype=np.intp)
    table.setflags(write=False)
    first.setflags(write=False)
    return table, first


def _sum_rows(img: np.ndarray, row_sums: np.ndarray | None) -> np.ndarray:
    """Fill the row sums :func:`place` gives besides the image, for placements done outside its kernel."""
    if row_sums is not None:
        np.sum(img, axis=1, out=row_sums)
    return img


def render(scene: Scene, sampling: Sampling | None = None) -> RenderResult:
    """Render every source of ``scene`` through its pupil onto its detector.

    Each component is ``flux * sum_k w_k (PSF_k conv extent)`` at the source position, integrated over
    each pixel and cropped to the detector; convolutions are linear and nothing is renormalised.

    Parameters
    ----------
    scene : Scene
        Sources, pupil and detector.
    sampling : Sampling, optional
        Numerical parameters (defaults justified by the convergence study).

    Returns
    -------
    RenderResult

    """
    sampling = sampling or Sampling()
    need = render_memory_estimate(scene, sampling.fft_factor)  # the scene itself checked the default factor
    if need > MAX_RENDER_BYTES:
        raise InputError(f"rendering with fft_factor {sampling.fft_factor:g} needs about {need / 2**30:.3g} GiB, "
                         f"more than the {MAX_RENDER_BYTES / 2**30:g} GiB cap", field="sampling.fft_factor")
    det = scene.detector
    q_point = sample_step(scene)
    steps = [q_point if src.extent.kind == "point" else 1 for src in scene.sources]
    supports = {q: support_samples(scene, sampling, q) for q in set(steps)}
    comps = np.empty((len(scene.sources), det.n, det.n))  # placement writes every pixel
    # Every placement gives its row sums, whose total is the ledger's recorded flux (no second pass over the
    # component).
    row_sums = np.empty(det.n)
    ledgers = []
    used = {}
    pupil = propagated_pupil(scene)
    for i, src in enumerate(scene.sources):
        q = steps[i]
        parts = [
            (psf_samples(pupil, lam, q * det.pitch_arcsec, supports[q], sampling), w)
            for lam, w in src.spectrum
        ]
        band = max(ps.grid.band for ps, _ in parts)
        _filter_halfwidth(scene, band, sampling, q)
        # One wavelength of weight 1 (the common case) places its samples as they are: no copy.
        if len(parts) == 1 and parts[0][1] == 1.0:
            weighted = parts[0][0].samples
        else:
            weighted = sum(w * ps.samples for ps, w in parts)
        # Nothing to place when no weighted wavelength carries energy (placing zeros would give zeros).
        if src.flux != 0.0 and any(w != 0.0 and ps.grid_energy > 0.0 for ps, w in parts):
            samples = np.asarray(weighted, dtype=float)
            place(samples, src, scene, band, sampling, q, scale=src.flux, out=comps[i], row_sums=row_sums)
            recorded = float(row_sums.sum())
        else:
            comps[i] = 0.0
            recorded = 0.0
        grid_energy = src.flux * sum(w * ps.grid_energy for ps, w in parts)
        ledgers.append(energy_ledger(src, scene.pupil, comps[i], grid_energy, recorded))
        for (lam, _), (ps, _) in zip(src.spectrum, parts):
            used[f"{lam:g}"] = {
                "fft_length": ps.grid.m,
                "pupil_pitch_um": ps.grid.du * 1e6,
                "pupil_samples": ps.grid.n,
                "band_cycles_per_sample": ps.grid.band,
                "sample_step_px": q,
            }
    axis = det.axis_arcmin
    # The result is read-only: a one-source scene is its component itself (no 8 MB copy at 1024 x 1024).
    comps.setflags(write=False)
    scene_sum = comps[0] if len(scene.sources) == 1 else comps.sum(axis=0)
    scene_sum.setflags(write=False)
    return RenderResult(
        comps,
        scene_sum,
        axis,
        axis.copy(),
        det.pitch_arcsec,
        ledgers,
        {
            "support_samples": supports,
            "fft_factor": sampling.fft_factor,
            "tap_tolerance": sampling.tap_tolerance,
            "single_precision_fft": sampling.single_precision_fft,
            "single_precision_placement": sampling.single_precision_placement,
            "wavelengths_nm": used,
        },
        scene.frame,
    )


def energy_ledger(
    source: Source,
    pupil: PupilModel,
    component: np.ndarray,
    grid_energy: float,
    recorded: float | None = None,
) -> dict:
    """Where the flux of one source goes, in units of the source flux.

    ``incident`` = flux x sum of spectral weights; ``blocked_by_aperture`` = exact opaque area
    fraction; ``recorded`` = sum over the detector; ``outside_window`` = light the discrete far field
    carries outside the detector (its Parseval total minus ``recorded``); ``beyond_grid`` = light the
    continuous pupil diffracts beyond the FFT period, which the discrete far field does not hold
    (exact transmitted flux minus the Parseval total); ``numerical_residual`` closes the sum. ``recorded``:
    the component's sum when already known (the placement's row sums), else summed here.
    """
    incident = source.flux * sum(w for _, w in source.spectrum)
    blocked = incident * pupil.blocked_fraction()
    recorded = float(component.sum()) if recorded is None else recorded
    outside = grid_energy - recorded
    beyond = incident - blocked - grid_energy
    residual = incident - (blocked + recorded + outside + beyond)
    return {
        "source_flux": incident,
        "blocked_by_aperture": blocked,
        "recorded": recorded,
        "outside_window": outside,
        "beyond_grid": beyond,
        "numerical_residual": residual,
    }

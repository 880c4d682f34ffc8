"""Off-axis PSFs of the thick eye against the thin-phase model's translated on-axis PSF.

The thin-phase engine is isoplanatic: a source at field angle ``theta`` gets the
on-axis PSF moved to ``theta``. The thick eye (:class:`icl.eye.ThickPupil`) gives the real PSF of each
field angle, in a frame whose origin is the host eye's chief ray on the retina (the place the renderer
puts at the source position). This module measures, per field angle, how far the thick PSF is from the
translated on-axis one, and why: the wavefront terms of the lens path (field defocus on the plane
retina, astigmatism, coma), the hole path's vignetting by its wall, and the shape of the real entrance
pupil (the image of the iris seen from that field). It also measures the error of blending
piecewise-isoplanatic patches against the exact PSF of the field angle.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from icl.imaging.fieldmap import PupilAt, field_deviations, fourier_shift
from icl.imaging.metrics import encircled_energy, strehl
from icl.imaging.mtf import psf_period
from icl.optics.render import PointReflected, PupilModel

# 6 arcsec x 1536 samples = 153.6 arcmin: long enough that the engine's minimum of 256 pupil samples
# needs no longer FFT (the samples are one whole period) and wide enough (+-77 arcmin) for the
# field-defocused PSF at 20 degrees on the plane retina (about +-15 arcmin).
TABLE_PITCH_ARCSEC = 6.0
TABLE_PERIOD = 1536
TABLE_FIELDS_DEG = (0.0, 5.0, 10.0, 20.0)


@dataclass(frozen=True)
class Refocused:
    """A pupil model with Zernike defocus ``sqrt(3)(2 r^2 - 1)`` of ``defocus_mm`` rms (OPD, mm) added.

    Used to remove the field defocus of the plane retina: the PSF on a retina that follows the eye's
    focal shell. The defocus is an OPD, so it scales with wavelength like the eye's own.
    """

    base: PupilModel
    defocus_mm: float

    @property
    def diameter_mm(self) -> float:
        """Diameter of the base model."""
        return self.base.diameter_mm

    def field(self, n: int, du: float, wavelength: float) -> np.ndarray:
        """The base field times the defocus phase (``du``, ``wavelength`` in m)."""
        p = self.base.field(n, du, wavelength)
        c = (np.arange(n) - (n - 1) / 2.0) * du / (self.diameter_mm * 5e-4)
        r2 = c[None, :] ** 2 + c[:, None] ** 2
        return p * np.exp(2j * np.pi * self.defocus_mm * 1e-3 * math.sqrt(3) * (2 * r2 - 1) / wavelength)

    def blocked_fraction(self) -> float:
        """Same as the base model."""
        return self.base.blocked_fraction()


def thick_pupil_at(eye, implant, wavelength_nm: float = 550.0,
                   paths: tuple[str, ...] = ("lens", "hole", "edge"),
                   refocus: bool = False) -> PupilAt:
    """``pupil_at(x_deg, y_deg)`` for the thick eye (:class:`icl.eye.ThickPupil` at that field angle).

    With ``refocus`` the change of the lens path's defocus from its on-axis value
    (:func:`wavefront_terms`) is taken out at each field angle (:class:`Refocused`): a retina on the
    eye's focal shell instead of the model's plane retina.
    """
    from icl.eye import ThickPupil

    axis_defocus = wavefront_terms(eye, implant, 0.0, 0.0, wavelength_nm)["defocus"] if refocus else 0.0

    def pupil_at(x_deg: float, y_deg: float) -> PupilModel:
        p = ThickPupil(eye, implant, (60.0 * x_deg, 60.0 * y_deg), paths, wavelength_nm=wavelength_nm)
        if not refocus:
            return p
        extra = wavefront_terms(eye, implant, x_deg, y_deg, wavelength_nm)["defocus"] - axis_defocus
        return Refocused(p, -extra * wavelength_nm * 1e-6)

    return pupil_at


def _field_axes(x_deg: float, y_deg: float) -> tuple[float, float]:
    """Unit vector of the field direction (tangential axis); +y on axis (the y-z meridional plane)."""
    r = math.hypot(x_deg, y_deg)
    return (x_deg / r, y_deg / r) if r > 0 else (0.0, 1.0)


def wavefront_terms(eye, implant, x_deg: float, y_deg: float, wavelength_nm: float = 550.0,
                    samples: int = 61) -> dict[str, float]:
    """Zernike terms (waves rms) of the lens path's wavefront over the whole entrance pupil.

    The OPD is traced with apertures off (the optic's wavefront continued over the hole), on the host
    eye's reference sphere, and fitted in coordinates (t, s): t along the field direction (tangential),
    s across it. ``defocus`` is ``sqrt(3)(2 r^2 - 1)``; ``astigmatism`` is ``sqrt(6)(t^2 - s^2)`` (its sign
    says which meridian focuses first); ``coma`` is ``sqrt(8)(3 r^2 - 2) t``; ``spherical`` is
    ``sqrt(5)(6 r^4 - 6 r^2 + 1)``; ``tilt`` is ``2 t`` (the PSF's offset from the host chief ray).
    ``residual_rms`` is what the fit leaves (higher orders).
    """
    from icl.eye.trace import TraceOptions
    from icl.eye.wavefront import opd

    r_p = eye.pupil_diameter_mm / 2.0
    g = np.linspace(-r_p, r_p, samples)
    uu, vv = np.meshgrid(g, g)
    keep = uu**2 + vv**2 <= r_p * r_p
    u, v = uu[keep], vv[keep]
    path = "lens" if implant is not None else "host"
    w, _, flags = opd(eye, implant, path, u, v, (60.0 * x_deg, 60.0 * y_deg), wavelength_nm,
                      TraceOptions(apertures=False, fresnel=False))
    if np.any(flags != 0):
        raise ValueError(f"{int(np.sum(flags != 0))} rays fail at field ({x_deg}, {y_deg}) deg")
    ex, ey = _field_axes(x_deg, y_deg)
    t, s = (u * ex + v * ey) / r_p, (-u * ey + v * ex) / r_p
    r2 = t * t + s * s
    basis = {"piston": np.ones_like(t), "tilt": 2 * t, "tilt_across": 2 * s,
             "defocus": math.sqrt(3) * (2 * r2 - 1), "astigmatism": math.sqrt(6) * (t * t - s * s),
             "astigmatism_45": math.sqrt(6) * 2 * t * s, "coma": math.sqrt(8) * (3 * r2 - 2) * t,
             "coma_across": math.sqrt(8) * (3 * r2 - 2) * s,
             "spherical": math.sqrt(5) * (6 * r2 * r2 - 6 * r2 + 1)}
    a = np.column_stack(list(basis.values()))
    waves = w / (wavelength_nm * 1e-6)
    coef, *_ = np.linalg.lstsq(a, waves, rcond=None)
    out = {k: float(c) for k, c in zip(basis, coef, strict=True) if k != "piston"}
    out["residual_rms"] = float(np.std(waves - a @ coef))
    return out


def iris_pupil(eye, implant, x_deg: float, y_deg: float, wavelength_nm: float = 550.0,
               n_azimuths: int = 64) -> dict[str, float]:
    """The real entrance pupil at a field angle: the iris circle seen through the surfaces in front of it.

    Rays of the field are aimed at points of the entrance-pupil plane (as :class:`icl.eye.ThickPupil`
    does) and traced, apertures off, through every surface in front of the iris (cornea and, with an
    implant, the ICL optic) to the iris plane; along each azimuth the radius whose ray meets the iris
    edge is found by bisection. The iris radius is the model's entrance pupil radius times the host
    eye's paraxial pupil magnification, so on axis without an implant the result is the model's circle.

    Returns
    -------
    dict
        ``width_tangential_mm`` and ``width_sagittal_mm`` (extent along and across the field
        direction), ``centre_tangential_mm`` (shift of the centre along it) and ``area_ratio`` (area
        over that of the model's circle).

    """
    from icl.eye.model import path_steps
    from icl.eye.paraxial import paraxial
    from icl.eye.trace import TraceOptions, to_plane, trace
    from icl.eye.wavefront import pupil_rays

    par = paraxial(eye, None, wavelength_nm)
    path = "lens" if implant is not None else "host"
    steps = [s for s in path_steps(eye, implant, path, wavelength_nm)
             if s.placement.z + s.surface.offset < eye.stop_z]
    n_iris = steps[-1].n2
    r_iris = eye.pupil_diameter_mm / 2.0 * par.entrance_pupil_mag
    ex, ey = _field_axes(x_deg, y_deg)
    phi = 2 * math.pi * np.arange(n_azimuths) / n_azimuths
    dt, ds = np.cos(phi), np.sin(phi)
    du, dv = dt * ex - ds * ey, dt * ey + ds * ex
    fa = (60.0 * x_deg, 60.0 * y_deg)
    lo, hi = np.zeros(n_azimuths), np.full(n_azimuths, eye.pupil_diameter_mm)
    for _ in range(48):
        mid = 0.5 * (lo + hi)
        out = to_plane(trace(steps, pupil_rays(mid * du, mid * dv, fa, par.entrance_pupil_z),
                             TraceOptions(apertures=False, fresnel=False)), eye.stop_z, n_iris)
        inside = np.hypot(out.x, out.y) <= r_iris
        lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
    rad = 0.5 * (lo + hi)
    t, s = rad * dt, rad * ds
    area = 0.5 * float(np.sum(rad**2)) * (2 * math.pi / n_azimuths)
    return {"width_tangential_mm": float(t.max() - t.min()), "width_sagittal_mm": float(s.max() - s.min()),
            "centre_tangential_mm": float(0.5 * (t.max() + t.min())),
            "area_ratio": area / (math.pi * (eye.pupil_diameter_mm / 2.0) ** 2)}


def radius_for_fraction(samples: np.ndarray, pitch_arcsec: float, fraction: float,
                        centre_arcmin: tuple[float, float]) -> float:
    """Radius (arcmin) of the circle about ``centre_arcmin`` holding ``fraction`` of the samples' flux."""
    from scipy.optimize import brentq

    total = float(np.sum(samples))
    r_max = 0.49 * samples.shape[0] * pitch_arcsec / 60.0

    def excess(r: float) -> float:
        return float(encircled_energy(samples, pitch_arcsec, [r], centre_arcmin)[0]) - fraction * total

    return float(brentq(excess, 0.05 * pitch_arcsec / 60.0, r_max, xtol=1e-4))


def centroid_arcmin(samples: np.ndarray, pitch_arcsec: float) -> tuple[float, float]:
    """Flux-weighted centre (x, y) in arcmin of samples centred at index ``m // 2`` (row = +y)."""
    m = samples.shape[0]
    axis = (np.arange(m) - m // 2) * pitch_arcsec / 60.0
    total = float(samples.sum())
    return (float(np.sum(samples.sum(axis=0) * axis) / total),
            float(np.sum(samples.sum(axis=1) * axis) / total))


@dataclass
class FieldRow:
    """One field angle of the thick eye against the translated on-axis PSF (see :func:`thick_field_table`)."""

    field_deg: float
    centroid_arcmin: tuple[float, float]
    paraxial_centroid_arcmin: tuple[float, float]
    shift_arcmin: tuple[float, float]
    l1_nominal: float
    l1_recentred: float
    l1_best_shift: float
    strehl: float
    ee50_arcmin: float
    ee80_arcmin: float
    flux_ratio: float
    blocked_fraction: float
    hole_footprint_radius_mm: float
    wavefront: dict[str, float]
    pupil: dict[str, float]
    samples: np.ndarray = field(repr=False, default=None)

    def to_dict(self) -> dict:
        """JSON form (without the samples)."""
        return {k: v for k, v in self.__dict__.items() if k != "samples"}


def thick_field_table(eye, implant, fields_deg: tuple[float, ...] = TABLE_FIELDS_DEG,
                      wavelength_nm: float = 550.0,
                      pitch_arcsec: float = TABLE_PITCH_ARCSEC, period: int = TABLE_PERIOD,
                      paraxial_deg: float = 0.25, refocus: bool = False) -> list[FieldRow]:
    """Off-axis PSFs of the thick eye along +x and their deviation from the translated on-axis PSF.

    Per field angle (along +x):

    * ``centroid_arcmin``: the PSF's flux centroid relative to the source position at which the
      renderer places it (the host chief ray); the thin-phase expectation is 0.
    * ``paraxial_centroid_arcmin``: the first-order (linear in field) part of that centroid, scaled
      from the centroid at ``paraxial_deg``.
    * ``l1_nominal``, ``l1_recentred``: ``sum |a - b|`` of the unit-flux PSFs (twice the total-variation
      distance) against the on-axis PSF as the thin-phase model places it, and after moving the on-axis
      PSF so that the centroids coincide (exact Fourier shift): the change of shape alone.
    * ``shift_arcmin``, ``l1_best_shift``: the cross-correlation peak shift and the L1 after it, from
      :func:`icl.imaging.fieldmap.field_deviations` (for a PSF blurred far more than the on-axis core the
      peak locks onto a ring, so the centroid is the re-centring used above).
    * ``strehl``: peak of the PSF over the peak of the same aperture without phase
      (:func:`icl.imaging.metrics.strehl`, ``peak_from_psf``).
    * ``ee50_arcmin``, ``ee80_arcmin``: radii about the centroid holding 50 % and 80 % of the PSF's flux.
    * ``flux_ratio``, ``blocked_fraction``, ``hole_footprint_radius_mm``: vignetting by the hole wall.
    * ``wavefront`` (:func:`wavefront_terms`) and ``pupil`` (:func:`iris_pupil`): the causes.

    With ``refocus`` every field angle's PSF has its field defocus removed (:func:`thick_pupil_at`). Every
    PSF is drawn in the visual frame (docs/conventions.md, "Frames"): the far field of the point-reflected
    pupil, as a scene renders it.
    """
    native = thick_pupil_at(eye, implant, wavelength_nm, refocus=refocus)

    def pupil_at(x_deg: float, y_deg: float) -> PointReflected:
        return PointReflected(native(x_deg, y_deg))

    fields = [(float(f), 0.0) for f in fields_deg]
    devs = field_deviations(pupil_at, fields, wavelength_nm, pitch_arcsec, np.array([10.0]), period)
    near = psf_period(pupil_at(paraxial_deg, 0.0), wavelength_nm, pitch_arcsec, period).samples
    lin = centroid_arcmin(near, pitch_arcsec)
    axis = psf_period(pupil_at(0.0, 0.0), wavelength_nm, pitch_arcsec, period).samples
    axis_c = centroid_arcmin(axis, pitch_arcsec)
    rows = []
    for (fx, _), d in zip(fields, devs, strict=True):
        p = pupil_at(fx, 0.0)
        s = psf_period(p, wavelength_nm, pitch_arcsec, period).samples
        c = centroid_arcmin(s, pitch_arcsec)
        step = 60.0 / pitch_arcsec
        moved = fourier_shift(axis / axis.sum(), (c[1] - axis_c[1]) * step, (c[0] - axis_c[0]) * step)
        hole = getattr(p.pupil, "base", p.pupil).footprints(wavelength_nm).get("hole", [])
        rows.append(FieldRow(
            fx, c, (lin[0] * fx / paraxial_deg, lin[1] * fx / paraxial_deg), d.shift_arcmin,
            2 * d.tv_nominal, float(np.abs(s / s.sum() - moved).sum()), 2 * d.tv_translated,
            strehl(p, wavelength_nm, pitch_arcsec, period).peak_from_psf,
            radius_for_fraction(s, pitch_arcsec, 0.5, c), radius_for_fraction(s, pitch_arcsec, 0.8, c),
            d.flux_ratio, p.blocked_fraction(), hole[0].radius if hole else 0.0,
            wavefront_terms(eye, implant, fx, 0.0, wavelength_nm),
            iris_pupil(eye, implant, fx, 0.0, wavelength_nm),
            s))
    return rows


def blend_error(pupil_at: PupilAt, x_deg: float, y_deg: float, patch_deg: float, wavelength_nm: float = 550.0,
                pitch_arcsec: float = TABLE_PITCH_ARCSEC, period: int = 512) -> float:
    """Relative L1 between the patch-blended and the exact PSF of a point at field (x, y) degrees.

    This is what :func:`icl.imaging.fieldmap.render_patched` does to a point there, in the point's own
    frame: the PSFs of the four patch centres around it (the grid ``(i, j) * patch``), each as the
    renderer places it (its origin at the source position), weighted bilinearly, against the PSF of the
    point's own field angle. Returns ``sum |blend - exact| / sum exact``.
    """
    from icl.imaging.fieldmap import patch_weights

    weights = patch_weights(np.array([60.0 * x_deg]), np.array([60.0 * y_deg]), 60.0 * patch_deg)
    blend = np.zeros((period, period))
    for (i, j), w in weights.items():
        if w[0] > 0:
            blend += w[0] * psf_period(pupil_at(j * patch_deg, i * patch_deg), wavelength_nm, pitch_arcsec,
                                       period).samples
    exact = psf_period(pupil_at(x_deg, y_deg), wavelength_nm, pitch_arcsec, period).samples
    return float(np.abs(blend - exact).sum() / exact.sum())


def fieldmap_figure(tables: dict[str, list[FieldRow]], pitch_arcsec: float, png_path: str | Path,
                    half_arcmin: float = 30.0, white: float = 1.0, knee: float = 1e-4) -> None:
    """The PSFs of each table (one row of panels per table, labelled by its key), one fixed display
    mapping, +y up.

    Each panel is centred on the source position (the thin-phase model's image) and shows the flux
    density (source flux per arcmin^2) through ``DisplayMapping(white, knee)``: no per-panel scaling.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icl.imaging.display import DisplayMapping
    from icl.io import atomic_write_bytes

    mapping = DisplayMapping(white, knee)
    k = int(round(half_arcmin * 60.0 / pitch_arcsec))
    area = (pitch_arcsec / 60.0) ** 2
    ncol = max(len(r) for r in tables.values())
    fig, axes = plt.subplots(len(tables), ncol, figsize=(3.3 * ncol + 0.8, 3.6 * len(tables) + 0.4),
                             squeeze=False)
    ext = (-(k + 0.5) * pitch_arcsec / 60.0, (k + 0.5) * pitch_arcsec / 60.0) * 2
    im = None
    for axrow, (label, rows) in zip(axes, tables.items(), strict=False):
        for ax, row in zip(axrow, rows, strict=False):
            m = row.samples.shape[0]
            crop = row.samples[m // 2 - k:m // 2 + k + 1, m // 2 - k:m // 2 + k + 1] / area
            # The display flips rows (+y up) through origin="lower"; the array is not flipped.
            im = ax.imshow(mapping.tone(crop), origin="lower", extent=ext, cmap="magma", vmin=0.0, vmax=1.0,
                           interpolation="nearest")
            ax.plot(*row.centroid_arcmin, "+", color="cyan", ms=8, mew=1.2)
            ax.set_title(f"{label}, {row.field_deg:g} deg\n"
                         f"Strehl {row.strehl:.3f}, EE50 {row.ee50_arcmin:.2f}', "
                         f"L1 {row.l1_recentred:.2f}", fontsize=8)
            ax.set_xlabel("x - source (arcmin)", fontsize=8)
            ax.tick_params(labelsize=7)
        axrow[0].set_ylabel("y - source (arcmin)", fontsize=8)
    ticks = [knee * 0.1, knee, knee * 10, knee * 100, 1e-1 * white, white]
    cb = fig.colorbar(im, ax=axes.ravel().tolist(), fraction=0.02, pad=0.02)
    cb.set_ticks([float(mapping.tone(np.array(t))) for t in ticks])
    cb.set_ticklabels([f"{t:.0e}" for t in ticks])
    cb.ax.tick_params(labelsize=7)
    cb.set_label("flux / arcmin$^2$ (source flux 1)", fontsize=8)
    fig.suptitle("Thick eye (Navarro 1985, 8 D myopic, synthetic ICL, 0.36 mm hole), 550 nm, 3.2 mm: "
                 "PSF along +x field (+ centroid)\n"
                 f"one log display mapping for all panels (white {white:g}, knee {knee:g}); "
                 "L1: shape change from the on-axis PSF after re-centring", fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(png_path, buf.getvalue())


BLEND_PATCHES_DEG = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
BLEND_CORNERS_DEG = (0.0, 10.0)


def thick_field_report(eye, implant, wavelength_nm: float = 550.0, figure: str | Path | None = None,
                       progress=None) -> dict:
    """Everything docs/imaging.md quotes for the thick eye: the field table on the plane retina and
    with the field defocus removed, and the patch-blending error at the midpoint of patches of
    ``BLEND_PATCHES_DEG`` whose lower-left corner is at ``(c, 0)`` for ``c`` in ``BLEND_CORNERS_DEG``.
    """
    tables = {}
    for label, refocus in (("plane retina", False), ("field defocus removed", True)):
        if progress:
            progress(f"field table: {label}")
        tables[label] = thick_field_table(eye, implant, wavelength_nm=wavelength_nm, refocus=refocus)
    if figure is not None:
        fieldmap_figure(tables, TABLE_PITCH_ARCSEC, figure)
    blend = []
    pupil_at = thick_pupil_at(eye, implant, wavelength_nm)
    for corner in BLEND_CORNERS_DEG:
        for patch in BLEND_PATCHES_DEG:
            if progress:
                progress(f"blend: patch {patch} deg at {corner} deg")
            x, y = corner + patch / 2, patch / 2
            blend.append({"patch_deg": patch, "point_deg": [x, y],
                          "l1_blend_vs_exact": blend_error(pupil_at, x, y, patch, wavelength_nm)})
    return {"wavelength_nm": wavelength_nm, "pitch_arcsec": TABLE_PITCH_ARCSEC, "period": TABLE_PERIOD,
            "frame": "visual", "tables": {k: [r.to_dict() for r in v] for k, v in tables.items()},
            "blend": blend}

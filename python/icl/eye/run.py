"""Run a data package through the thick eye: PSF components per path, energy ledgers, sampled rays, metrics.

Components: the primary paths (``lens``, ``hole``, ``edge``) are one coherent wave-optics component
(:class:`icl.eye.pupil.ThickPupil` through :func:`icl.optics.render`); each enabled ghost is its own
component, added in intensity and rendered by ray density (:mod:`icl.eye.ghosts`). What :func:`run` returns
is what ``icl eye-trace`` writes (``psf_linear.npz``, ``energy.json``, ``paths.npz``, ``metrics.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from icl.eye.ghosts import geometric_component
from icl.eye.ledger import path_ledger
from icl.eye.model import GHOST_PATHS, PRIMARY_PATHS, index_after
from icl.eye.package import Package
from icl.eye.paraxial import paraxial
from icl.eye.pupil import ThickPupil
from icl.eye.trace import TraceOptions, to_plane
from icl.eye.wavefront import ARCMIN, host_reference, opd, pupil_rays, rms_spot, spot, trace_path
from icl.optics.model import Scene

LEDGER_KEYS = (
    "incident",
    "not_in_path",
    "blocked",
    "reflected",
    "transmitted",
    "outside_detector",
    "residual",
)
FRAME = "visual"  # every image and angle icl eye-trace writes (docs/conventions.md, "Frames")
FRAME_TEXT = ("visual frame: angles on the observation-angle plane as the observer sees them, +x right, +y up "
              "(row i = +y, column j = +x); a source at +x is drawn at +x and light that the implant deviates "
              "toward +x on its way to the retina is drawn toward -x (a minus ICL decentred toward +x moves its "
              "pattern toward +x, 'with motion'); paths.npz keeps retinal points in the eye's own coordinates")
RAY_SAMPLE_SIDE = 21  # rays per pupil diameter written to paths.npz (a readable sample, not the integration)


@dataclass
class RunResult:
    """Everything ``icl eye-trace`` writes; arrays in :attr:`psf` and :attr:`rays`, JSON in the dicts."""

    psf: dict[str, np.ndarray]
    rays: dict[str, np.ndarray]
    energy: dict
    metrics: dict
    log: list[str] = field(default_factory=list)


def _paths_of(pkg: Package, paths: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    primary = tuple(p for p in paths if p in PRIMARY_PATHS and not (p == "hole" and pkg.implant.hole_mm == 0))
    ghosts = tuple(p for p in paths if p in GHOST_PATHS)
    return primary, ghosts


def run(
    pkg: Package,
    paths: tuple[str, ...] = PRIMARY_PATHS + GHOST_PATHS,
    ledger_side: int = 201,
    ghost_side: int = 401,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Trace and render every source of ``pkg`` along the enabled ``paths``.

    Parameters
    ----------
    pkg : Package
        Loaded data package.
    paths : tuple of str
        Enabled paths (ablation: leave some out).
    ledger_side, ghost_side : int
        Rays per entrance-pupil diameter for the energy ledgers and for the geometric ghost components.
    progress : callable, optional
        Called with a label after each unit of work (sources x components).

    """
    from icl.optics import render

    primary, ghosts = _paths_of(pkg, paths)
    eye, imp, det = pkg.eye, pkg.implant, pkg.detector
    names = (["primary"] if primary else []) + list(ghosts)
    comps = np.zeros((len(names), det.n, det.n))
    energy: dict = {
        "units": "fraction of the source flux (flux x spectral weight) entering the entrance pupil",
        "definitions": _LEDGER_DOC,
        "sources": {},
    }
    per_source: dict = {}
    half_mm = det.half_width_arcmin * ARCMIN
    worst = 0.0
    for src in pkg.sources:
        field_ = (src.x_arcmin, src.y_arcmin)
        src_energy: dict = {"paths": {}}
        if primary:
            res = render(Scene((src,), ThickPupil(eye, imp, field_, primary), det, FRAME))
            comps[0] += res.components[0]
            src_energy["wave_primary"] = res.ledgers[0]
            if progress:
                progress(f"{src.id}: primary ({'+'.join(primary)})")
        for g in ghosts:
            img, _ = geometric_component(eye, imp, g, src, det, ghost_side, frame=FRAME)
            comps[names.index(g)] += img
            if progress:
                progress(f"{src.id}: {g}")
        for p in primary + ghosts:
            total = dict.fromkeys(LEDGER_KEYS, 0.0)
            for lam, w in src.spectrum:
                f_mm = paraxial(eye, imp, lam).efl_mm
                led = path_ledger(eye, imp, p, lam, ledger_side, field_, half_mm * f_mm)
                for key in LEDGER_KEYS:
                    total[key] += src.flux * w * led[key]
            src_energy["paths"][p] = total
            worst = max(worst, abs(total["residual"]))
        energy["sources"][src.id] = src_energy
        per_source[src.id] = _source_metrics(pkg, src, comps, names)
    energy["max_abs_residual"] = worst
    axis = det.axis_arcmin
    psf = {
        "psf": comps.sum(axis=0),
        "components": comps,
        "component_names": np.array(names),
        "x_arcmin": axis,
        "y_arcmin": axis.copy(),
        "angular_pixel_arcsec": np.float64(det.pitch_arcsec),
        "wavelength_nm": np.array(sorted({lam for s in pkg.sources for lam, _ in s.spectrum})),
    }
    metrics = _metrics(pkg, primary, ghosts, names, comps, per_source)
    return RunResult(psf, _ray_sample(pkg, primary + ghosts), energy, metrics)


_LEDGER_DOC = {
    "incident": "flux entering the entrance pupil (1 per unit source flux and spectral weight)",
    "not_in_path": "flux whose rays belong to another path (outside this path's aperture)",
    "blocked": "stopped by the hole wall",
    "reflected": "lost at Fresnel splits along the path (and total internal reflection)",
    "transmitted": "arriving on the retina inside the detector's field (square, about the path's centroid)",
    "outside_detector": "arriving on the retina outside the detector's field",
    "residual": "incident minus the sum of the others (ray sampling makes each path's share approximate; "
    "the sum closes exactly)",
}


def _source_metrics(pkg: Package, src, comps: np.ndarray, names: list[str]) -> dict:
    axis = pkg.detector.axis_arcmin
    out = {}
    for name, c in zip(names, comps, strict=True):
        tot = float(c.sum())
        cx = float((c.sum(axis=0) * axis).sum() / tot) if tot > 0 else None
        cy = float((c.sum(axis=1) * axis).sum() / tot) if tot > 0 else None
        out[name] = {"recorded": tot, "peak_pixel": float(c.max()), "centroid_arcmin": [cx, cy]}
    return out


def _metrics(pkg: Package, primary, ghosts, names, comps, per_source) -> dict:
    eye, imp = pkg.eye, pkg.implant
    lam = pkg.sources[0].spectrum[0][0]
    host = paraxial(eye, None, lam)
    with_icl = paraxial(eye, imp, lam)
    x, y = spot(eye, imp, "lens", 40, (0.0, 0.0), lam)
    z = [s.offset for s, _ in eye.surfaces]
    back = imp.placement(eye).z
    return {
        "units": {
            "psf": "linear pixel flux in units of the source flux (intensity integrated over each pixel); "
            "not renormalised: its sum is the recorded fraction of the incident flux",
            "components": "primary = lens + hole + edge paths summed coherently (wave optics); each ghost "
            "path its own component added in intensity (ray density, Fresnel-weighted)",
            "angles": "arcmin on the observation-angle plane, +x right, +y up, row i = +y",
            "lengths": "mm",
        },
        "frame": FRAME,
        "frame_definition": FRAME_TEXT,
        "paths_enabled": list(primary + ghosts),
        "component_names": names,
        "component_method": {n: ("wave" if n == "primary" else "geometric") for n in names},
        "reference_wavelength_nm": lam,
        "paraxial": {
            "host_power_d": host.power_d,
            "implanted_power_d": with_icl.power_d,
            "host_efl_mm": host.efl_mm,
            "implanted_efl_mm": with_icl.efl_mm,
            "entrance_pupil_z_mm": host.entrance_pupil_z,
            "exit_pupil_z_mm": host.exit_pupil_z,
            "back_focal_z_with_icl_mm": with_icl.back_focal_z,
            "retina_z_mm": eye.retina_z,
            "iris_per_entrance_pupil_height": host.entrance_pupil_mag,
        },
        "geometry_mm": {
            "cornea_thickness": z[1] - z[0],
            "anterior_chamber_depth": z[2] - z[1],
            "lens_thickness": z[3] - z[2],
            "vitreous_depth": eye.retina_z - z[3],
            "icl_front_vertex_z": back - imp.thickness_mm,
            "icl_back_vertex_z": back,
            "vault_along_axis": imp.vault_mm,
        },
        "rms_spot_lens_path_um": rms_spot(x, y) * 1e3,
        "sources": per_source,
        "total_recorded": float(comps.sum()),
        "files": {k: v for k, v in pkg.files.items()},
    }


def _ray_sample(pkg: Package, paths: tuple[str, ...]) -> dict[str, np.ndarray]:
    """A square grid of rays per path and source (first wavelength), traced with every aperture on."""
    eye, imp = pkg.eye, pkg.implant
    cols: dict[str, list] = {
        k: []
        for k in (
            "source_index",
            "path_index",
            "u_mm",
            "v_mm",
            "x_mm",
            "y_mm",
            "z_mm",
            "l",
            "m",
            "n",
            "opd_mm",
            "weight",
            "flags",
        )
    }
    r = eye.pupil_diameter_mm / 2.0
    g = np.linspace(-r, r, RAY_SAMPLE_SIDE)
    u, v = np.meshgrid(g, g)
    keep = u * u + v * v <= r * r
    u, v = u[keep], v[keep]
    for si, src in enumerate(pkg.sources):
        lam = src.spectrum[0][0]
        field_ = (src.x_arcmin, src.y_arcmin)
        par = paraxial(eye, None, lam)
        ref = host_reference(eye, field_, lam, par)
        for pi, p in enumerate(paths):
            rays = pupil_rays(u, v, field_, par.entrance_pupil_z)
            out = to_plane(
                trace_path(eye, imp, p, rays, lam, TraceOptions()), eye.retina_z, index_after(eye, lam)
            )
            w_mm, _, _ = opd(eye, imp, p, u, v, field_, lam, TraceOptions(apertures=False), ref)
            for key, val in (
                ("source_index", np.full(u.size, si)),
                ("path_index", np.full(u.size, pi)),
                ("u_mm", u),
                ("v_mm", v),
                ("x_mm", out.x),
                ("y_mm", out.y),
                ("z_mm", out.z),
                ("l", out.l),
                ("m", out.m),
                ("n", out.n),
                ("opd_mm", np.where(out.flags == 0, w_mm, np.nan)),
                ("weight", np.where(out.flags == 0, out.w, 0.0)),
                ("flags", out.flags),
            ):
                cols[key].append(val)
    arrays = {k: np.concatenate(v) for k, v in cols.items()}
    arrays["source_index"] = arrays["source_index"].astype(np.int32)
    arrays["path_index"] = arrays["path_index"].astype(np.int32)
    arrays["flags"] = arrays["flags"].astype(np.uint32)
    arrays["path_names"] = np.array(paths)
    arrays["source_ids"] = np.array([s.id for s in pkg.sources])
    return arrays

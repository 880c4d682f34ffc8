"""Per-path energy ledger of a traced beam (units of the flux entering the entrance pupil)."""

from __future__ import annotations

import numpy as np

from icl.eye.model import Eye, Implant, index_after
from icl.eye.paraxial import paraxial
from icl.eye.trace import CLIPPED, MISSED, NO_CONVERGE, TIR, WALL, TraceOptions, to_plane
from icl.eye.wavefront import pupil_rays, trace_path


def uniform_pupil(n_side: int, diameter_mm: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Cell centres of a square grid inside the pupil circle and the flux carried by each (equal)."""
    r = diameter_mm / 2.0
    g = (np.arange(n_side) - (n_side - 1) / 2.0) * (2 * r / n_side)
    u, v = np.meshgrid(g, g)
    keep = u * u + v * v <= r * r
    return u[keep], v[keep], 1.0 / int(keep.sum())


def path_ledger(eye: Eye, implant: Implant | None, path: str, wavelength_nm: float, n_side: int = 201,
                field_arcmin: tuple[float, float] = (0.0, 0.0), detector_half_mm: float = np.inf,
                options: TraceOptions = TraceOptions()) -> dict:
    """Trace one path and account for the flux entering the pupil.

    ``incident``: all flux entering the entrance pupil (1). ``not_in_path``: flux whose rays leave the
    path by its aperture (light belonging to the other paths). ``blocked``: stopped by the hole wall.
    ``reflected``: lost at Fresnel splits (and total internal reflection). ``transmitted``: arriving on the
    retina inside ``detector_half_mm`` of the chief ray; ``outside_detector``: the rest arriving.
    ``residual`` closes the sum.
    """
    par = paraxial(eye, None, wavelength_nm)
    u, v, w0 = uniform_pupil(n_side, eye.pupil_diameter_mm)
    rays = pupil_rays(u, v, field_arcmin, par.entrance_pupil_z, w0)
    out = to_plane(trace_path(eye, implant, path, rays, wavelength_nm, options), eye.retina_z,
                   index_after(eye, wavelength_nm))
    f = out.flags
    lost = rays.w - out.w  # Fresnel loss before the ray stopped or arrived
    alive = f == 0
    cx, cy = (np.average(out.x[alive], weights=out.w[alive]), np.average(out.y[alive], weights=out.w[alive])) \
        if alive.any() else (0.0, 0.0)
    inside = alive & (np.maximum(np.abs(out.x - cx), np.abs(out.y - cy)) <= detector_half_mm)
    led = {
        "incident": float(rays.w.sum()),
        "not_in_path": float(rays.w[(f & (CLIPPED | MISSED)) != 0].sum()),
        "blocked": float(out.w[(f & (WALL | NO_CONVERGE)) != 0].sum()),
        "reflected": float(lost[(f & (CLIPPED | MISSED)) == 0].sum() + out.w[(f & TIR) != 0].sum()),
        "transmitted": float(out.w[inside].sum()),
        "outside_detector": float(out.w[alive & ~inside].sum()),
        "rays": int(rays.w.size),
    }
    led["residual"] = led["incident"] - sum(led[k] for k in ("not_in_path", "blocked", "reflected",
                                                              "transmitted", "outside_detector"))
    return led

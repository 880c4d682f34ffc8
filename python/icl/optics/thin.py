"""Kernel-side view of the thin-phase pupil: SI parameters and exact aperture geometry."""

from __future__ import annotations

import math

import numpy as np

from icl._core_loader import core
from icl.optics.model import Pupil
from icl.optics.sampling import EdgeFilter


def pupil_params(pupil: Pupil) -> core.PupilParams:
    """Translate the JSON-level pupil (mm, D, degrees) into the kernel's SI parameters."""
    p = core.PupilParams()
    p.pupil_diameter = pupil.diameter_mm * 1e-3
    p.eye_excess = pupil.eye_excess_d
    icl = pupil.icl
    p.icl_present = icl is not None
    if icl is not None:
        p.icl_power = icl.power_d
        p.cyl_power = icl.cylinder_d
        p.cyl_axis = math.radians(icl.axis_deg)
        p.icl_piston = icl.optic_opd_um * 1e-6
        p.dec_u, p.dec_v = (v * 1e-3 for v in icl.decentre_mm)
        p.optic_zone_diameter = icl.optic_zone_mm * 1e-3
        p.hole_diameter = icl.hole_mm * 1e-3
        p.hole = getattr(core.HoleMode, icl.hole)
    return p


def pupil_field(
    pupil: Pupil, n: int, du: float, wavelength: float, edge: EdgeFilter | None = None
) -> np.ndarray:
    """Complex thin-phase pupil on an n x n grid of pitch ``du`` (m) at ``wavelength`` (m).

    Plain cell coverages (each cell's exact open area fraction) by default: the pupil itself, for
    pupil-domain metrics (MTF, Strehl). With ``edge`` (:func:`icl.optics.sampling.edge_filter`) the
    coverages are taken on finer cells and filtered onto the grid, which makes the grid's far field the
    pupil's own on the filter's band (what the far-field engine uses); they then reach ``edge.spread``
    cells beyond each aperture.
    """
    params = pupil_params(pupil)
    if edge is not None:
        params.edge_taps, params.edge_sub = list(edge.taps), edge.sub
    return core.build_pupil(params, n, du, wavelength)


def circle_overlap(r1: float, r2: float, d: float) -> float:
    """Area common to two disks of radii r1, r2 whose centres are d apart."""
    if d >= r1 + r2:
        return 0.0
    if d <= abs(r1 - r2):
        return math.pi * min(r1, r2) ** 2
    a1 = r1 * r1 * math.acos((d * d + r1 * r1 - r2 * r2) / (2 * d * r1))
    a2 = r2 * r2 * math.acos((d * d + r2 * r2 - r1 * r1) / (2 * d * r2))
    return a1 + a2 - 0.5 * math.sqrt((-d + r1 + r2) * (d + r1 - r2) * (d - r1 + r2) * (d + r1 + r2))


def blocked_fraction(pupil: Pupil) -> float:
    """Exact fraction of the pupil area that is opaque (a black hole inside the pupil)."""
    icl = pupil.icl
    if icl is None or icl.hole != "black" or icl.hole_mm == 0:
        return 0.0
    rp, rh = pupil.diameter_mm / 2, icl.hole_mm / 2
    return circle_overlap(rp, rh, math.hypot(*icl.decentre_mm)) / (math.pi * rp * rp)

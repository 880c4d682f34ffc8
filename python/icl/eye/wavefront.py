"""Rays from a distant point source through the entrance pupil, spots on the retina, and the OPD on the
exit-pupil reference sphere.

Field angles: a source at (x_arcmin, y_arcmin) on the observation-angle plane sends light travelling along
(-tan x, -tan y, 1): from the right (+x) towards the left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icl import linalg
from icl.eye.model import Eye, Implant, index_after, path_steps
from icl.eye.paraxial import Paraxial, paraxial
from icl.eye.trace import Rays, TraceOptions, to_plane, trace

ARCMIN = math.pi / (180.0 * 60.0)
START_Z = -2.0  # mm: a plane in air in front of the cornea where rays start


def direction(field_arcmin: tuple[float, float]) -> np.ndarray:
    """Unit propagation direction of light from a source at ``field_arcmin``."""
    d = np.array([-math.tan(field_arcmin[0] * ARCMIN), -math.tan(field_arcmin[1] * ARCMIN), 1.0])
    return d / linalg.norm(d)


def pupil_rays(u: np.ndarray, v: np.ndarray, field_arcmin: tuple[float, float], entrance_pupil_z: float,
               weight: np.ndarray | float = 1.0) -> Rays:
    """Collimated rays aimed at entrance-pupil points (u, v) (mm), starting on the plane ``START_Z``.

    Each ray's optical path starts at the projection of its start point on the direction, so that all rays
    start on one plane wavefront.
    """
    d = direction(field_arcmin)
    s = (entrance_pupil_z - START_Z) / d[2]
    x = np.asarray(u, dtype=float) - s * d[0]
    y = np.asarray(v, dtype=float) - s * d[1]
    rays = Rays.start(x, y, np.full(np.shape(x), START_Z), d[0], d[1], d[2], weight)
    rays.opl[:] = rays.x * d[0] + rays.y * d[1] + rays.z * d[2]
    return rays


@dataclass(frozen=True)
class Reference:
    """Reference sphere of one field: centre on the retina, through the exit pupil centre (mm)."""

    centre: np.ndarray
    exit_pupil: np.ndarray
    chief_opl: float

    @property
    def radius(self) -> float:
        """Distance from the exit pupil centre to the reference image point."""
        return linalg.norm(self.centre - self.exit_pupil)


def to_sphere(rays: Rays, ref: Reference, index: float) -> Rays:
    """Move alive rays (in the last medium) to the reference sphere (the root on the exit-pupil side)."""
    out = rays.copy()
    a = out.alive
    px, py, pz = out.x[a] - ref.centre[0], out.y[a] - ref.centre[1], out.z[a] - ref.centre[2]
    l, m, n = out.l[a], out.m[a], out.n[a]
    b = px * l + py * m + pz * n
    c = px * px + py * py + pz * pz - ref.radius**2
    disc = np.maximum(b * b - c, 0.0)
    t = -b - np.sqrt(disc)
    out.x[a] += t * l
    out.y[a] += t * m
    out.z[a] += t * n
    out.opl[a] += index * t
    return out


def host_reference(eye: Eye, field_arcmin: tuple[float, float], wavelength_nm: float,
                   par: Paraxial | None = None) -> Reference:
    """Reference of the host eye (no implant): its chief ray's point on the retina, its exit pupil."""
    par = par or paraxial(eye, None, wavelength_nm)
    chief = pupil_rays(np.zeros(1), np.zeros(1), field_arcmin, par.entrance_pupil_z)
    opts = TraceOptions(apertures=False, fresnel=False)
    out = trace(path_steps(eye, None, "host", wavelength_nm), chief, opts)
    if not out.alive[0]:
        raise ValueError("the chief ray of the host eye does not reach the retina")
    n_img = index_after(eye, wavelength_nm)
    at_retina = to_plane(out, eye.retina_z, n_img)
    # Exit pupil centre: where the chief ray crosses the paraxial exit-pupil plane (behind or in front).
    at_xp = to_plane(out, par.exit_pupil_z, n_img)
    centre = np.array([at_retina.x[0], at_retina.y[0], at_retina.z[0]])
    xp = np.array([at_xp.x[0], at_xp.y[0], at_xp.z[0]])
    ref = Reference(centre, xp, 0.0)
    chief_opl = float(to_sphere(out, ref, n_img).opl[0])
    return Reference(centre, xp, chief_opl)


def trace_path(eye: Eye, implant: Implant | None, path: str, rays: Rays, wavelength_nm: float,
               options: TraceOptions = TraceOptions()) -> Rays:
    """Trace ``rays`` along one path up to the last surface before the retina."""
    return trace(path_steps(eye, implant, path, wavelength_nm), rays, options)


def opd(eye: Eye, implant: Implant | None, path: str, u: np.ndarray, v: np.ndarray,
        field_arcmin: tuple[float, float], wavelength_nm: float, options: TraceOptions = TraceOptions(),
        ref: Reference | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optical path difference (mm) on the host reference sphere for entrance-pupil points (u, v).

    Returns ``(opd_mm, weight, flags)``; OPD is this ray's path minus the host chief ray's path, so the
    pistons of different paths are comparable.
    """
    par = paraxial(eye, None, wavelength_nm)
    ref = ref or host_reference(eye, field_arcmin, wavelength_nm, par)
    rays = pupil_rays(u, v, field_arcmin, par.entrance_pupil_z)
    out = trace_path(eye, implant, path, rays, wavelength_nm, options)
    out = to_sphere(out, ref, index_after(eye, wavelength_nm))
    return out.opl - ref.chief_opl, out.w, out.flags


def spot(eye: Eye, implant: Implant | None, path: str, n_rings: int, field_arcmin: tuple[float, float],
         wavelength_nm: float, options: TraceOptions = TraceOptions()) -> tuple[np.ndarray, np.ndarray]:
    """Retinal (x, y) (mm) of alive rays on a square grid filling the entrance pupil (``n_rings`` per radius)."""
    par = paraxial(eye, None, wavelength_nm)
    r = eye.pupil_diameter_mm / 2.0
    g = (np.arange(2 * n_rings + 1) - n_rings) * (r / n_rings)
    u, v = np.meshgrid(g, g)
    keep = u**2 + v**2 <= r * r * (1 + 1e-12)
    rays = pupil_rays(u[keep], v[keep], field_arcmin, par.entrance_pupil_z)
    out = to_plane(trace_path(eye, implant, path, rays, wavelength_nm, options), eye.retina_z,
                   index_after(eye, wavelength_nm))
    a = out.alive
    return out.x[a], out.y[a]


def rms_spot(x: np.ndarray, y: np.ndarray) -> float:
    """RMS radius about the centroid."""
    return float(np.sqrt(np.mean((x - x.mean()) ** 2 + (y - y.mean()) ** 2)))

"""Second ray path: the same thick eye (and centred ICL) rebuilt in optiland and compared with this tracer.

optiland (an open sequential tracer, the optional extra ``check``) receives the surfaces, conics, vertex
positions and indices of the data package at one wavelength; nothing of this package's tracer is shared.
Compared: power, effective focal length and the paraxial image (back focal position) from optiland's own
paraxial trace; the RMS spot and the optical path differences of identical rays on the retina (curved
or plane). What optiland cannot express here is said, not approximated: the ICL's central hole and its
wall (a sequential surface has one clear aperture; the hole is a second path), so the comparison covers
the lens path (rays through the optic outside the hole are the same in both, rays through the hole
would miss it in this package's tracer and are left out of both); decentred or tilted elements are
refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icl.eye.model import Eye, Implant, path_steps
from icl.eye.paraxial import paraxial
from icl.eye.trace import Step, TraceOptions, trace
from icl.eye.wavefront import pupil_rays

NOT_EXPRESSED = ("the ICL's central hole and its wall (a second light path; optiland's sequential surface "
                 "has a single clear aperture): only the lens path is compared")


def available() -> bool:
    """Whether optiland can be imported."""
    try:
        import optiland  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str:
    """Installed optiland version."""
    from importlib.metadata import version as v

    return v("optiland")


def _centred_steps(eye: Eye, implant: Implant | None, wavelength_nm: float) -> list[Step]:
    steps = path_steps(eye, implant, "lens" if implant is not None else "host", wavelength_nm)
    for s in steps:
        pl = s.placement
        if (pl.decentre_x, pl.decentre_y, pl.tilt_x_deg, pl.tilt_y_deg) != (0.0, 0.0, 0.0, 0.0):
            raise ValueError(f"surface {s.surface.name}: decentred or tilted elements are not compared")
        if any(s.surface.asphere):
            raise ValueError(f"surface {s.surface.name}: aspheric terms are not passed to optiland here")
    return steps


def build(eye: Eye, implant: Implant | None = None, wavelength_nm: float = 550.0):
    """Rebuild the centred eye (with the implant's optic, without its hole) as an optiland ``Optic``.

    Surfaces in the order light meets them, indices at ``wavelength_nm`` as ideal materials, the stop at
    the crystalline lens front (the iris plane of the data package), the image surface on the retina
    (its vertex and radius). Entrance pupil diameter from the eye.
    """
    from optiland.materials import IdealMaterial
    from optiland.optic import Optic

    steps = _centred_steps(eye, implant, wavelength_nm)
    z = [s.placement.z + s.surface.offset for s in steps] + [eye.retina_z]
    o = Optic()
    o.surfaces.add(index=0, radius=math.inf, thickness=math.inf)
    for i, s in enumerate(steps):
        o.surfaces.add(index=i + 1, radius=s.surface.radius, conic=s.surface.conic, thickness=z[i + 1] - z[i],
                       material=IdealMaterial(s.n2), is_stop=s.surface.name == "lens_front")
    # The image surface keeps the vitreous behind it, so that rays leave it unrefracted.
    o.surfaces.add(index=len(steps) + 1, radius=eye.retina_radius_mm, material=IdealMaterial(steps[-1].n2))
    o.set_aperture(aperture_type="EPD", value=eye.pupil_diameter_mm)
    o.fields.set_type(field_type="angle")
    o.fields.add(y=0)
    o.wavelengths.add(wavelength_nm / 1000.0, is_primary=True)
    return o


@dataclass(frozen=True)
class Comparison:
    """Both tracers on the same eye, wavelength and rays (lengths in mm unless named)."""

    power_d: tuple[float, float]
    efl_mm: tuple[float, float]
    back_focal_z_mm: tuple[float, float]
    rms_spot_um: tuple[float, float]
    max_hit_difference_um: float
    max_opd_difference_waves: float
    rays: int
    not_expressed: str | None
    optiland_version: str

    def to_dict(self) -> dict:
        """JSON form; pairs are (icl, optiland)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def uniform_pupil(n_rays: int, diameter_mm: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``n_rays`` points uniform over the pupil disk (area-uniform radius, uniform angle)."""
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(0.0, 1.0, n_rays)) * diameter_mm / 2.0
    phi = rng.uniform(0.0, 2.0 * math.pi, n_rays)
    return r * np.cos(phi), r * np.sin(phi)


def _rms(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((x - x.mean()) ** 2 + (y - y.mean()) ** 2))) * 1e3


def compare(eye: Eye, implant: Implant | None = None, wavelength_nm: float = 550.0,
            u: np.ndarray | None = None, v: np.ndarray | None = None) -> Comparison:
    """Trace the same on-axis collimated rays (pupil points ``u, v``, mm) through both tracers to the retina.

    Rays start on the plane of the cornea's vertex (z = 0) parallel to the axis in both. Without ``u, v``:
    1e5 uniform random pupil points. Rays of the implant's hole are dropped from both (not expressed).
    OPD: each ray's optical path from the start plane to the retina minus the path of the ray nearest the
    axis, compared ray by ray.
    """
    from optiland.rays import RealRays

    if u is None or v is None:
        u, v = uniform_pupil(100_000, eye.pupil_diameter_mm)
    u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    note = None
    if implant is not None and implant.hole_mm > 0:
        keep = np.hypot(u, v) > implant.hole_mm / 2.0 + 0.02  # clear of the hole (its image is near the axis)
        u, v, note = u[keep], v[keep], NOT_EXPRESSED
    steps = _centred_steps(eye, implant, wavelength_nm) + [eye.retina_step(wavelength_nm)]
    rays = pupil_rays(u, v, (0.0, 0.0), 0.0)
    out = trace(steps, rays, TraceOptions(apertures=False, fresnel=False))
    if np.any(out.flags != 0):
        raise ValueError(f"{int(np.sum(out.flags != 0))} rays fail in this package's tracer")
    o = build(eye, implant, wavelength_nm)
    n = u.size
    rr = RealRays(u, v, np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n), np.ones(n),
                  np.full(n, wavelength_nm / 1000.0))
    o.surfaces.trace(rr)
    ox, oy, opl = (np.asarray(a, dtype=float) for a in (rr.x, rr.y, rr.opd))
    ours = paraxial(eye, implant, wavelength_nm)
    efl = -float(o.paraxial.f1())  # object side, in air: the effective focal length
    centre = int(np.argmin(np.hypot(u, v)))
    opd_icl, opd_opt = out.opl - out.opl[centre], opl - opl[centre]
    return Comparison(
        power_d=(ours.power_d, 1000.0 / efl),
        efl_mm=(ours.efl_mm, efl),
        back_focal_z_mm=(ours.back_focal_z, _axis_crossing(o, wavelength_nm)),
        rms_spot_um=(_rms(out.x, out.y), _rms(ox, oy)),
        max_hit_difference_um=float(np.max(np.hypot(out.x - ox, out.y - oy))) * 1e3,
        max_opd_difference_waves=float(np.max(np.abs(opd_icl - opd_opt))) / (wavelength_nm * 1e-6),
        rays=int(n),
        not_expressed=note,
        optiland_version=version(),
    )


def _axis_crossing(o, wavelength_nm: float, height_mm: float = 1e-4) -> float:
    """Paraxial image from optiland's own real trace: where a ray 1e-4 mm off the axis crosses it (mm).

    Its aberration is below 1e-9 mm at this height.
    """
    from optiland.rays import RealRays

    one, zero = np.ones(1), np.zeros(1)
    rr = RealRays(zero, one * height_mm, zero, zero, zero, one, one, one * wavelength_nm / 1000.0)
    o.surfaces.trace(rr)
    y, z, m, n = (float(np.asarray(a)[0]) for a in (rr.y, rr.z, rr.M, rr.N))
    return z - y * n / m

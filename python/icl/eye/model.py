"""Thick eye: a schematic eye, a thick ICL placed in it, and the light paths through them.

Lengths in mm along the eye's optical axis +z (cornea front vertex at z = 0), +x right, +y up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from icl import linalg
from icl.eye.media import AIR, AQUEOUS, CORNEA, LENS, VITREOUS, Medium
from icl.eye.trace import Placement, Step, Surface

PRIMARY_PATHS = ("lens", "hole", "edge")
GHOST_PATHS = ("ghost_icl", "ghost_icl_lens")
PATHS = PRIMARY_PATHS + GHOST_PATHS


@dataclass(frozen=True)
class Eye:
    """Centred schematic eye: surfaces with the medium behind each, and where the stop and retina lie.

    Parameters
    ----------
    surfaces : tuple of (Surface, Medium)
        Refracting surfaces in order with vertex z in ``Surface.offset`` and the medium after each.
    retina_z : float
        Axial position of the retina's vertex (mm).
    stop_z : float
        Axial position of the iris plane (mm); the entrance pupil is its image through the surfaces in front.
    pupil_diameter_mm : float
        Entrance pupil diameter (mm).
    name : str
        Label.
    placements : tuple of Placement or None
        Rigid decentre and tilt of each surface about its own vertex (``z`` of each placement is added to
        the vertex position); ``None`` for a centred eye. Paraxial constants use the centred system.
    retina_radius_mm : float
        Vertex radius of the retina (mm; negative: concave towards the incoming light, centre in front of
        it); ``inf`` for a plane. Used where rays land on the retina (:meth:`retina_step`); the far-field
        engine works in angles and does not depend on it.

    """

    surfaces: tuple[tuple[Surface, Medium], ...]
    retina_z: float
    stop_z: float
    pupil_diameter_mm: float = 3.2
    name: str = "eye"
    placements: tuple[Placement, ...] | None = None
    retina_radius_mm: float = math.inf

    def media(self) -> list[Medium]:
        """Medium in front of each surface, then the last medium."""
        return [AIR] + [m for _, m in self.surfaces]

    def surface(self, name: str) -> Surface:
        """Surface by name."""
        for s, _ in self.surfaces:
            if s.name == name:
                return s
        raise KeyError(name)

    def steps(self, wavelength_nm: float) -> list[Step]:
        """The eye's own surfaces as placed steps (centred, untilted)."""
        media = self.media()
        out = []
        for i, (s, _) in enumerate(self.surfaces):
            n1, n2 = media[i].index(wavelength_nm), media[i + 1].index(wavelength_nm)
            if self.placements is None:
                out.append(Step(s, Placement(), n1, n2))
            else:  # pivot on the surface's own vertex
                pl = self.placements[i]
                out.append(Step(replace(s, offset=0.0), replace(pl, z=pl.z + s.offset), n1, n2))
        return out

    def retina_step(self, wavelength_nm: float) -> Step:
        """Return the retina as a placed surface (vitreous on both sides: no refraction) where rays stop.

        A ray meets it on the sheet through the vertex, ahead of the ray (the tracer's root choice), or is
        flagged missed: a concave retina is never hit on its far side.
        """
        n = self.surfaces[-1][1].index(wavelength_nm)
        return Step(Surface("retina", self.retina_radius_mm, offset=self.retina_z), Placement(), n, n)

    def with_vitreous(self, retina_z: float) -> Eye:
        """Same eye with the retina at ``retina_z`` (axial myopia or hyperopia)."""
        return replace(self, retina_z=retina_z)


def navarro_1985(pupil_diameter_mm: float = 3.2, vitreous_mm: float = 16.40398) -> Eye:
    """Navarro, Santamaria & Bescos (1985) unaccommodated (0 D) schematic eye.

    Radii 7.72 / 6.50 / 10.20 / -6.00 mm, conic constants -0.26 / 0 / -3.1316 / -1, thicknesses
    0.55 / 3.05 / 4.00 mm, vitreous ``vitreous_mm`` (the paper's axial length 24.00398 mm), iris at the front
    vertex of the crystalline lens; media from :mod:`icl.eye.media`.
    """
    surfaces = (
        (Surface("cornea_front", 7.72, -0.26, offset=0.0), CORNEA),
        (Surface("cornea_back", 6.50, 0.0, offset=0.55), AQUEOUS),
        (Surface("lens_front", 10.20, -3.1316, offset=3.60), LENS),
        (Surface("lens_back", -6.00, -1.0, offset=7.60), VITREOUS),
    )
    return Eye(surfaces, retina_z=7.60 + vitreous_mm, stop_z=3.60, pupil_diameter_mm=pupil_diameter_mm,
               name="navarro_1985")


def escudero_sanz_1999(pupil_diameter_mm: float = 3.2) -> Eye:
    """Escudero-Sanz & Navarro (1999) wide-angle eye (JOSA A 16(8):1881-1891).

    Navarro 1985's surfaces and media, vitreous 16.3203 mm (axial length 23.9203 mm) and a spherical
    retina of radius -12 mm.
    """
    eye = navarro_1985(pupil_diameter_mm, vitreous_mm=16.3203)
    return replace(eye, retina_radius_mm=-12.0, name="escudero_sanz_1999")


def stigmatic_reduced_eye(pupil_diameter_mm: float = 3.2, radius_mm: float = 5.55, index: float = 1.336,
                          anterior_chamber_mm: float = 3.6, lens_radius_mm: float = 1e9) -> Eye:
    """A single refracting ellipsoid with k = -1/n^2, free of aberration on axis for a distant object.

    Used to isolate the ICL's own effect in the comparisons with the thin-phase model. A flat dummy
    "lens front" at ``anterior_chamber_mm`` (same medium on both sides) gives the ICL a surface to vault over.
    """
    water = Medium("reduced_eye_medium", index)
    front = Surface("cornea_front", radius_mm, -1.0 / index**2, offset=0.0)
    dummy = Surface("lens_front", lens_radius_mm, 0.0, offset=anterior_chamber_mm)
    focal = index * radius_mm / (index - 1.0)
    return Eye(((front, water), (dummy, water)), retina_z=focal, stop_z=anterior_chamber_mm - 0.5,
               pupil_diameter_mm=pupil_diameter_mm, name="stigmatic_reduced")


@dataclass(frozen=True)
class Implant:
    """Thick ICL (synthetic design: no manufacturer surface data are used).

    Parameters
    ----------
    front, back : Surface
        Optic surfaces in the implant frame (``offset`` along its axis; back vertex at 0, front at -thickness).
    thickness_mm : float
        Centre thickness.
    material : Medium
        Implant material (constant index; collamer dispersion is not modelled).
    optic_zone_mm : float
        Optic zone diameter.
    hole_mm : float
        Central hole diameter (0 for none).
    decentre_mm : tuple of float
        Decentre of the implant axis (x, y).
    tilt_deg : tuple of float
        Tilt about x and y (degrees).
    rotation_deg : float
        Rotation about the implant's own axis (degrees).
    vault_mm : float
        Vault: distance along the eye's optical axis (+z), at the implant's centre (x, y), from the implant
        back surface to the crystalline lens front surface. Not the anterior chamber depth.
    hole_medium : Medium or None
        What fills the hole; None: the eye's aqueous humour, which also surrounds the implant either way.

    """

    front: Surface
    back: Surface
    thickness_mm: float
    material: Medium
    optic_zone_mm: float = 6.0
    hole_mm: float = 0.36
    decentre_mm: tuple[float, float] = (0.0, 0.0)
    tilt_deg: tuple[float, float] = (0.0, 0.0)
    rotation_deg: float = 0.0
    vault_mm: float = 0.5
    hole_medium: Medium | None = None

    def placement(self, eye: Eye) -> Placement:
        """Rigid placement: pivot at the back vertex, vault measured along +z at the implant centre."""
        lens_front = eye.surface("lens_front")
        r = math.hypot(*self.decentre_mm)
        z_lens = lens_front.offset + float(lens_front.sag(r))
        return Placement(self.decentre_mm[0], self.decentre_mm[1], z_lens - self.vault_mm,
                         self.tilt_deg[0], self.tilt_deg[1], self.rotation_deg)


def synthetic_icl(power_in_aqueous_d: float, thickness_mm: float = 0.1, index: float = 1.45,
                  back_radius_mm: float = 10.5, wavelength_nm: float = 550.0, **kw) -> Implant:
    """Synthetic meniscus ICL with a chosen thick-lens power in aqueous (D) at ``wavelength_nm``.

    The back radius follows the crystalline lens (vaulting over it); the front radius is solved from the
    thick-lens power formula P = P1 + P2 - t P1 P2 / n.
    """
    na = AQUEOUS.index(wavelength_nm)
    p2 = (na - index) / back_radius_mm  # back surface power (1/mm)
    p = power_in_aqueous_d * 1e-3
    # Solve P = P1 + P2 - (t/n) P1 P2 for P1.
    p1 = (p - p2) / (1.0 - thickness_mm / index * p2)
    front_radius = (index - na) / p1 if p1 != 0 else math.inf
    return Implant(Surface("icl_front", front_radius, offset=-thickness_mm),
                   Surface("icl_back", back_radius_mm, offset=0.0), thickness_mm,
                   Medium("collamer_synthetic", index), **kw)


def _insert(eye: Eye, wavelength_nm: float, icl_steps: list[Step]) -> list[Step]:
    """The eye's steps with the implant's steps just in front of the crystalline lens."""
    steps = eye.steps(wavelength_nm)
    i = [s.surface.name for s in steps].index("lens_front")
    return steps[:i] + icl_steps + steps[i:]


def path_steps(eye: Eye, implant: Implant | None, path: str, wavelength_nm: float) -> list[Step]:
    """Surfaces met along one light path, from air to the last surface in front of the retina.

    ``lens``: through the optic zone outside the hole. ``hole``: through the hole in aqueous (its wall bounds
    the segment). ``edge``: outside the optic zone (aqueous; the synthetic implant has no transition zone).
    ``ghost_icl``: reflected at the implant back then front surface. ``ghost_icl_lens``: reflected at the
    crystalline lens front then the implant back surface. With ``implant=None`` the host eye alone.
    """
    if implant is None:
        return eye.steps(wavelength_nm)
    steps = eye.steps(wavelength_nm)
    na = steps[[s.surface.name for s in steps].index("lens_front")].n1  # aqueous around the implant
    nh = na if implant.hole_medium is None else implant.hole_medium.index(wavelength_nm)
    ni = implant.material.index(wavelength_nm)
    rh, roz = implant.hole_mm / 2.0, implant.optic_zone_mm / 2.0
    pl = implant.placement(eye)
    f, b = implant.front, implant.back
    hole_wall = (rh, -1) if rh > 0 else (0.0, 0)
    lens_in = [Step(replace(f, aperture=(rh, roz)), pl, na, ni),
               Step(replace(b, aperture=(0.0, roz), wall=hole_wall), pl, ni, na)]
    if path == "lens":
        return _insert(eye, wavelength_nm, lens_in)
    if path == "hole":
        if rh == 0:
            raise ValueError("the implant has no hole")
        return _insert(eye, wavelength_nm, [Step(replace(f, aperture=(0.0, rh)), pl, na, nh),
                                             Step(replace(b, wall=(rh, +1)), pl, nh, na)])
    if path == "edge":
        return _insert(eye, wavelength_nm, [Step(replace(f, aperture=(roz, math.inf)), pl, na, na),
                                             Step(replace(b, wall=(roz, -1)), pl, na, na)])
    if path == "ghost_icl":
        return _insert(eye, wavelength_nm, [
            lens_in[0],
            Step(replace(b, aperture=(0.0, roz), wall=hole_wall, reflect=True), pl, ni, na),
            Step(replace(f, aperture=(rh, roz), wall=hole_wall, reflect=True), pl, ni, na),
            Step(replace(b, aperture=(0.0, roz), wall=hole_wall), pl, ni, na)])
    if path == "ghost_icl_lens":
        steps = _insert(eye, wavelength_nm, lens_in)
        i = [s.surface.name for s in steps].index("lens_front")
        lf = steps[i]
        bounce = [Step(replace(lf.surface, reflect=True), lf.placement, lf.n1, lf.n2),
                  Step(replace(b, aperture=(rh, roz), reflect=True), pl, na, ni)]
        return steps[:i] + bounce + steps[i:]
    raise ValueError(f"unknown path {path!r}; known: {list(PATHS)}")


def index_after(eye: Eye, wavelength_nm: float) -> float:
    """Index of the medium in front of the retina."""
    return eye.surfaces[-1][1].index(wavelength_nm)


def paraxial_matrix(steps: list[Step]) -> np.ndarray:
    """2x2 reduced ray-transfer matrix (y, n u) from the first to the last vertex of centred ``steps``."""
    mat = np.eye(2)
    prev = None
    for s in steps:
        z = s.placement.z + s.surface.offset
        if prev is not None:
            mat = linalg.matmul([[1.0, (z - prev) / s.n1], [0.0, 1.0]], mat)
        power = (s.n2 - s.n1) * s.surface.curvature
        mat = linalg.matmul([[1.0, 0.0], [-power, 1.0]], mat)
        prev = z
    return mat

"""The thick-eye data package: ``eye.json``, ``implant.json``, ``illumination.json``, ``detector.json``.

Every physical parameter is ``{value, unit, source, uncertainty, status}``; status is one of ``measured``,
``documented``, ``synthetic``, ``estimated``, ``unknown`` (schema: ``cases/eye/package.schema.json``).
:func:`load_package` validates the four files, refuses an ``unknown`` value wherever the model needs it,
checks the geometry (surface order, thicknesses, hole inside the optic zone, implant clear of the cornea
and the crystalline lens) and builds the :class:`~icl.eye.model.Eye`, :class:`~icl.eye.model.Implant`,
sources and detector. Every error is an :class:`~icl.errors.InputError` naming the file and the field.

:func:`example_package` builds the example in ``cases/examples/eye/`` (Navarro 1985 eye lengthened to
8 D of myopia, synthetic meniscus ICL with a 0.36 mm hole); ``python -m icl.eye.package DIR`` writes it.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from icl._paths import cases_dir
from icl.errors import InputError
from icl.eye.media import NAVARRO_REFERENCE, Medium
from icl.eye.model import Eye, Implant, navarro_1985
from icl.eye.trace import Placement, Surface
from icl.io import load_json, write_json
from icl.optics.model import Detector, Extent, Source

FILES = ("eye", "implant", "illumination", "detector")
EYE_SURFACES = ("cornea_front", "cornea_back", "lens_front", "lens_back")
NAVARRO_1985 = "Navarro, Santamaria & Bescos (1985) JOSA A 2(8):1273-1281"


@dataclass(frozen=True)
class Package:
    """A loaded data package.

    Attributes
    ----------
    eye : Eye
        Host eye (surfaces, media, iris, retina, entrance pupil diameter).
    implant : Implant
        The thick ICL placed in it.
    sources : tuple of Source
        Point sources (field angle in arcmin, flux, spectrum).
    detector : Detector
        Detector grid on the observation-angle plane.
    files : dict
        Path of each of the four files.
    data : dict
        The four parsed JSON objects.

    """

    eye: Eye
    implant: Implant
    sources: tuple[Source, ...]
    detector: Detector
    files: dict[str, str]
    data: dict[str, dict]


@lru_cache(maxsize=1)
def schema() -> dict:
    """The JSON schema of the four files (``$defs`` ``eye``, ``implant``, ``illumination``, ``detector``)."""
    return json.loads((cases_dir() / "eye" / "package.schema.json").read_text(encoding="utf-8"))


def _validate(obj: Any, part: str, file: str) -> None:
    import jsonschema

    sch = schema()
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{part}", "$defs": sch["$defs"]})
    errors = list(validator.iter_errors(obj))
    if errors:
        # The deepest error names the field best; ties broken by path for a deterministic message.
        err = max(errors, key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path]))
        err = jsonschema.exceptions.best_match([e for e in errors if e.absolute_path == err.absolute_path])
        field = ".".join(str(p) for p in err.absolute_path) or None
        raise InputError(err.message, file, field)


class _Reader:
    """Reads required parameter values from one file, naming the field of every error."""

    def __init__(self, obj: dict, file: str):
        self.obj, self.file = obj, file

    def node(self, dotted: str) -> Any:
        cur: Any = self.obj
        for key in dotted.split("."):
            cur = cur[int(key)] if isinstance(cur, list) else cur[key]
        return cur

    def value(self, dotted: str) -> Any:
        p = self.node(dotted)
        if p["status"] == "unknown" or p["value"] is None:
            raise InputError(
                "value is unknown but the model needs it: give a value with its source and status",
                self.file,
                f"{dotted}.value",
            )
        return p["value"]

    def length(self, dotted: str, *, positive: bool = False, nonnegative: bool = False) -> float:
        v = float(self.value(dotted))
        if positive and not v > 0:
            raise InputError(f"must be > 0, got {v}", self.file, f"{dotted}.value")
        if nonnegative and v < 0:
            raise InputError(f"must be >= 0, got {v}", self.file, f"{dotted}.value")
        return v

    def radius(self, dotted: str) -> float:
        v = self.value(dotted)
        if v == "inf":
            return math.inf
        if v == 0:
            raise InputError(
                'radius 0 is not a surface; write "inf" for a plane', self.file, f"{dotted}.value"
            )
        return float(v)

    def shape(self, where: str, name: str, offset: float = 0.0) -> Surface:
        a = tuple(float(x) for x in self.value(f"{where}.asphere"))
        radius = self.radius(f"{where}.radius")
        if math.isinf(radius) and any(a):
            raise InputError("an aspheric plane is not supported", self.file, f"{where}.asphere.value")
        return Surface(name, radius, float(self.value(f"{where}.conic")), a, offset=offset)

    def medium(self, where: str, name: str) -> Medium:
        m = self.node(where)
        if m["model"] == "constant":
            n = float(self.value(f"{where}.index"))
            if not 1.0 <= n <= 3.0:
                raise InputError(f"index must lie in [1, 3], got {n}", self.file, f"{where}.index.value")
            return Medium(name, constant=n)
        return Medium(name, reference=tuple(float(x) for x in self.value(f"{where}.reference_indices")))


def _load(path: Path, part: str) -> dict:
    obj = load_json(path)
    _validate(obj, part, str(path))
    return obj


def load_package(
    eye: str | Path, implant: str | Path, illumination: str | Path, detector: str | Path
) -> Package:
    """Read, validate and build a data package from its four files.

    Raises
    ------
    InputError
        Naming the file and the field at fault (schema, unknown required value, or geometry).

    """
    paths = {
        "eye": Path(eye),
        "implant": Path(implant),
        "illumination": Path(illumination),
        "detector": Path(detector),
    }
    data = {k: _load(p, k) for k, p in paths.items()}
    files = {k: str(p) for k, p in paths.items()}
    e = _build_eye(_Reader(data["eye"], files["eye"]))
    imp = _build_implant(_Reader(data["implant"], files["implant"]), e)
    sources = _build_sources(_Reader(data["illumination"], files["illumination"]))
    r = _Reader(data["detector"], files["detector"])
    det = Detector(int(r.value("n")), float(r.value("pitch_arcsec")))
    return Package(e, imp, sources, det, files, data)


def load_package_dir(folder: str | Path) -> Package:
    """:func:`load_package` on ``folder/{eye,implant,illumination,detector}.json``."""
    folder = Path(folder)
    return load_package(*(folder / f"{name}.json" for name in FILES))


def _build_eye(r: _Reader) -> Eye:
    media = {name: r.medium(f"media.{name}", name) for name in ("cornea", "aqueous", "lens", "vitreous")}
    expected_after = {
        "cornea_front": "cornea",
        "cornea_back": "aqueous",
        "lens_front": "lens",
        "lens_back": "vitreous",
    }
    surfaces, placements, prev = [], [], -math.inf
    for name in EYE_SURFACES:
        where = f"surfaces.{name}"
        z = r.length(f"{where}.vertex_z")
        if name == "cornea_front" and z != 0.0:
            raise InputError(
                "the cornea front vertex is the origin of z: must be 0", r.file, f"{where}.vertex_z.value"
            )
        if not z > prev:
            raise InputError(
                f"vertex must lie behind the previous surface's ({prev} mm), got {z}",
                r.file,
                f"{where}.vertex_z.value",
            )
        prev = z
        after = r.node(f"{where}.medium_after")
        if after != expected_after[name]:
            raise InputError(
                f"the medium behind {name} is {expected_after[name]!r}, got {after!r}",
                r.file,
                f"{where}.medium_after",
            )
        dx, dy = (float(v) for v in r.value(f"{where}.decentre"))
        tx, ty = (float(v) for v in r.value(f"{where}.tilt"))
        surfaces.append((r.shape(where, name, offset=z), media[after]))
        placements.append(Placement(dx, dy, 0.0, tx, ty, 0.0))
    stop = r.length("iris.plane_z")
    z_cb, z_lb = surfaces[1][0].offset, surfaces[3][0].offset
    if not z_cb < stop < z_lb:
        raise InputError(
            f"the iris must lie between the cornea back ({z_cb} mm) and the lens back ({z_lb} mm)",
            r.file,
            "iris.plane_z.value",
        )
    pupil = r.length("iris.entrance_pupil_diameter", positive=True)
    retina = r.length("retina.vertex_z")
    if not retina > z_lb:
        raise InputError(
            f"the retina must lie behind the lens back ({z_lb} mm)", r.file, "retina.vertex_z.value"
        )
    centred = all(p == Placement() for p in placements)
    return Eye(
        tuple(surfaces),
        retina_z=retina,
        stop_z=stop,
        pupil_diameter_mm=pupil,
        name=r.node("name"),
        placements=None if centred else tuple(placements),
    )


def _build_implant(r: _Reader, eye: Eye) -> Implant:
    t = r.length("centre_thickness", positive=True)
    front = r.shape("front", "icl_front", offset=-t)
    back = r.shape("back", "icl_back", offset=0.0)
    oz = r.length("optic_zone_diameter", positive=True)
    hole = r.length("hole.diameter", nonnegative=True)
    if hole >= oz:
        raise InputError(
            f"the hole ({hole} mm) must be smaller than the optic zone ({oz} mm)",
            r.file,
            "hole.diameter.value",
        )
    dx, dy = (float(v) for v in r.value("placement.decentre"))
    tx, ty = (float(v) for v in r.value("placement.tilt"))
    vault = r.length("vault.distance", positive=True)
    imp = Implant(
        front,
        back,
        t,
        r.medium("material", "implant_material"),
        optic_zone_mm=oz,
        hole_mm=hole,
        decentre_mm=(dx, dy),
        tilt_deg=(tx, ty),
        rotation_deg=float(r.value("placement.rotation")),
        vault_mm=vault,
        hole_medium=eye.surfaces[1][1],
    )
    # The implant must sit in the aqueous between the cornea back and the crystalline lens.
    z_front = imp.placement(eye).z - t
    z_cb = eye.surface("cornea_back").offset
    if not z_front > z_cb:
        raise InputError(
            f"the implant front vertex ({z_front:.4f} mm) lies in front of the cornea back "
            f"({z_cb} mm): vault or thickness too large",
            r.file,
            "vault.distance.value",
        )
    for surf, name in ((front, "front"), (back, "back")):
        if not math.isinf(surf.radius) and abs(surf.radius) * 2 < oz and surf.conic >= -1:
            raise InputError(
                f"radius {surf.radius} mm cannot carry a {oz} mm optic zone", r.file, f"{name}.radius.value"
            )
    return imp


def _build_sources(r: _Reader) -> tuple[Source, ...]:
    out, seen = [], set()
    for i, s in enumerate(r.obj["sources"]):
        where = f"sources.{i}"
        if s["id"] in seen:
            raise InputError(f"duplicate source id {s['id']!r}", r.file, f"{where}.id")
        seen.add(s["id"])
        spectrum = tuple((float(lam), float(w)) for lam, w in r.value(f"{where}.spectrum"))
        out.append(
            Source(
                s["id"],
                float(r.value(f"{where}.x_arcmin")),
                float(r.value(f"{where}.y_arcmin")),
                float(r.value(f"{where}.flux")),
                spectrum,
                Extent(),
            )
        )
    return tuple(out)


# ----------------------------------------------------------------------------- the example package


def param(value: Any, unit: str, source: str, status: str, uncertainty: Any = None) -> dict:
    """One parameter ``{value, unit, source, uncertainty, status}``."""
    return {"value": value, "unit": unit, "source": source, "uncertainty": uncertainty, "status": status}


def example_package(
    excess_d: float = 8.0, hole_mm: float = 0.36, thickness_mm: float = 0.1, wavelength_nm: float = 550.0
) -> dict[str, dict]:
    """The example package: Navarro 1985 eye made ``excess_d`` myopic by its vitreous, synthetic ICL.

    The retina position and the ICL front radius are computed here (paraxial trace at ``wavelength_nm``)
    and marked ``synthetic`` with the computation as their source.
    """
    from icl.eye.paraxial import correcting_icl, retina_for_excess

    nav = navarro_1985()
    retina = retina_for_excess(nav, excess_d, wavelength_nm)
    imp = correcting_icl(nav.with_vitreous(retina), wavelength_nm, hole_mm=hole_mm, thickness_mm=thickness_mm)
    tab = f"{NAVARRO_1985}, Table 1 (unaccommodated)"
    media = {
        name: {
            "model": "navarro_1985",
            "reference_indices": param(
                list(NAVARRO_REFERENCE[name]),
                "1 at [365, 486.1, 656.3, 1014] nm",
                f"{NAVARRO_1985}, Table 1 and equation 2",
                "documented",
            ),
        }
        for name in ("cornea", "aqueous", "lens", "vitreous")
    }
    after = dict(zip(EYE_SURFACES, ("cornea", "aqueous", "lens", "vitreous"), strict=True))
    surfaces = {}
    for s, _ in nav.surfaces:
        surfaces[s.name] = {
            "radius": param(s.radius, "mm", tab, "documented"),
            "conic": param(s.conic, "1", tab, "documented"),
            "asphere": param(
                [0.0, 0.0, 0.0, 0.0],
                "[mm^-3, mm^-5, mm^-7, mm^-9]",
                tab + ": conic surfaces only",
                "documented",
            ),
            "vertex_z": param(s.offset, "mm", tab + ": cumulative thicknesses", "documented"),
            "decentre": param([0.0, 0.0], "mm", "centred schematic eye", "documented"),
            "tilt": param([0.0, 0.0], "deg", "centred schematic eye", "documented"),
            "medium_after": after[s.name],
        }
    eye = {
        "format": "icl-eye/1",
        "name": f"navarro_1985_myopic_{excess_d:g}d",
        "description": f"{NAVARRO_1985} unaccommodated eye; the vitreous is lengthened so that the eye is "
        f"{excess_d:g} D myopic at {wavelength_nm:g} nm (axial myopia).",
        "media": media,
        "surfaces": surfaces,
        "iris": {
            "plane_z": param(
                nav.stop_z, "mm", tab + ": aperture stop at the lens front vertex", "documented"
            ),
            "entrance_pupil_diameter": param(
                nav.pupil_diameter_mm, "mm", "photopic pupil of the benchmark's thin-phase model", "synthetic"
            ),
        },
        "retina": {
            "vertex_z": param(
                retina,
                "mm",
                f"paraxial image of the far point {1000 / excess_d:g} mm in front of the "
                f"entrance pupil at {wavelength_nm:g} nm (icl.eye.paraxial."
                "retina_for_excess); Navarro's emmetropic value is 24.00398 mm",
                "synthetic",
            ),
            "shape": "plane",
        },
    }
    syn = "synthetic design: no manufacturer surface data are used"
    implant = {
        "format": "icl-implant/1",
        "name": "synthetic_meniscus",
        "description": "Synthetic thick meniscus ICL; its front radius is solved so that the implanted "
        f"eye focuses a distant point on the retina at {wavelength_nm:g} nm.",
        "front": {
            "radius": param(
                imp.front.radius,
                "mm",
                f"{syn}; solved for emmetropia at {wavelength_nm:g} nm (icl.eye.paraxial.correcting_icl)",
                "synthetic",
            ),
            "conic": param(0.0, "1", syn, "synthetic"),
            "asphere": param([0.0, 0.0, 0.0, 0.0], "[mm^-3, mm^-5, mm^-7, mm^-9]", syn, "synthetic"),
        },
        "back": {
            "radius": param(
                imp.back.radius, "mm", f"{syn}; close to the crystalline lens front", "synthetic"
            ),
            "conic": param(0.0, "1", syn, "synthetic"),
            "asphere": param([0.0, 0.0, 0.0, 0.0], "[mm^-3, mm^-5, mm^-7, mm^-9]", syn, "synthetic"),
        },
        "centre_thickness": param(imp.thickness_mm, "mm", syn, "synthetic"),
        "material": {
            "model": "constant",
            "index": param(
                imp.material.constant, "1", f"{syn}; collamer dispersion not modelled", "synthetic"
            ),
        },
        "optic_zone_diameter": param(imp.optic_zone_mm, "mm", syn, "synthetic"),
        "hole": {
            "diameter": param(
                imp.hole_mm, "mm", "central port size used by the benchmark's cases", "synthetic"
            ),
            "wall": "cylinder_along_implant_axis",
            "medium": "aqueous",
        },
        "placement": {
            "decentre": param([0.0, 0.0], "mm", "centred implant", "synthetic", 0.0),
            "tilt": param([0.0, 0.0], "deg", "untilted implant", "synthetic", 0.0),
            "rotation": param(0.0, "deg", "no rotation", "synthetic", 0.0),
        },
        "vault": {
            "distance": param(
                imp.vault_mm, "mm", "synthetic vault in the usual 0.25-0.75 mm range", "synthetic"
            ),
            "measurement_axis": "eye_optical_axis_through_implant_centre",
            "from_surface": "implant_back",
            "to_surface": "lens_front",
        },
    }
    illumination = {
        "format": "icl-illumination/1",
        "description": "One distant monochromatic point source on the line of sight.",
        "sources": [
            {
                "id": "L1",
                "x_arcmin": param(0.0, "arcmin", "case definition", "synthetic"),
                "y_arcmin": param(0.0, "arcmin", "case definition", "synthetic"),
                "flux": param(1.0, "source flux", "case definition", "synthetic"),
                "spectrum": param([[wavelength_nm, 1.0]], "[nm, weight]", "case definition", "synthetic"),
            }
        ],
    }
    detector = {
        "format": "icl-detector/1",
        "description": "Small detector for the example (+-4.3 arcmin).",
        "n": param(128, "pixels", "case definition", "synthetic"),
        "pitch_arcsec": param(4.0, "arcsec", "docs/conventions.md detector pitch", "synthetic"),
    }
    return {"eye": eye, "implant": implant, "illumination": illumination, "detector": detector}


def write_example(folder: str | Path) -> None:
    """Write :func:`example_package` as the four files in ``folder``."""
    for name, obj in example_package().items():
        write_json(Path(folder) / f"{name}.json", obj)


if __name__ == "__main__":
    write_example(sys.argv[1] if len(sys.argv) > 1 else cases_dir() / "examples" / "eye")

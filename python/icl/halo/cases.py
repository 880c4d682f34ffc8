"""Halo case definitions: load and validate ``cases/halo/*.json`` and derive analytic expectations.

A runnable case (``H01``-``H14``) holds two conditions ``a`` and ``b``, each a scene
(docs/formats.md) plus two declared flags:

``calibration_ring``
    A concentric calibration condition: one monochromatic point source, no hole, no cylinder and no
    net defocus, so the pattern is an Airy pattern (possibly moved by prism) whose first bright ring
    has an analytic radius. Only these conditions are measured by :mod:`icl.halo.ring` and scored on
    ring geometry.
``complex_field``
    A condition where no stable single-circle description is expected (finite source, defocus,
    cylinder, hole, several wavelengths or overlapping sources); its halo-region term carries more
    weight and the ring term is not used.

Research cards (``R15``-``R20``) carry a question, the inputs a truthful answer needs and how truth
must be built; they have no numeric answer and are never scored.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from scipy.special import jn_zeros

from icl._paths import cases_dir
from icl.errors import InputError
from icl.io import load_json
from icl.optics import Scene
from icl.optics.model import ARCMIN, decentre_shift_arcmin

CONDITION_LABELS = ("a", "b")
# Zeros of the Airy pattern in units of lambda / D: dark rings at j_{1,k} / pi, bright rings where
# d/dx (J1(x)/x) = -J2(x)/x vanishes, i.e. at j_{2,k} / pi.
FIRST_DARK = float(jn_zeros(1, 1)[0] / math.pi)  # 1.2197
SECOND_DARK = float(jn_zeros(1, 2)[1] / math.pi)  # 2.2331
FIRST_BRIGHT = float(jn_zeros(2, 1)[0] / math.pi)  # 1.6347


def halo_dir() -> Path:
    """Directory of the halo case files."""
    return cases_dir() / "halo"


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads((halo_dir() / "case.schema.json").read_text(encoding="utf-8"))


def _validate_schema(obj: Any, part: str, file: str) -> None:
    import jsonschema

    schema = _schema()
    sub = {"$ref": f"#/$defs/{part}", "$defs": schema["$defs"]}
    validator = jsonschema.Draft202012Validator(sub)
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        field = ".".join(str(p) for p in err.absolute_path) or None
        raise InputError(err.message, file, field)


@dataclass(frozen=True)
class Condition:
    """One condition of a runnable case.

    Attributes
    ----------
    id : str
        ``<case>_<a|b>``.
    label : str
        What distinguishes it from its pair.
    scene : Scene
        Sources, pupil and detector.
    scene_json : dict
        The scene as written in the case file (what participants receive).
    calibration_ring, complex_field : bool
        Declared flags (see the module docstring).

    """

    id: str
    case: str
    label: str
    scene: Scene
    scene_json: dict
    calibration_ring: bool
    complex_field: bool

    @property
    def zero_flux(self) -> bool:
        """True when every source has zero flux (the reference is exactly zero)."""
        return all(s.flux * sum(w for _, w in s.spectrum) == 0.0 for s in self.scene.sources)

    def prism_arcmin(self) -> tuple[float, float]:
        """Whole-pattern shift by the decentred optic in the track's frame: theta = K_icl * c (Prentice), arcmin."""
        icl = self.scene.pupil.icl
        if icl is None:
            return (0.0, 0.0)
        return tuple(decentre_shift_arcmin(icl.power_d, c, self.scene.frame) for c in icl.decentre_mm)

    def lambda_over_d_arcmin(self, which: str = "max") -> float:
        """Lambda / D in arcmin for the longest (``max``) or shortest (``min``) wavelength of all sources."""
        lams = [lam for s in self.scene.sources for lam, _ in s.spectrum]
        lam = max(lams) if which == "max" else min(lams)
        return lam * 1e-9 / (self.scene.pupil.diameter_mm * 1e-3) / ARCMIN

    def analytic(self) -> dict | None:
        """Analytic expectation of a calibration condition (None otherwise).

        The centre is the source position plus the prism shift of the decentred optic; the first
        bright ring lies at ``j_{2,1} / pi * lambda / D`` = 1.6347 lambda / D and the first dark ring
        at 1.2197 lambda / D.
        """
        if not self.calibration_ring:
            return None
        src = self.scene.sources[0]
        px, py = self.prism_arcmin()
        lod = self.lambda_over_d_arcmin()
        return {
            "centre_arcmin": [src.x_arcmin + px, src.y_arcmin + py],
            "first_bright_ring_arcmin": FIRST_BRIGHT * lod,
            "first_dark_ring_arcmin": FIRST_DARK * lod,
            "lambda_over_d_arcmin": lod,
            "rule": "Airy pattern of a uniform circular pupil: bright ring 1.6347 lambda/D, dark ring "
            "1.2197 lambda/D, centre = source + K_icl * decentre",
        }


@dataclass(frozen=True)
class HaloCase:
    """A runnable halo case: two paired conditions and the texts of the case table."""

    id: str
    title: str
    purpose: str
    predict: tuple[str, ...]
    expectation: str
    conditions: tuple[Condition, Condition]
    file: str


@dataclass(frozen=True)
class ResearchCard:
    """A research case: question, required inputs and how truth must be built; never scored."""

    id: str
    question: str
    inputs_required: tuple[str, ...]
    truth: str
    note: str
    file: str


def _check_calibration(cond: Condition, file: str, field: str) -> None:
    """Check that a declared calibration condition really is a concentric Airy pattern."""
    sc = cond.scene
    icl = sc.pupil.icl
    problems = []
    if len(sc.sources) != 1:
        problems.append("exactly one source")
    src = sc.sources[0]
    if len(src.spectrum) != 1:
        problems.append("one wavelength")
    if src.extent.kind != "point":
        problems.append("a point source")
    if src.flux <= 0:
        problems.append("positive flux")
    excess = sc.pupil.eye_excess_d + (icl.power_d if icl is not None else 0.0)
    if excess != 0.0:
        problems.append("no net defocus")
    if icl is not None and icl.cylinder_d != 0.0:
        problems.append("no cylinder")
    if icl is not None and icl.hole_mm > 0 and icl.hole != "index_matched":
        problems.append("no hole")
    if icl is not None and math.hypot(*icl.decentre_mm) + sc.pupil.diameter_mm / 2 > icl.optic_zone_mm / 2:
        problems.append("the pupil inside the optic zone")
    if problems:
        raise InputError("a calibration condition needs " + ", ".join(problems), file, field)


def load_case(path: str | Path) -> HaloCase | ResearchCard:
    """Load and validate one case file.

    Raises
    ------
    InputError
        Naming the file and the field at fault.

    """
    path = Path(path)
    file = str(path)
    obj = load_json(path, max_bytes=1 << 20)
    if not isinstance(obj, dict):
        raise InputError("expected an object", file)
    kind = obj.get("kind")
    if kind not in ("runnable", "research"):
        raise InputError("must be 'runnable' or 'research'", file, "kind")
    _validate_schema(obj, kind, file)
    if path.stem != obj["id"]:
        raise InputError(f"id {obj['id']!r} does not match the file name {path.name!r}", file, "id")
    if kind == "research":
        return ResearchCard(
            obj["id"], obj["question"], tuple(obj["inputs_required"]), obj["truth"], obj["note"], file
        )
    conds = tuple(
        make_condition(obj["id"], label, obj["conditions"][label], file) for label in CONDITION_LABELS
    )
    check_pair(conds, file)
    return HaloCase(
        obj["id"], obj["title"], obj["purpose"], tuple(obj["predict"]), obj["expectation"], conds, file
    )


def make_condition(case_id: str, label: str, c: dict, file: str) -> Condition:
    """Build and check one condition ``c`` (``label``, flags, ``scene``) of case ``case_id``.

    Raises
    ------
    InputError
        For a bad scene or a declared flag the scene does not satisfy.

    """
    where = f"conditions.{label}"
    scene = _scene_from_dict(c["scene"], file, where + ".scene")
    cond = Condition(
        f"{case_id}_{label}",
        case_id,
        c["label"],
        scene,
        c["scene"],
        c["calibration_ring"],
        c["complex_field"],
    )
    if cond.calibration_ring and cond.complex_field:
        raise InputError(
            "a condition cannot be both a calibration ring and a complex field",
            file,
            where + ".complex_field",
        )
    if cond.calibration_ring:
        _check_calibration(cond, file, where + ".calibration_ring")
    return cond


def check_pair(conds: tuple[Condition, Condition], file: str) -> None:
    """Both conditions of a pair need the same number of sources (paired differences are per source)."""
    if len(conds[0].scene.sources) != len(conds[1].scene.sources):
        raise InputError(
            "both conditions must have the same number of sources (paired differences)",
            file,
            "conditions.b.scene.sources",
        )


FRAME = "halo"  # the track's stated sign convention (icl.optics.model.FRAMES; docs/halo.md)


def halo_scene(d: Any, file: str | None = None) -> Scene:
    """Parse a scene of this track: drawn in its stated sign convention, the ``halo`` frame.

    Sources sit where they are seen; a decentred optic's tilt ``K c`` moves its pattern by ``+K c``
    (docs/conventions.md, "Frames"). A scene that names another frame is refused.
    """
    scene = Scene.from_dict(d, file=file)
    if isinstance(d, dict) and d.get("frame", FRAME) != FRAME:
        raise InputError(f"the halo track's scenes are drawn in its own frame {FRAME!r}", file, "frame")
    return replace(scene, frame=FRAME)


def _scene_from_dict(d: Any, file: str, where: str) -> Scene:
    """Parse a scene, prefixing the field of any error with its place in the case file."""
    try:
        return halo_scene(d)
    except InputError as exc:
        field = f"{where}.{exc.field}" if exc.field else where
        raise InputError(exc.reason, file, field) from None


def load_cases(directory: str | Path | None = None) -> tuple[list[HaloCase], list[ResearchCard]]:
    """Load every case of a directory (default: the installed ``cases/halo``), sorted by id."""
    directory = Path(directory) if directory is not None else halo_dir()
    runnable, research = [], []
    for p in sorted(directory.glob("[HR][0-9][0-9].json")):
        case = load_case(p)
        (runnable if isinstance(case, HaloCase) else research).append(case)
    if not runnable:
        raise InputError("no runnable halo case found", str(directory))
    return runnable, research

"""The professional data package: ``eye.json``, ``implant.json``, ``illumination.json``, ``detector.json``.

Every physical parameter is ``{value, unit, source, uncertainty, status}`` with status one of
``measured``, ``documented``, ``synthetic``, ``estimated``, ``unknown``. A case folder
holds the four files; :func:`scene_from_package` turns its thin-phase equivalent into a scene
(docs/formats.md).

Visual frame
------------
Professional-track images are in visual coordinates: a pattern at +x is seen to the right (+x) of the line
of sight, where a source at +x is seen. The eye inverts: light from a source at +x lands on the retina at
-x, and a minus ICL decentred by +c deviates the light through it to the retina's -x side as well, so its
pattern is seen at +|P| c (Prentice's rule; "with motion"). Every scene of this track is rendered in the
far-field engine's ``visual`` frame (icl.optics.model.FRAMES, docs/conventions.md "Frames"), which draws
exactly this; the thick references use the same frame (icl.pro.thick).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import load_json

STATUSES = ("measured", "documented", "synthetic", "estimated", "unknown")
PACKAGE_FILES = ("eye", "implant", "illumination", "detector")
HOLE_MODELS = ("solid", "clear", "black", "index_matched")


def uncertainty_problem(unc: Any) -> str | None:
    """Why ``unc`` is not a parameter uncertainty, or None if it is one.

    One schema for the data packages and for a submission's ``model/eye.json``: ``null`` (not stated), a
    non-negative number (a bound: the true value lies within +- that of the stated one), or
    ``{"range": [low, high], "distribution": text}`` (the true value lies in the closed range, distributed as
    the text says, e.g. ``"uniform"``).
    """
    if unc is None:
        return None
    if isinstance(unc, (int, float)) and not isinstance(unc, bool):
        return None if math.isfinite(unc) and unc >= 0 else "a number must be finite and non-negative"
    if isinstance(unc, dict) and set(unc) == {"range", "distribution"}:
        r = unc["range"]
        ok = (isinstance(r, list) and len(r) == 2
              and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in r))
        if not ok or r[0] > r[1]:
            return "range must be [low, high]: two finite numbers, low <= high"
        if not isinstance(unc["distribution"], str) or not unc["distribution"].strip():
            return "distribution must be a non-empty string"
        return None
    return 'must be null, a non-negative number or {"range": [low, high], "distribution": text}'


def param(value: Any, unit: str, source: str, status: str = "synthetic", uncertainty: Any = None) -> dict:
    """One data-package parameter."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} not in {STATUSES}")
    return {"value": value, "unit": unit, "source": source, "uncertainty": uncertainty, "status": status}


def load_package(case_dir: str | Path) -> dict[str, dict]:
    """Read the four files of a case folder, checking the parameter format."""
    case_dir = Path(case_dir)
    out = {}
    for name in PACKAGE_FILES:
        path = case_dir / f"{name}.json"
        data = load_json(path)
        if not isinstance(data, dict):
            raise InputError("expected an object", str(path))
        _check_params(data, str(path), "")
        out[name] = data
    return out


def _check_params(obj: Any, file: str, where: str) -> None:
    if isinstance(obj, dict):
        if "status" in obj and "value" in obj:
            missing = {"value", "unit", "source", "uncertainty", "status"} - set(obj)
            if missing:
                raise InputError(f"parameter lacks {sorted(missing)}", file, where or None)
            if obj["status"] not in STATUSES:
                raise InputError(f"status must be one of {list(STATUSES)}", file, f"{where}.status")
            problem = uncertainty_problem(obj["uncertainty"])
            if problem:
                raise InputError(f"uncertainty {problem}", file, f"{where}.uncertainty")
            return
        for k, v in obj.items():
            _check_params(v, file, f"{where}.{k}" if where else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_params(v, file, f"{where}[{i}]")


def value(pkg: dict, dotted: str) -> Any:
    """The ``value`` of parameter ``file.name`` (e.g. ``implant.hole_diameter``)."""
    f, name = dotted.split(".", 1)
    return pkg[f][name]["value"]




def scene_from_package(pkg: dict) -> dict:
    """The thin-phase scene (docs/formats.md) described by a case's data package, in the visual frame."""
    v = lambda d: value(pkg, d)  # noqa: E731
    hole_model = v("implant.hole_model")
    icl = {"power_d": v("implant.thin_power"), "cylinder_d": v("implant.cylinder"),
           "axis_deg": v("implant.cylinder_axis"),
           "decentre_mm": [v("implant.decentre_x"), v("implant.decentre_y")],
           "optic_zone_mm": v("implant.optic_zone_diameter"),
           "hole_mm": 0.0 if hole_model == "solid" else v("implant.hole_diameter"),
           "hole": "clear" if hole_model == "solid" else hole_model}
    sources = []
    for s in pkg["illumination"]["sources"]:
        sources.append({"id": s["id"], "x_arcmin": s["x_arcmin"]["value"], "y_arcmin": s["y_arcmin"]["value"],
                        "flux": s["flux"]["value"], "spectrum": s["spectrum"]["value"], "extent": {"kind": "point"}})
    return {"pupil": {"diameter_mm": v("eye.pupil_diameter"), "eye_excess_d": v("eye.thin_eye_excess"), "icl": icl},
            "detector": {"n": v("detector.n"), "pitch_arcsec": v("detector.pitch_arcsec")},
            "sources": sources, "frame": "visual"}

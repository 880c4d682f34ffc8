"""Load and validate patient report files and prediction files (schema ``0.4.0-patient-draft``).

JSON-schema checks come first (``cases/patient/*.schema.json``), then the rules a schema cannot express:
``target_id`` equals its joined parts, no repeated target+repeat, feature ids unique, sources exist, a
circle is round, ``absent`` carries no shape, one ``data_kind`` per file, and a radius point estimate lies in
its interval.
Every error names the file and the field.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from icl._paths import cases_dir
from icl.errors import InputError
from icl.io import check_answer_file, check_kind, load_json

SCHEMA_VERSION = "0.4.0-patient-draft"
#: The top-level fields of a prediction file.
PREDICTION_FIELDS = frozenset({"predictions", "schema_version", "fictional", "description"})
UNCERTAIN = "uncertain"
TARGET_PARTS = ("patient_id", "visit_id", "eye", "condition_id")


@functools.cache
def report_schema() -> dict[str, Any]:
    """Return the JSON schema of a report (reference) file."""
    return load_json(cases_dir() / "patient" / "report.schema.json")


@functools.cache
def questionnaire() -> dict[str, Any]:
    """Return the questionnaire (``cases/patient/questionnaire.json``)."""
    return load_json(cases_dir() / "patient" / "questionnaire.json")


@functools.cache
def _items(condition: str) -> dict[str, dict[str, Any]]:
    """Items a record of ``condition`` may answer: the common ones and the condition's extra ones."""
    q = questionnaire()
    extra = next((c["extra_items"] for c in q["conditions"] if c["id"] == condition), [])
    return {it["id"]: it for it in [*q["common_items"], *extra]}


def check_answers(rec: Mapping[str, Any]) -> tuple[str, str] | None:
    """Check a record's answers against the questionnaire; returns (field, message) or None.

    Keys are ``<condition>.<item>`` of the record's own condition; an answered choice is one of the
    item's options, a scale an integer in its range, a text a string. ``presence`` and the three 0-10
    items must agree with the record's ``presence`` and ``symptoms``.
    """
    cond = rec["condition_id"]
    items = _items(cond)
    answers = rec.get("answers", {})
    for key, ans in answers.items():
        where = f"answers[{key!r}]"
        prefix, _, item_id = key.partition(".")
        if prefix != cond:
            return where, f"answers of this record are keyed by its condition {cond!r}"
        item = items.get(item_id)
        if item is None:
            return (
                where,
                f"{item_id!r} is not an item of condition {cond} (questionnaire.json: {sorted(items)})",
            )
        if ans["code"] != "answered":
            continue
        v, kind = ans["value"], item["kind"]
        if kind == "choice" and v not in item["options"]:
            return f"{where}.value", f"{v!r} is not one of the options {item['options']}"
        if kind == "scale" and not (
            isinstance(v, (int, float))
            and not isinstance(v, bool)
            and float(v).is_integer()
            and item["min"] <= v <= item["max"]
        ):
            return f"{where}.value", f"expected an integer {item['min']}-{item['max']}, got {v!r}"
        if kind == "text" and not isinstance(v, str):
            return f"{where}.value", f"expected text, got {v!r}"
    presence = answers.get(f"{cond}.presence")
    if presence is not None and presence["code"] == "answered":
        implied = "present" if presence["value"] == "yes" else "absent"
        if rec["presence"] != implied:
            return (
                "presence",
                f"{rec['presence']!r} contradicts the answer {presence['value']!r} to {cond}.presence",
            )
    for item_id in ("visibility", "bother", "impact_7d"):
        ans = answers.get(f"{cond}.{item_id}")
        if ans is not None and ans["code"] == "answered" and rec["symptoms"].get(item_id) != ans["value"]:
            return (
                f"symptoms.{item_id}",
                f"{rec['symptoms'].get(item_id)!r} contradicts the answer {ans['value']!r}",
            )
    return None


@functools.cache
def prediction_schema() -> dict[str, Any]:
    """Return the JSON schema of a prediction file."""
    return load_json(cases_dir() / "patient" / "prediction.schema.json")


def _ecma_pattern(validator, pattern: str, instance: Any, schema: Mapping[str, Any]):
    """``pattern`` with ECMA-262 anchors: a final ``$`` matches only at the very end of the string.

    Python's ``$`` also matches before a trailing newline, which would let an id ending in a newline pass.
    """
    if not validator.is_type(instance, "string"):
        return
    rx = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith("\\$") else pattern
    if not re.search(rx, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})


@functools.cache
def _validator(kind: str, ref: str | None) -> jsonschema.protocols.Validator:
    schema = report_schema() if kind == "report" else prediction_schema()
    if ref is not None:
        schema = {"$defs": schema["$defs"], "$ref": f"#/$defs/{ref}"}
    return _Validator(schema)


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


MAX_POINTS = 2000  # points_deg items, as in both schemas
DEG_LIMIT = 90.0  # the schemas' "deg" range


def _plain_points(points: Any) -> bool:
    """Tell whether a ``points_deg`` value is one the schemas accept: 2-2000 pairs in [-90, 90] deg."""
    if not isinstance(points, list) or not 2 <= len(points) <= MAX_POINTS:
        return False
    for pair in points:
        if not isinstance(pair, list) or len(pair) != 2:
            return False
        for v in pair:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not -DEG_LIMIT <= v <= DEG_LIMIT:
                return False
    return True


def _light(obj: Any) -> Any:
    """``obj`` with every schema-valid ``points_deg`` list cut to its first two points.

    jsonschema walks every point of a freehand contour through several keywords (seconds for 8 contours
    of 2,000 points); the same rule checked in plain Python first gives the same verdict. A list that
    fails the plain check is left whole, so the schema reports it with its usual message and path.
    """
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out[k] = v[:2] if k == "points_deg" and _plain_points(v) else _light(v)
        return out
    if isinstance(obj, list):
        return [_light(v) for v in obj]
    return obj


def _first_error(kind: str, obj: Any, ref: str | None = None) -> tuple[str, str] | None:
    """Return (field, message) of the deepest-first schema error, or None."""
    errors = sorted(
        _validator(kind, ref).iter_errors(_light(obj)),
        key=lambda e: (list(map(str, e.absolute_path)), e.message),
    )
    if not errors:
        return None
    err = jsonschema.exceptions.best_match(errors)
    # ``oneOf`` failures carry the nested reason in their context; the deepest one is the most telling.
    while err.context:
        err = max(err.context, key=lambda e: len(e.absolute_path))
    return _path(err.absolute_path), _short(err.message)


def _short(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."


def check_feature_geometry(feat: Mapping[str, Any]) -> tuple[str, str] | None:
    """Rules beyond the schema for one feature; returns (field, message) or None."""
    if feat["kind"] == "circle" and "ry_deg" in feat and abs(feat["ry_deg"] - feat["rx_deg"]) > 1e-9:
        return "ry_deg", "a circle needs ry_deg equal to rx_deg (use kind 'ellipse')"
    interval = feat.get("radius_interval_deg")
    if interval is not None:
        lo, hi = interval
        if lo > hi:
            return "radius_interval_deg", f"lower bound {lo} exceeds upper bound {hi}"
        r = point_radius(feat)
        if not lo <= r <= hi:
            return "radius_interval_deg", f"the point estimate {r:g} deg lies outside [{lo:g}, {hi:g}]"
    return None


def point_radius(feat: Mapping[str, Any]) -> float:
    """Radius used for the 80 % interval: rx for circles and arcs, the mean semi-axis for ellipses."""
    if feat["kind"] == "ellipse":
        return 0.5 * (feat["rx_deg"] + feat["ry_deg"])
    return float(feat["rx_deg"])


@dataclass
class Reports:
    """A validated report file.

    Attributes
    ----------
    file : str
        Path it was read from.
    records : list of dict
        The records, in file order.
    data_kind : str
        ``synthetic`` or ``research`` (one per file).
    fictional : bool
        Top-level ``fictional`` flag.

    """

    file: str
    records: list[dict[str, Any]]
    data_kind: str
    fictional: bool = False
    targets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def load_reports(path: str | os.PathLike) -> Reports:
    """Read and validate a report (reference) file.

    Raises
    ------
    InputError
        Naming the file and the field of the first problem.

    """
    file = str(path)
    obj = load_json(path)
    err = _first_error("report", obj)
    if err:
        raise InputError(err[1], file, err[0])
    return validate_reports(obj, file)


def validate_reports(obj: Mapping[str, Any], file: str) -> Reports:
    """Apply the rules a schema cannot express to an already schema-valid report object."""
    seen: set[tuple[str, str]] = set()
    kinds: set[str] = set()
    targets: dict[str, list[dict[str, Any]]] = {}
    for i, rec in enumerate(obj["records"]):
        where = f"records[{i}]"
        expected = "|".join(rec[k] for k in TARGET_PARTS)
        if rec["target_id"] != expected:
            raise InputError(
                f"target_id must be patient_id|visit_id|eye|condition_id = {expected!r}",
                file,
                f"{where}.target_id",
            )
        key = (rec["target_id"], rec["repeat_id"])
        if key in seen:
            raise InputError(
                f"target {key[0]!r} repeat {key[1]!r} appears twice; repeated records are refused",
                file,
                f"{where}.repeat_id",
            )
        seen.add(key)
        kinds.add(rec["data_kind"])
        if len(kinds) > 1:
            raise InputError(
                "synthetic and research records cannot be mixed in one file; score them in separate runs",
                file,
                f"{where}.data_kind",
            )
        sources = [s["id"] for s in rec["stimulus"]["sources"]]
        if len(set(sources)) != len(sources):
            raise InputError("source ids repeat", file, f"{where}.stimulus.sources")
        if UNCERTAIN in sources:
            raise InputError("'uncertain' is reserved for attribution", file, f"{where}.stimulus.sources")
        ids = set()
        for j, feat in enumerate(rec["features"]):
            fw = f"{where}.features[{j}]"
            if feat["id"] in ids:
                raise InputError(f"feature id {feat['id']!r} repeats", file, f"{fw}.id")
            ids.add(feat["id"])
            if feat["source_id"] != UNCERTAIN and feat["source_id"] not in sources:
                raise InputError(
                    f"source {feat['source_id']!r} is not among the stimulus sources {sources}",
                    file,
                    f"{fw}.source_id",
                )
            bad = check_feature_geometry(feat)
            if bad:
                raise InputError(bad[1], file, f"{fw}.{bad[0]}")
        if rec["presence"] == "absent" and rec["features"]:
            raise InputError(
                "a report of no visible structure cannot carry features", file, f"{where}.features"
            )
        if rec["presence"] != "present" and rec["features"]:  # a drawing says something is seen
            raise InputError(
                f"shapes are drawn but presence is {rec['presence']!r}: "
                "only a 'present' record carries features",
                file,
                f"{where}.features",
            )
        bad = check_answers(rec)
        if bad:
            raise InputError(bad[1], file, f"{where}.{bad[0]}")
        targets.setdefault(rec["target_id"], []).append(rec)
    kind = kinds.pop() if kinds else "synthetic"
    return Reports(
        file=file,
        records=list(obj["records"]),
        data_kind=kind,
        fictional=bool(obj.get("fictional", False)),
        targets=targets,
    )


@dataclass
class Predictions:
    """Prediction entries that passed validation, and reasons for those that did not.

    Attributes
    ----------
    valid : dict
        target_id -> prediction entry.
    invalid : dict
        target_id (or ``predictions[i]`` when no id is readable) -> reason naming the field.
    fatal : str or None
        Set when the file as a whole is unreadable; every target then scores 0 with this reason.

    """

    file: str
    valid: dict[str, dict[str, Any]] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    fatal: str | None = None


def load_predictions(path: str | os.PathLike, sources: Mapping[str, list[str]] | None = None) -> Predictions:
    """Read a prediction file, validating each entry on its own so one bad entry loses only its target.

    Parameters
    ----------
    path : path-like
        The prediction file.
    sources : mapping, optional
        target_id -> source ids of that target; when given, unknown targets and unknown source ids are
        invalid.

    """
    file = str(path)
    out = Predictions(file=file)
    try:
        check_answer_file(path)  # a hard link (to someone's answers, say) is not the submission's own file
        obj = load_json(path)
    except InputError as exc:
        out.fatal = str(exc)
        return out
    # a file of another kind (a scene, a report file) is the operator's mistake, not a bad prediction
    check_kind(obj, file, "a prediction file", ("predictions",))
    if not isinstance(obj, dict) or not isinstance(obj.get("predictions"), list):
        out.fatal = str(InputError("expected an object with a 'predictions' list", file, "predictions"))
        return out
    extra = sorted(set(obj) - PREDICTION_FIELDS)
    if extra:
        out.fatal = str(InputError(f"unknown top-level field {extra[0]!r}", file, extra[0]))
        return out
    if "schema_version" in obj and obj["schema_version"] != SCHEMA_VERSION:
        out.fatal = str(
            InputError(
                f"this scorer reads schema {SCHEMA_VERSION!r}, the file says {obj['schema_version']!r}",
                file,
                "schema_version",
            )
        )
        return out
    for i, entry in enumerate(obj["predictions"]):
        tid = entry.get("target_id") if isinstance(entry, dict) else None
        key = tid if isinstance(tid, str) else f"predictions[{i}]"
        if key in out.valid or key in out.invalid:
            out.invalid[key] = str(
                InputError("more than one prediction for this target", file, f"predictions[{i}].target_id")
            )
            out.valid.pop(key, None)
            continue
        reason = _entry_error(entry, i, sources, file)
        if reason:
            out.invalid[key] = reason
        else:
            out.valid[key] = entry
    return out


def _entry_error(entry: Any, i: int, sources: Mapping[str, list[str]] | None, file: str) -> str | None:
    where = f"predictions[{i}]"
    err = _first_error("prediction", entry, "prediction")
    if err:
        sub = err[0] if err[0] != "(top level)" else ""
        return str(InputError(err[1], file, f"{where}.{sub}" if sub else where))
    if sources is not None and entry["target_id"] not in sources:
        return str(InputError(f"unknown target {entry['target_id']!r}", file, f"{where}.target_id"))
    ids = set()
    for j, feat in enumerate(entry["features"]):
        fw = f"{where}.features[{j}]"
        if feat["id"] in ids:
            return str(InputError(f"feature id {feat['id']!r} repeats", file, f"{fw}.id"))
        ids.add(feat["id"])
        if (
            sources is not None
            and feat["source_id"] != UNCERTAIN
            and feat["source_id"] not in sources[entry["target_id"]]
        ):
            return str(
                InputError(
                    f"source {feat['source_id']!r} is not a source of this target", file, f"{fw}.source_id"
                )
            )
        bad = check_feature_geometry(feat)
        if bad:
            return str(InputError(bad[1], file, f"{fw}.{bad[0]}"))
    return None

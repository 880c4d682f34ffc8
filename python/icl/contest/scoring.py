"""Score one team's evaluation file: item areas, S, weights, total, gate, and the side reports.

Input (JSON, see ``docs/contest.md``)::

    {"team": "A", "track": 3, "group": "G1", "compute_class": "domestic",
     "model_version": "detector 2.1 (weights sha256 ...)", "clinical_score": 0.75,
     "items": {"NH":  {"scores": [...], "labels": [...]},
               "DUP": {"scores": [...], "labels": [...]},
               "SPL": {"scores": [...], "labels": [...]}},
     "efficiency": {"latency_s": 0.8, "peak_memory_gib": 11.0,
                    "protocol": {"batch_size": 1, "input_size": "512x512"}},
     "robustness": {"metric": "C", "before": {"cases": [...], "value": 0.8},
                    "after": {"cases": [...], "value": 0.7}},
     "generalisation": {"unseen_definition": "other vendor", "in_distribution": 0.8, "unseen": 0.7}}

Bad parts are scored 0 (items) or left out (side reports) with the reason in ``problems``; only a
document that is not an object at all is an error. A record carries the versions of the scoring code
and of the model it scores, and a digest of its own content that ``icl contest-rank`` re-checks.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from icl.contest.gate import NO_SAFETY_TRACK, NOT_RANKABLE, UNPUBLISHED, GateResult, Thresholds, gate
from icl.contest.pr import INTERPOLATION, ITEM_KIND, PARTIAL_INTERVAL, ItemArea, item_area
from icl.contest.safety import ITEMS, clinical_weight, round2, safety_score, safety_weight, total_exact
from icl.errors import InputError
from icl.io import check_kind

COMPUTE_CLASSES = ("domestic", "foreign")
TRACKS = range(1, 8)
MAX_CASES = 10_000_000

SYMBOLS = {
    "NH": "non-human image detection: step PR area over recall [0.05, 0.50] divided by 0.45",
    "DUP": "duplicate image detection: full step PR area over recall [0, 1] (average precision)",
    "SPL": "splice detection: step PR area over recall [0.05, 0.50] divided by 0.45",
    "S": "safety score: harmonic mean of NH, DUP, SPL; 0 if any is 0, missing or not computable",
    "w_s": "safety weight 0.2 + 0.2 (1 - S)",
    "w_c": "clinical weight 1 - w_s",
    "C": "clinical score in [0, 1]",
    "T": "total 100 (S w_s + C w_c), rounded half up to two decimals at the end (track 7: 100 C)",
}

RULE = {
    "interpolation": INTERPOLATION,
    "partial_interval": list(PARTIAL_INTERVAL),
    "partial_interval_ends": "closed",
    "partial_normalised_by": PARTIAL_INTERVAL[1] - PARTIAL_INTERVAL[0],
    "item_kind": dict(ITEM_KIND),
    "safety": "S = 3 / (1/NH + 1/DUP + 1/SPL), float64, 0 if any item is 0",
    "weights": "w_s = 0.2 + 0.2 (1 - S); w_c = 1 - w_s",
    "total": "T = 100 (S w_s + C w_c)",
    "rounding": "two decimals, half up, once at the end, on the exact decimal value of the formula "
    "applied to the decimal forms of S and C",
}
# The modules whose source decides a score: their hash is the scoring-script version of a record.
SCORING_SOURCES = ("gate.py", "pr.py", "safety.py", "scoring.py")
DIGEST_FIELD = "record_sha256"


@lru_cache(maxsize=1)
def scoring_version() -> dict[str, str]:
    """Package version and SHA-256 over the scoring modules' source (changes with any rule edit)."""
    from icl import __version__

    h = hashlib.sha256()
    for name in SCORING_SOURCES:
        h.update(name.encode() + b"\0" + resources.files("icl.contest").joinpath(name).read_bytes())
    return {"package": f"icl-bench {__version__}", "source_sha256": h.hexdigest()}


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON without its digest field (shows hand edits)."""
    body = {k: v for k, v in record.items() if k != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _id(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 64 and not any(c in v for c in "/\\|\0")


def _item_arrays(obj: Any, item: str) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    """Read one item's scores and labels; on failure return the reason instead."""
    if not isinstance(obj, dict):
        return None, None, f"items.{item}: expected an object with 'scores' and 'labels'"
    for key in ("scores", "labels"):
        if key not in obj:
            return None, None, f"items.{item}.{key}: missing"
        if not isinstance(obj[key], list):
            return None, None, f"items.{item}.{key}: expected a list"
        if len(obj[key]) > MAX_CASES:
            return None, None, f"items.{item}.{key}: more than {MAX_CASES} cases"
    scores, labels = obj["scores"], obj["labels"]
    bad = next((i for i, v in enumerate(scores) if not _number(v)), None)
    if bad is not None:
        return None, None, f"items.{item}.scores[{bad}]: expected a finite number, got {scores[bad]!r}"
    bad = next((i for i, v in enumerate(labels) if isinstance(v, bool) or v not in (0, 1)), None)
    if bad is not None:
        return None, None, f"items.{item}.labels[{bad}]: expected 0 or 1, got {labels[bad]!r}"
    if len(scores) != len(labels):
        return None, None, f"items.{item}: {len(scores)} scores but {len(labels)} labels"
    return np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.int64), None


def score_items(items: Any) -> tuple[dict[str, ItemArea], list[str]]:
    """Areas of the three items; anything unreadable scores 0 with its reason."""
    problems: list[str] = []
    areas: dict[str, ItemArea] = {}
    if not isinstance(items, dict):
        problems.append("items: missing or not an object")
        items = {}
    for key in sorted(set(items) - set(ITEMS)):
        problems.append(f"items.{key}: unknown item ignored (the rule's items are {list(ITEMS)})")
    for item in ITEMS:
        kind = ITEM_KIND[item]
        interval = PARTIAL_INTERVAL if kind == "partial" else (0.0, 1.0)
        if item not in items:
            areas[item] = ItemArea(item, 0.0, kind, interval, None, None, "missing key")
            problems.append(f"items.{item}: missing key, item scores 0")
            continue
        s, y, why = _item_arrays(items[item], item)
        if why is not None:
            areas[item] = ItemArea(item, 0.0, kind, interval, None, None, why)
            problems.append(why + ", item scores 0")
            continue
        areas[item] = item_area(item, s, y)
        if not areas[item].computable:
            problems.append(f"items.{item}: {areas[item].reason}, item scores 0")
    return areas, problems


def weakest(areas: dict[str, ItemArea]) -> ItemArea:
    """Return the item with the lowest area (ties: rule order NH, DUP, SPL)."""
    return min((areas[k] for k in ITEMS), key=lambda a: a.value)


def _efficiency(obj: Any, problems: list[str]) -> dict | None:
    if obj is None:
        return None
    try:
        if not isinstance(obj, dict):
            raise ValueError("expected an object")
        lat, mem, proto = obj.get("latency_s"), obj.get("peak_memory_gib"), obj.get("protocol")
        if not (_number(lat) and lat > 0):
            raise ValueError(f"latency_s must be a positive number, got {lat!r}")
        if not (_number(mem) and mem > 0):
            raise ValueError(f"peak_memory_gib must be a positive number, got {mem!r}")
        if not (
            isinstance(proto, dict)
            and set(proto) == {"batch_size", "input_size"}
            and isinstance(proto["batch_size"], int)
            and not isinstance(proto["batch_size"], bool)
            and proto["batch_size"] > 0
            and isinstance(proto["input_size"], str)
            and proto["input_size"]
        ):
            raise ValueError(
                "protocol must be {batch_size: positive int, input_size: non-empty string}; "
                "without it speed and memory have no common zero"
            )
    except ValueError as exc:
        problems.append(f"efficiency: {exc}; efficiency left out (no tie-break)")
        return None
    return {"latency_s": float(lat), "peak_memory_gib": float(mem), "protocol": dict(proto)}


def robustness_drop(before: Any, after: Any) -> float:
    """Drop rate ``(before - after) / before`` over the same cases (denominator: before on those cases).

    Parameters
    ----------
    before, after : dict
        ``{"cases": [ids], "value": x}`` measured on the unperturbed and the perturbed cases.

    """
    for name, d in (("before", before), ("after", after)):
        if not isinstance(d, dict) or not isinstance(d.get("cases"), list) or not _number(d.get("value")):
            raise ValueError(f"{name} must be {{cases: [ids], value: number}}")
        if not all(_id(c) for c in d["cases"]) or len(set(d["cases"])) != len(d["cases"]):
            raise ValueError(f"{name}.cases must be unique ids")
    if set(before["cases"]) != set(after["cases"]):
        raise ValueError("before and after must cover the same cases")
    if not before["cases"]:
        raise ValueError("no cases")
    if before["value"] <= 0:
        raise ValueError("the before value must be positive to be a denominator")
    return (before["value"] - after["value"]) / before["value"]


def _robustness(obj: Any, problems: list[str]) -> dict | None:
    if obj is None:
        return None
    try:
        if not isinstance(obj, dict) or not isinstance(obj.get("metric"), str):
            raise ValueError("expected {metric, before, after}")
        drop = robustness_drop(obj.get("before"), obj.get("after"))
    except ValueError as exc:
        problems.append(f"robustness: {exc}; left out")
        return None
    return {
        "metric": obj["metric"],
        "cases": len(obj["before"]["cases"]),
        "before": obj["before"]["value"],
        "after": obj["after"]["value"],
        "drop_rate": drop,
        "in_total": False,
    }


def _generalisation(obj: Any, problems: list[str]) -> dict | None:
    if obj is None:
        return None
    ok = (
        isinstance(obj, dict)
        and isinstance(obj.get("unseen_definition"), str)
        and obj["unseen_definition"]
        and _number(obj.get("in_distribution"))
        and _number(obj.get("unseen"))
    )
    if not ok:
        problems.append(
            "generalisation: expected {unseen_definition: text fixed in advance, in_distribution, "
            "unseen}; left out"
        )
        return None
    return {
        "unseen_definition": obj["unseen_definition"],
        "in_distribution": float(obj["in_distribution"]),
        "unseen": float(obj["unseen"]),
        "in_total": False,
    }


def score_result(doc: Any, thresholds: Thresholds = UNPUBLISHED, file: str | None = None) -> dict[str, Any]:
    """Score one team's evaluation document.

    Parameters
    ----------
    doc : dict
        Parsed input (format in the module docstring).
    thresholds : Thresholds
        Parsed threshold file; unpublished by default.
    file : str, optional
        Input path, for error messages.

    Returns
    -------
    dict
        The score record written by ``icl contest-score``.

    """
    if not isinstance(doc, dict):
        raise InputError(f"expected an object, got {type(doc).__name__}", file)
    problems: list[str] = []
    known = {
        "team",
        "track",
        "group",
        "compute_class",
        "clinical_score",
        "model_version",
        "items",
        "efficiency",
        "robustness",
        "generalisation",
    }
    check_kind(doc, file, "a contest evaluation file", known)  # a scene or rule file: exit 2
    for key in sorted(set(doc) - known):
        problems.append(f"{key}: unknown field ignored")
    team = doc.get("team")
    if not _id(team):
        problems.append(f"team: expected an id (1-64 characters, no / \\ |), got {team!r}")
        team = None
    track = doc.get("track")
    if not isinstance(track, int) or isinstance(track, bool) or track not in TRACKS:
        problems.append(f"track: expected an integer 1-7, got {track!r}")
        track = None
    group = doc.get("group")
    if not _id(group):
        problems.append(f"group: expected an id, got {group!r}")
        group = None
    cclass = doc.get("compute_class")
    if cclass not in COMPUTE_CLASSES:
        problems.append(f"compute_class: expected one of {list(COMPUTE_CLASSES)}, got {cclass!r}")
        cclass = None
    model = doc.get("model_version")
    if not (isinstance(model, str) and 0 < len(model) <= 200 and model.isprintable()):
        problems.append(
            f"model_version: expected the scored model's version (1-200 printable characters), got "
            f"{model!r}; not rankable"
        )
        model = None
    c = doc.get("clinical_score")
    if not (_number(c) and 0.0 <= c <= 1.0):
        problems.append(f"clinical_score: expected a number in [0, 1], got {c!r}; no total")
        c = None

    out: dict[str, Any] = {
        "team": team,
        "track": track,
        "group": group,
        "compute_class": cclass,
        "rule": RULE,
        "symbols": SYMBOLS,
    }
    if track == NO_SAFETY_TRACK:
        if "items" in doc:
            problems.append("items: track 7 has no safety score; items ignored")
        areas: dict[str, ItemArea] = {}
        s = ws = wc = None
        zero_rule = None
        t_raw = None if c is None else total_exact(None, c)
        out.update(items=None, weakest=None)
    else:
        areas, item_problems = score_items(doc.get("items"))
        problems += item_problems
        s, zero_rule = safety_score({k: (a.value if a.computable else None) for k, a in areas.items()})
        ws, wc = safety_weight(s), clinical_weight(s)
        t_raw = None if c is None else total_exact(s, c)
        w = weakest(areas)
        out.update(
            items={k: a.to_dict() for k, a in areas.items()},
            weakest={
                "item": w.item,
                "value": w.value,
                "positives": w.positives,
                "negatives": w.negatives,
                "kind": w.kind,
                "reason": w.reason,
            },
        )
    g = gate(thresholds, areas, s if s is not None else 0.0, track=track, has_total=t_raw is not None)
    if model is None:
        g = GateResult(NOT_RANKABLE, (*g.reasons, "no model version: the record cannot be traced"), g.checks)
    out.update(
        gate=g.to_dict(),
        rankable=g.status == "rankable",
        S=s,
        zero_rule=zero_rule,
        w_s=ws,
        w_c=wc,
        C=c,
        T=None if t_raw is None else round2(t_raw),
        T_unrounded=None if t_raw is None else float(t_raw),
        versions={"scoring": scoring_version(), "model": model},
        efficiency=_efficiency(doc.get("efficiency"), problems),
        robustness=_robustness(doc.get("robustness"), problems),
        generalisation=_generalisation(doc.get("generalisation"), problems),
        thresholds={"published": thresholds.published, "file": thresholds.source},
        problems=problems,
    )
    out[DIGEST_FIELD] = record_digest(out)
    return out

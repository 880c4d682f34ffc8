"""The ranking gate: published thresholds decide whether a result may be ranked at all.

The gate is separate from the weights and the total: a total can always be computed, but
only a result that passes published thresholds is ranked. Until the thresholds are published the gate
answers "not rankable", never a number. A threshold file that is filled in wrongly (a placeholder, 0,
a negative value, a value above 1, a non-number) would make everyone pass or everyone fail, so it is
refused with :class:`ThresholdConfigError` and logged at ERROR level.

Threshold file (JSON)::

    {"published": true,
     "thresholds": [{"item": "NH",  "metric": "recall_at_fpr",       "at": 0.10, "min": 0.50},
                    {"item": "SPL", "metric": "precision_at_recall", "at": 0.15, "min": 0.60},
                    {"item": "DUP", "metric": "precision_at_top_k",  "at": 20,   "min": 0.50},
                    {"item": "S",   "metric": "value",                            "min": 0.30}]}

``"published": false`` (or no file) means not yet published; ``min: null`` is allowed only then.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from icl.contest.pr import ItemArea, NotComputable, precision_at_recall, precision_at_top_k, recall_at_fpr
from icl.errors import InputError

log = logging.getLogger("icl.contest")

RANKABLE = "rankable"
NOT_RANKABLE = "not rankable"
METRICS = ("value", "area", "recall_at_fpr", "precision_at_recall", "precision_at_top_k")
GATE_ITEMS = ("NH", "DUP", "SPL", "S")
NO_SAFETY_TRACK = 7  # track 7 has no safety score; its total is the clinical score


class ThresholdConfigError(InputError):
    """A threshold file that is misconfigured (placeholder, 0, out of range, wrong type)."""


@dataclass(frozen=True)
class Threshold:
    """One published requirement: ``metric(item, at) >= min``."""

    item: str
    metric: str
    minimum: float
    at: float | None = None

    def describe(self) -> str:
        """Short human form, e.g. ``NH recall_at_fpr@0.1 >= 0.5``."""
        at = f"@{self.at:g}" if self.at is not None else ""
        return f"{self.item} {self.metric}{at} >= {self.minimum:g}"


@dataclass(frozen=True)
class Thresholds:
    """Parsed threshold file; ``published`` False means the gate cannot rank anyone yet."""

    published: bool
    rules: tuple[Threshold, ...] = ()
    source: str | None = None


UNPUBLISHED = Thresholds(False, (), None)


def _fail(message: str, file: str | None, field: str | None) -> ThresholdConfigError:
    err = ThresholdConfigError(message, file, field)
    log.error("threshold misconfiguration: %s", err)
    return err


def _unit_min(value: Any, file: str | None, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(f"expected a number in (0, 1], got {value!r} (placeholder or wrong type)", file, field)
    v = float(value)
    if not math.isfinite(v):
        raise _fail(f"must be finite, got {v!r}", file, field)
    if v == 0.0:
        raise _fail(
            "a threshold of 0 lets every result pass; an unpublished threshold is null with published=false",
            file,
            field,
        )
    if v < 0.0 or v > 1.0:
        raise _fail(f"must lie in (0, 1], got {v!r} (above 1 nobody can pass)", file, field)
    return v


def parse_thresholds(obj: Any, file: str | None = None) -> Thresholds:
    """Validate a threshold document.

    Raises
    ------
    ThresholdConfigError
        On any misconfiguration; the error names the file and field and is logged at ERROR level.

    """
    if not isinstance(obj, dict):
        raise _fail(f"expected an object, got {type(obj).__name__}", file, None)
    unknown = sorted(set(obj) - {"published", "thresholds", "note"})
    if unknown:
        raise _fail(f"unknown field(s) {unknown}", file, None)
    published = obj.get("published")
    if not isinstance(published, bool):
        raise _fail(f"must be true or false, got {published!r}", file, "published")
    rules_in = obj.get("thresholds", [])
    if not isinstance(rules_in, list):
        raise _fail("expected a list", file, "thresholds")
    if not published:
        for i, r in enumerate(rules_in):
            if isinstance(r, dict) and r.get("min") is not None:
                raise _fail(
                    "a threshold value in an unpublished file is a guess; leave min null until publication",
                    file,
                    f"thresholds[{i}].min",
                )
        return Thresholds(False, (), file)
    if not rules_in:
        raise _fail("published thresholds must list at least one rule", file, "thresholds")
    rules = []
    for i, r in enumerate(rules_in):
        where = f"thresholds[{i}]"
        if not isinstance(r, dict):
            raise _fail(f"expected an object, got {type(r).__name__}", file, where)
        extra = sorted(set(r) - {"item", "metric", "at", "min"})
        if extra:
            raise _fail(f"unknown field(s) {extra}", file, where)
        item = r.get("item")
        if item not in GATE_ITEMS:
            raise _fail(f"must be one of {list(GATE_ITEMS)}, got {item!r}", file, f"{where}.item")
        metric = r.get("metric", "value" if item == "S" else "area")
        if metric not in METRICS or (item == "S") != (metric == "value"):
            allowed = ["value"] if item == "S" else list(METRICS[1:])
            raise _fail(f"for {item} must be one of {allowed}, got {metric!r}", file, f"{where}.metric")
        if r.get("min") is None:
            raise _fail("published=true but the value is null", file, f"{where}.min")
        minimum = _unit_min(r["min"], file, f"{where}.min")
        at = None
        if metric in ("recall_at_fpr", "precision_at_recall"):
            at = _unit_min(r.get("at"), file, f"{where}.at")
        elif metric == "precision_at_top_k":
            k = r.get("at")
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise _fail(f"must be a positive integer K, got {k!r}", file, f"{where}.at")
            at = float(k)
        elif "at" in r:
            raise _fail(f"metric {metric!r} takes no 'at'", file, f"{where}.at")
        rules.append(Threshold(item, metric, minimum, at))
    return Thresholds(True, tuple(rules), file)


@dataclass(frozen=True)
class GateResult:
    """Outcome of the gate: ``status`` is ``'rankable'`` or ``'not rankable'``, with reasons."""

    status: str
    reasons: tuple[str, ...]
    checks: tuple[dict, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"status": self.status, "reasons": list(self.reasons), "checks": list(self.checks)}


def metric_value(rule: Threshold, areas: dict[str, ItemArea], s: float) -> float:
    """Evaluate the metric a rule names on one result (raises NotComputable if undefined)."""
    if rule.item == "S":
        return s
    area = areas[rule.item]
    if rule.metric == "area":
        if not area.computable:
            raise NotComputable(area.reason or "not computable")
        return area.value
    if area.curve is None:
        raise NotComputable(area.reason or "no curve")
    if rule.metric == "recall_at_fpr":
        return recall_at_fpr(area.curve, rule.at)
    if rule.metric == "precision_at_recall":
        return precision_at_recall(area.curve, rule.at)
    return precision_at_top_k(area.curve, int(rule.at))


def gate(
    thresholds: Thresholds, areas: dict[str, ItemArea], s: float, *, track: int | None, has_total: bool
) -> GateResult:
    """Decide whether a result may be ranked.

    Parameters
    ----------
    thresholds : Thresholds
        Parsed threshold file (``UNPUBLISHED`` when none was given).
    areas : dict
        Item areas of a safety track (empty for track 7).
    s : float
        Safety score (ignored for track 7).
    track : int or None
        Track number; a result without one cannot be ranked.
    has_total : bool
        Whether a total could be computed (the clinical score was valid).

    """
    reasons = []
    if track is None:
        reasons.append("no track number: an unlabelled score table cannot be ranked")
    if not has_total:
        reasons.append("no total: the clinical score is missing or invalid")
    if track == NO_SAFETY_TRACK:
        # Track 7 takes no part in the safety items: the safety thresholds do not apply to it.
        return GateResult(RANKABLE if not reasons else NOT_RANKABLE, tuple(reasons))
    if not thresholds.published:
        reasons.append("thresholds not yet published")
        return GateResult(NOT_RANKABLE, tuple(reasons))
    checks = []
    for rule in thresholds.rules:
        try:
            v = metric_value(rule, areas, s)
        except NotComputable as exc:
            checks.append({"rule": rule.describe(), "value": None, "passed": False})
            reasons.append(f"{rule.describe()}: not computable ({exc})")
            continue
        ok = v >= rule.minimum
        checks.append({"rule": rule.describe(), "value": v, "passed": ok})
        if not ok:
            reasons.append(f"{rule.describe()}: got {v:.4f}")
    return GateResult(RANKABLE if not reasons else NOT_RANKABLE, tuple(reasons), tuple(checks))

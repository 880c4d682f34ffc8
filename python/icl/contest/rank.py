"""Rank several teams' score records within each (track, group), with the efficiency tie-break.

Order: rankable records only, by the rounded total ``T`` (high first). Equal totals are broken by an
efficiency score only when every tied team declares the same compute class (domestic or foreign) and
the same measurement protocol; otherwise the tie stands and takes its places (1, 1, 3). The efficiency
score is ``0.5 * speed + 0.5 * memory``, each min-max normalised over the rankable teams of the same
track and group (fastest / leanest = 1, slowest / heaviest = 0; all equal gives 1). Efficiency never
enters S, C or T.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from icl.contest.gate import NO_SAFETY_TRACK
from icl.errors import InputError


def refuse_safety_rank(record: dict[str, Any]) -> float:
    """Return the safety score a record may be ordered by; track 7 has none and is refused.

    Raises
    ------
    ValueError
        For track 7 (it takes no part in the safety items) or a record without a safety score.

    """
    if record.get("track") == NO_SAFETY_TRACK:
        raise ValueError("track 7 has no safety score: ordering it by S is undefined")
    s = record.get("S")
    if s is None:
        raise ValueError("record has no safety score")
    return float(s)


def _minmax(values: list[float], higher_is_better: bool) -> list[float]:
    lo, hi = min(values), max(values)
    if hi == lo:
        return [1.0] * len(values)
    return [((v - lo) if higher_is_better else (hi - v)) / (hi - lo) for v in values]


def efficiency_scores(records: list[dict[str, Any]]) -> list[float | None]:
    """Half min-max speed (1 / latency) and half min-max peak memory, over ``records``."""
    have = [i for i, r in enumerate(records) if r.get("efficiency")]
    out: list[float | None] = [None] * len(records)
    if not have:
        return out
    speed = _minmax([1.0 / records[i]["efficiency"]["latency_s"] for i in have], True)
    mem = _minmax([records[i]["efficiency"]["peak_memory_gib"] for i in have], False)
    for k, i in enumerate(have):
        out[i] = 0.5 * speed[k] + 0.5 * mem[k]
    return out


def _can_break(tied: list[dict[str, Any]]) -> str | None:
    """Why a tie cannot be broken by efficiency, or None if it can."""
    classes = {r.get("compute_class") for r in tied}
    if None in classes or len(classes) > 1:
        return f"compute classes differ or are missing ({sorted(map(str, classes))}): tie stands"
    if any(not r.get("efficiency") for r in tied):
        return "efficiency missing for a tied team: tie stands"
    protos = {repr(sorted(r["efficiency"]["protocol"].items())) for r in tied}
    if len(protos) > 1:
        return "efficiency measured under different protocols: tie stands"
    return None


def rank_group(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Places for the records of one (track, group); not-rankable records get no place."""
    ranked = [r for r in records if r.get("rankable") and r.get("T") is not None]
    eff = efficiency_scores(ranked)
    rows = []
    by_total: dict[float, list[int]] = defaultdict(list)
    for i, r in enumerate(ranked):
        by_total[r["T"]].append(i)
    place = 1
    for t in sorted(by_total, reverse=True):
        idx = by_total[t]
        tied = [ranked[i] for i in idx]
        why = _can_break(tied) if len(idx) > 1 else None
        if len(idx) > 1 and why is None:
            # Equal efficiency scores stay tied; otherwise higher efficiency goes first.
            idx.sort(key=lambda i: (-eff[i], ranked[i]["team"] or ""))
            p = place
            for k, i in enumerate(idx):
                if k and eff[i] != eff[idx[k - 1]]:
                    p = place + k
                rows.append(_row(ranked[i], p, eff[i], "tie broken by efficiency"))
        else:
            for i in sorted(idx, key=lambda i: ranked[i]["team"] or ""):
                rows.append(_row(ranked[i], place, eff[i], why))
        place += len(idx)
    for r in sorted((r for r in records if r not in ranked), key=lambda r: r.get("team") or ""):
        reasons = (r.get("gate") or {}).get("reasons") or ["no total"]
        rows.append(_row(r, None, None, "; ".join(reasons)))
    return rows


def _row(r: dict[str, Any], place: int | None, eff: float | None, note: str | None) -> dict[str, Any]:
    w = r.get("weakest") or {}
    return {
        "place": place,
        "team": r.get("team"),
        "status": "rankable" if r.get("rankable") else "not rankable",
        "weakest": w.get("item"),
        "weakest_value": w.get("value"),
        "weakest_positives": w.get("positives"),
        "weakest_negatives": w.get("negatives"),
        "NH": _item(r, "NH"),
        "DUP": _item(r, "DUP"),
        "SPL": _item(r, "SPL"),
        "S": r.get("S"),
        "w_s": r.get("w_s"),
        "w_c": r.get("w_c"),
        "C": r.get("C"),
        "T": r.get("T"),
        "compute_class": r.get("compute_class"),
        "efficiency": eff,
        "note": note,
    }


def _item(r: dict[str, Any], key: str) -> float | None:
    items = r.get("items")
    return None if not items else items[key]["value"]


def _check_record(r: Any, file: str) -> dict[str, Any]:
    """Minimal structural check of a score record written by ``icl contest-score``."""
    if not isinstance(r, dict):
        raise InputError("expected a score record object", file)
    for key in ("team", "track", "group", "rankable", "T", "S", "gate"):
        if key not in r:
            raise InputError("missing (not a contest-score output?)", file, key)
    if r["T"] is not None and not (isinstance(r["T"], (int, float)) and math.isfinite(r["T"])):
        raise InputError("expected a number or null", file, "T")
    eff = r.get("efficiency")
    if eff is not None:
        ok = (
            isinstance(eff, dict)
            and isinstance(eff.get("protocol"), dict)
            and all(
                isinstance(eff.get(k), (int, float))
                and not isinstance(eff.get(k), bool)
                and math.isfinite(eff[k])
                and eff[k] > 0
                for k in ("latency_s", "peak_memory_gib")
            )
        )
        if not ok:
            raise InputError("expected {latency_s > 0, peak_memory_gib > 0, protocol}", file, "efficiency")
    return r


def rank_records(records: list[tuple[str, Any]]) -> dict[str, Any]:
    """Rank score records (``(file, record)`` pairs) within each track and group.

    Returns
    -------
    dict
        ``{"groups": [{"track", "group", "rows": [...]}, ...]}`` ordered by track then group.

    """
    checked = [_check_record(r, f) for f, r in records]
    teams = [(r["track"], r["group"], r["team"]) for r in checked]
    dup = {t for t in teams if teams.count(t) > 1}
    if dup:
        raise InputError(
            f"team listed twice in one track and group: {sorted(map(str, dup))}", records[0][0], "team"
        )
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in checked:
        groups[(r["track"], r["group"])].append(r)
    out = []
    for track, group in sorted(groups, key=lambda k: (k[0] is None, k[0] or 0, str(k[1]))):
        out.append({"track": track, "group": group, "rows": rank_group(groups[(track, group)])})
    return {"groups": out}

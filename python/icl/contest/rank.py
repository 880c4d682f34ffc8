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


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _need(ok: bool, file: str, field: str, message: str) -> None:
    if not ok:
        raise InputError(message, file, field)


def _check_record(r: Any, file: str) -> dict[str, Any]:
    """Re-validate a score record written by ``icl contest-score`` before it may take a place.

    Types and ranges of every field used for ranking, the record's own digest (a hand edit shows),
    and its arithmetic: ``S`` from the item areas, the weights, ``T`` from ``S`` and ``C``, and
    ``rankable`` from the gate.
    """
    from icl.contest.safety import ITEMS, safety_score, safety_weight, total
    from icl.contest.scoring import COMPUTE_CLASSES, DIGEST_FIELD, TRACKS, record_digest

    _need(isinstance(r, dict), file, "", "expected a score record object (not a contest-score output?)")
    for key in ("team", "track", "group", "rankable", "T", "S", "C", "gate", "versions", DIGEST_FIELD):
        _need(key in r, file, key, "missing (not a contest-score output of this version?)")
    _need(isinstance(r[DIGEST_FIELD], str), file, DIGEST_FIELD, "expected a hex digest")
    try:
        digest = record_digest(r)
    except (TypeError, ValueError) as exc:
        raise InputError(f"record is not plain JSON: {exc}", file) from None
    _need(
        digest == r[DIGEST_FIELD],
        file,
        DIGEST_FIELD,
        "does not match the record's content: the record was edited after contest-score wrote it; "
        "score the team's input again",
    )
    _need(
        r["team"] is None or isinstance(r["team"], str), file, "team", f"expected a string, got {r['team']!r}"
    )
    _need(
        r["group"] is None or isinstance(r["group"], str),
        file,
        "group",
        f"expected a string, got {r['group']!r}",
    )
    track = r["track"]
    _need(
        track is None or (isinstance(track, int) and not isinstance(track, bool) and track in TRACKS),
        file,
        "track",
        f"expected an integer 1-7 or null, got {track!r}",
    )
    _need(isinstance(r["rankable"], bool), file, "rankable", f"expected true or false, got {r['rankable']!r}")
    gate = r["gate"]
    _need(
        isinstance(gate, dict)
        and gate.get("status") in ("rankable", "not rankable")
        and isinstance(gate.get("reasons"), list),
        file,
        "gate",
        "expected {status, reasons, checks}",
    )
    _need(
        r["rankable"] == (gate["status"] == "rankable"),
        file,
        "rankable",
        f"{r['rankable']!r} contradicts the gate status {gate['status']!r}",
    )
    cclass = r.get("compute_class")
    _need(
        cclass is None or cclass in COMPUTE_CLASSES,
        file,
        "compute_class",
        f"expected one of {list(COMPUTE_CLASSES)} or null, got {cclass!r}",
    )
    for key, hi in (("T", 100.0), ("S", 1.0), ("C", 1.0), ("w_s", 1.0), ("w_c", 1.0)):
        v = r.get(key)
        _need(
            v is None or (_num(v) and 0.0 <= v <= hi),
            file,
            key,
            f"expected a number in [0, {hi:g}] or null, got {v!r}",
        )
    versions = r["versions"]
    _need(
        isinstance(versions, dict) and isinstance(versions.get("scoring"), dict),
        file,
        "versions",
        "expected {scoring, model}",
    )
    if r["rankable"]:
        _need(r["T"] is not None and r["C"] is not None, file, "T", "a rankable record needs a total")
        _need(
            isinstance(versions.get("model"), str),
            file,
            "versions.model",
            "a rankable record names its model",
        )
    # The arithmetic, recomputed from the record's own numbers.
    if track == 7:
        _need(r["S"] is None, file, "S", "track 7 has no safety score")
        s = None
    elif track is not None:
        items = r.get("items")
        _need(
            isinstance(items, dict) and all(isinstance(items.get(k), dict) for k in ITEMS),
            file,
            "items",
            "expected NH, DUP and SPL areas",
        )
        for k in ITEMS:
            a = items[k]
            _need(
                _num(a.get("value")) and 0.0 <= a["value"] <= 1.0,
                file,
                f"items.{k}.value",
                f"expected a number in [0, 1], got {a.get('value')!r}",
            )
        s, _ = safety_score({k: items[k]["value"] if items[k].get("reason") is None else None for k in ITEMS})
        _need(r["S"] == s, file, "S", f"{r['S']!r} is not the harmonic mean of the item areas ({s!r})")
        _need(r.get("w_s") == safety_weight(s), file, "w_s", "does not follow from S")
    else:
        s = r["S"]
    if r["C"] is not None and (track == 7 or s is not None):
        t = total(s, r["C"])
        _need(r["T"] == t, file, "T", f"{r['T']!r} does not follow from S and C ({t!r})")
    eff = r.get("efficiency")
    if eff is not None:
        ok = (
            isinstance(eff, dict)
            and isinstance(eff.get("protocol"), dict)
            and all(_num(eff.get(k)) and eff[k] > 0 for k in ("latency_s", "peak_memory_gib"))
        )
        _need(ok, file, "efficiency", "expected {latency_s > 0, peak_memory_gib > 0, protocol}")
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

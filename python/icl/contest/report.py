"""Rich tables for score records and rankings, columns in the contest's review order.

Review order: rankable? -> weakest item -> its case counts and interpolation -> total -> efficiency.
Column headers are the rule's symbols; the caption gives their full names.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from icl.contest.scoring import SYMBOLS

NOTE = "; ".join(f"{k} = {v}" for k, v in SYMBOLS.items())


def _f(v: Any, digits: int = 4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _counts(p: Any, n: Any) -> str:
    return "-" if p is None else f"{p}/{n}"


def score_table(r: dict[str, Any]) -> Table:
    """One team's record, one row per review step, in the contest's review order."""
    t = Table(
        title=f"team {r['team']}  track {r['track']}  group {r['group']}",
        caption=NOTE,
        caption_justify="left",
    )
    t.add_column("step")
    t.add_column("symbol")
    t.add_column("value", justify="right")
    t.add_column("detail")
    gate_detail = "; ".join(r["gate"]["reasons"]) or "all published thresholds met"
    t.add_row("1 rankable?", "", "yes" if r["rankable"] else "no", gate_detail)
    w = r.get("weakest")
    if w:
        t.add_row("2 weakest item", w["item"], _f(w["value"]), w["reason"] or "")
        t.add_row(
            "3 its cases",
            w["item"],
            _counts(w["positives"], w["negatives"]),
            f"{w['kind']} area, step interpolation" + (", /0.45" if w["kind"] == "partial" else ""),
        )
        for k in ("NH", "DUP", "SPL"):
            a = r["items"][k]
            t.add_row("", k, _f(a["value"]), f"P/N {_counts(a['positives'], a['negatives'])}")
        t.add_row("", "S", _f(r["S"]), r["zero_rule"] and f"zero rule: {r['zero_rule']}" or "harmonic mean")
    else:
        t.add_row("2 weakest item", "-", "-", "track 7: no safety score")
    t.add_row("4 total", "w_s", _f(r["w_s"]), "")
    t.add_row("", "w_c", _f(r["w_c"]), "")
    t.add_row("", "C", _f(r["C"]), "")
    t.add_row("", "T", _f(r["T"], 2), "" if r["rankable"] else "computed, not ranked")
    eff = r.get("efficiency") or {}
    t.add_row("5 efficiency", "", _f(eff.get("latency_s"), 3), "latency s/case (tie-break only)")
    t.add_row("", "", _f(eff.get("peak_memory_gib"), 2), "peak memory GiB (tie-break only)")
    rob, gen = r.get("robustness"), r.get("generalisation")
    if rob:
        t.add_row(
            "apart",
            "",
            _f(rob["drop_rate"]),
            f"robustness drop rate of {rob['metric']} over {rob['cases']} cases (not in T)",
        )
    if gen:
        t.add_row(
            "apart",
            "",
            f"{gen['in_distribution']:.4f} / {gen['unseen']:.4f}",
            f"generalisation, unseen = {gen['unseen_definition']} (not in T)",
        )
    return t


RANK_NOTE = (
    "ok? = rankable; weakest = the lowest item area (P/N its forged/real cases); NH, DUP, SPL, w_s, "
    "w_c are in the ranking JSON; eff. = efficiency tie-break score"
)


def rank_table(group: dict[str, Any]) -> Table:
    """One (track, group) ranking, narrow enough for 80 columns; the notes follow as numbered lines."""
    t = Table(
        title=f"track {group['track']}  group {group['group']}",
        caption=RANK_NOTE,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=0,
    )
    for col, justify in (
        ("place", "right"),
        ("team", "left"),
        ("ok?", "left"),
        ("weakest", "left"),
        ("P/N", "right"),
        ("S", "right"),
        ("C", "right"),
        ("T", "right"),
        ("class", "left"),
        ("eff.", "right"),
        ("note", "right"),
    ):
        t.add_column(col, justify=justify, overflow="fold")
    for k, row in enumerate(group["rows"], 1):
        weakest = "-" if row["weakest"] is None else f"{row['weakest']} {_f(row['weakest_value'], 2)}"
        t.add_row(
            "-" if row["place"] is None else str(row["place"]),
            str(row["team"]),
            "yes" if row["status"] == "rankable" else "no",
            weakest,
            _counts(row["weakest_positives"], row["weakest_negatives"]),
            _f(row["S"], 3),
            _f(row["C"], 3),
            _f(row["T"], 2),
            row["compute_class"] or "-",
            _f(row["efficiency"], 2),
            f"[{k}]" if row["note"] else "",
        )
    return t


def rank_notes(group: dict[str, Any]) -> list[str]:
    """Return the notes the table refers to as ``[k]``, one line each."""
    return [f"[{k}] {row['team']}: {row['note']}" for k, row in enumerate(group["rows"], 1) if row["note"]]

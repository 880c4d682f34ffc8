"""Rich tables for score records and rankings, columns in the seed's review order.

Review order: rankable? -> weakest item -> its case counts and interpolation -> total -> efficiency.
Column headers are the rule's symbols; the caption gives their full names.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from icl.contest.scoring import SYMBOLS

NOTE = "; ".join(f"{k} = {v}" for k, v in SYMBOLS.items())


def _f(v: Any, digits: int = 4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _counts(p: Any, n: Any) -> str:
    return "-" if p is None else f"{p}/{n}"


def score_table(r: dict[str, Any]) -> Table:
    """One team's record as a table."""
    t = Table(title=f"team {r['team']}  track {r['track']}  group {r['group']}", caption=NOTE,
              caption_justify="left")
    for col in ("rankable", "weakest", "P/N", "interp.", "NH", "DUP", "SPL", "S", "w_s", "w_c", "C", "T",
                "latency s", "peak GiB"):
        t.add_column(col, justify="left" if col in ("rankable", "weakest", "interp.") else "right")
    w = r.get("weakest") or {}
    eff = r.get("efficiency") or {}
    items = r.get("items") or {}
    t.add_row("yes" if r["rankable"] else "no", w.get("item", "-"), _counts(w.get("positives"), w.get("negatives")),
              "step" if w else "-", *(_f(items[k]["value"]) if items else "-" for k in ("NH", "DUP", "SPL")),
              _f(r["S"]), _f(r["w_s"]), _f(r["w_c"]), _f(r["C"]), _f(r["T"], 2),
              _f(eff.get("latency_s"), 3), _f(eff.get("peak_memory_gib"), 2))
    return t


def rank_table(group: dict[str, Any]) -> Table:
    """One (track, group) ranking as a table."""
    t = Table(title=f"track {group['track']}  group {group['group']}", caption=NOTE, caption_justify="left")
    for col in ("place", "team", "rankable", "weakest", "P/N", "NH", "DUP", "SPL", "S", "w_s", "w_c", "C", "T",
                "class", "eff.", "note"):
        t.add_column(col)
    for row in group["rows"]:
        t.add_row("-" if row["place"] is None else str(row["place"]), str(row["team"]),
                  "yes" if row["status"] == "rankable" else "no", row["weakest"] or "-",
                  _counts(row["weakest_positives"], row["weakest_negatives"]),
                  _f(row["NH"]), _f(row["DUP"]), _f(row["SPL"]), _f(row["S"]), _f(row["w_s"]), _f(row["w_c"]),
                  _f(row["C"]), _f(row["T"], 2), row["compute_class"] or "-", _f(row["efficiency"], 3),
                  row["note"] or "")
    return t

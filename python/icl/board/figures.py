"""SVG figures of the board pages, drawn with matplotlib's object API (no pyplot, no display).

Every figure is drawn at 72 dpi with text of at least 10 pt (13 px as a browser shows an SVG in points),
shown at its natural size, and written with a fixed hash salt and no date, so that the same rows give the
same bytes.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib import rcParams
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

QUALIFIED = "#1b7837"
NOT_QUALIFIED = "#b2182b"
NOT_RANKED = "#7f7f7f"
RUN_COLOURS = ("#2166ac", "#67a9cf", "#92c5de")
FONT = 10


def _figure(w: float, h: float) -> Figure:
    fig = Figure(figsize=(w, h), dpi=72, layout="constrained")
    FigureCanvasSVG(fig)
    return fig


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    old = rcParams["svg.hashsalt"]
    rcParams["svg.hashsalt"] = "icl-board"
    try:
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "icl-bench"})
    finally:
        rcParams["svg.hashsalt"] = old
    return buf.getvalue()


def _colour(row: dict) -> str:
    if row["status"] == "not ranked":
        return NOT_RANKED
    return QUALIFIED if row["qualified"] else NOT_QUALIFIED


def board_scores(rows: list[dict], scale: float = 100.0) -> str:
    """Every row's score with its 95 % interval and its worst run, in board order (best at the top)."""
    n = max(len(rows), 1)
    fig = _figure(7.0, 0.9 + 0.42 * n)
    ax = fig.add_subplot()
    for i, r in enumerate(rows):
        y = n - 1 - i
        c = _colour(r)
        if r.get("interval"):
            lo, hi = r["interval"]
            ax.plot([lo, hi], [y, y], color=c, lw=3, solid_capstyle="butt")
        ax.plot([r["worst"]], [y], marker="|", ms=12, color="black", ls="none")
        ax.plot([r["score"]], [y], marker="o", ms=7, color=c, ls="none")
    ax.set_yticks(range(n), [r["name"] for r in reversed(rows)] if rows else [""], fontsize=FONT)
    ax.set_xlim(0, scale)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel("score (dot: mean of the runs; bar: 95 % interval; tick: worst run)", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.grid(axis="x", color="#dddddd")
    return _svg(fig)


def groups(row: dict) -> str:
    """Draw the six group scores (0-1) of a professional entry, or the halo subscores, as bars."""
    items = [(k, v) for k, v in row["groups"].items() if v is not None]
    fig = _figure(5.2, 2.8)
    ax = fig.add_subplot()
    names = [k.replace("_cases", "").replace("_", " ") for k, _ in items]
    vals = [float(v) for _, v in items]
    top = 1.0 if all(v <= 1.0 for v in vals) else 100.0
    bars = ax.bar(names, vals, color="#4393c3")
    ax.bar_label(bars, [f"{v:.2f}" if top == 1.0 else f"{v:.1f}" for v in vals], fontsize=FONT, padding=2)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("group score" if top == 1.0 else "score", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    return _svg(fig)


def runs(row: dict) -> str:
    """Per run: its score, CPU seconds, wall seconds and peak memory."""
    k = len(row["run_scores"])
    cost = row["cost"]
    panels = [
        ("score", row["run_scores"]),
        ("CPU s", [c["cpu_s"] for c in cost]),
        ("wall s", [c["wall_s"] for c in cost]),
        ("peak MiB", [c["peak_memory_bytes"] / 2**20 for c in cost]),
    ]
    fig = _figure(7.6, 2.4)
    axes = fig.subplots(1, 4)
    labels = [f"run {i + 1}" for i in range(k)]
    for ax, (title, vals) in zip(axes, panels, strict=True):
        bars = ax.bar(labels, vals, color=RUN_COLOURS[: len(vals)] if len(vals) <= 3 else "#4393c3")
        ax.bar_label(bars, [f"{v:.3g}" for v in vals], fontsize=FONT - 1, padding=1)
        ax.set_title(title, fontsize=FONT)
        ax.set_ylim(0, max(max(vals, default=0) * 1.25, 1e-9))
        ax.tick_params(labelsize=FONT - 1)
        ax.tick_params(axis="x", rotation=0)
    return _svg(fig)


def distribution(row: dict) -> str:
    """Draw the score's distribution with its 95 % interval.

    Professional entries: the bootstrap replicates of the total (clustered by base eye and design family).
    Halo entries: each case's score (mean of the runs), with the interval of the total.
    """
    fig = _figure(6.4, 2.8)
    ax = fig.add_subplot()
    if row.get("replicates"):
        reps = np.asarray(row["replicates"], float)
        lo, hi = float(reps.min()), float(reps.max())
        bins = np.linspace(lo - 0.5, hi + 0.5, 31) if hi - lo < 1e-9 else 30
        ax.hist(reps, bins=bins, color="#92c5de", edgecolor="#4393c3")
        ax.set_xlabel("total over bootstrap replicates", fontsize=FONT)
        ax.set_ylabel("replicates", fontsize=FONT)
    else:
        cases = row.get("cases") or {}
        ys = np.arange(len(cases))
        ax.plot(list(cases.values()), ys, "o", color="#4393c3", ms=5)
        ax.set_yticks(ys, list(cases), fontsize=FONT - 2 if len(cases) > 20 else FONT)
        ax.set_xlabel("case score (mean of the runs)", fontsize=FONT)
        ax.set_xlim(0, 100)
    if row.get("interval"):
        for x in row["interval"]:
            ax.axvline(x, color="black", ls="--", lw=1)
    ax.axvline(row["raw_score"], color=QUALIFIED, lw=2)
    for i, s in enumerate(row["run_scores"]):
        ax.axvline(s, color=RUN_COLOURS[i % 3], lw=1, ls=":")
    ax.set_title("solid: mean of the runs; dashed: 95 % interval; dotted: each run", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    return _svg(fig)

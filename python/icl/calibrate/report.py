"""Write a calibration record as JSON, Markdown and figures (pass rates, Kendall tau, pairwise orders)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def _f(v: float | None, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def _save(fig, path: Path) -> None:
    """Write a figure as PNG through the shared atomic writer (never through a link at ``path``)."""
    import io

    from icl.io import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic_write_bytes(path, buf.getvalue())


def figures(cal: dict, folder: Path) -> list[str]:
    """Pass-rate heat map, Kendall tau histogram and pairwise-order matrix; return the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = cal["order"]
    checks = sorted(cal["checks"])
    track = cal["track"]
    files = []

    rates = np.array(
        [
            [
                np.nan if cal["checks"][c]["pass_rate"][b] is None else cal["checks"][c]["pass_rate"][b]
                for b in names
            ]
            for c in checks
        ]
    )
    fig, ax = plt.subplots(figsize=(1.2 + 0.55 * len(names), 1.2 + 0.16 * len(checks)))
    im = ax.imshow(rates, aspect="auto", vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(checks)), checks, fontsize=6)
    ax.set_title(f"{track}: pass rate per check and baseline", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    files.append(f"{track}_pass_rates.png")
    _save(fig, folder / files[-1])
    plt.close(fig)

    rs = cal["rank_stability"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    edges = np.linspace(-1, 1, 21)
    axes[0].bar(edges[:-1], rs["kendall_tau"]["histogram"], width=0.1, align="edge", color="#4c72b0")
    axes[0].set_xlabel("Kendall tau against the full-data order")
    axes[0].set_ylabel("bootstrap replicates")
    axes[0].set_title(f"{track}: rank stability ({rs['replicates']} replicates)", fontsize=9)
    p = np.array(
        [[np.nan if a == b else rs["pairwise_order_probability"][a][b] for b in names] for a in names]
    )
    im = axes[1].imshow(p, vmin=0, vmax=1, cmap="coolwarm")
    axes[1].set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    axes[1].set_yticks(range(len(names)), names, fontsize=7)
    axes[1].set_title("P(row scores above column)", fontsize=9)
    fig.colorbar(im, ax=axes[1], fraction=0.04)
    fig.tight_layout()
    files.append(f"{track}_rank_stability.png")
    _save(fig, folder / files[-1])
    plt.close(fig)
    return files


def markdown(cal: dict, figs: list[str], context: dict) -> str:
    """Return the calibration report as Markdown."""
    names = cal["order"]
    rs = cal["rank_stability"]
    lines = [f"# Calibration report: {cal['track']} track", ""]
    for k, v in context.items():
        if isinstance(v, (str, int, float)):  # structured context stays in the JSON
            lines.append(f"- {k}: {v}")
    lines += [
        "",
        "## Baselines",
        "",
        "| baseline | role | score | 95 % interval (clustered bootstrap) |",
        "|---|---|---|---|",
    ]
    for b in names:
        lo, hi = rs["interval_95"][b]
        row = cal["baselines"][b]
        lines.append(f"| {b} | {row['role']} | {row['score']:.2f} | {lo:.2f}-{hi:.2f} |")
    tau = rs["kendall_tau"]
    lines += [
        "",
        "## Rank stability",
        "",
        f"{rs['replicates']} bootstrap replicates (seed {rs['seed']}; {rs['unit']}, one draw shared by "
        f"every baseline). Kendall tau against the full-data order: mean {tau['mean']:.3f}, median "
        f"{tau['median']:.3f}, 5th percentile {tau['p05']:.3f}, minimum {tau['min']:.3f}; "
        f"{100 * tau['share_equal_to_1']:.1f} % of the replicates keep the order exactly.",
        "",
        "Probability that the row baseline scores above the column baseline (ties count half):",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for a in names:
        lines.append(
            f"| {a} | "
            + " | ".join("" if a == b else f"{rs['pairwise_order_probability'][a][b]:.2f}" for b in names)
            + " |"
        )
    lines += [
        "",
        "## Checks",
        "",
        f"Pass rate = share of graded units where the check reaches {cal['pass_mark']:g}; discrimination = "
        "mean check value of the upper half of the baselines (by score) minus the lower half. Flags: "
        "**all** = passed by every baseline on every unit, **none** = passed by no baseline, not even the "
        "ceiling.",
        "",
        "| check | " + " | ".join(names) + " | discrimination | flag | note |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    for c in sorted(cal["checks"]):
        v = cal["checks"][c]
        flag = "all" if v["passed_by_every_baseline"] else ("none" if v["passed_by_none"] else "")
        lines.append(
            f"| {c} | "
            + " | ".join(_f(v["pass_rate"][b]) for b in names)
            + f" | {_f(v['discrimination'])} | {flag} | {v['note'] or ''} |"
        )
    cf = cal["ceiling_floor"]
    for part in ("groups", "strata"):
        if part not in cf:
            continue
        lines += [
            "",
            f"## Ceiling and floor per {'group' if part == 'groups' else 'stratum'}",
            "",
            "| | ceiling | by | floor | by |",
            "|---|---|---|---|---|",
        ]
        for k, v in cf[part].items():
            lines.append(
                f"| {k} | {v['ceiling']:.3f} | {v['ceiling_by']} | {v['floor']:.3f} | {v['floor_by']} |"
            )
    lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in figs] + [""]
    return "\n".join(lines)


def write(cal: dict, output: str | os.PathLike, context: dict | None = None) -> dict[str, Path]:
    """Write ``<track>.json``, ``<track>.md`` and the figures into ``output``."""
    from icl.io import atomic_write_bytes, write_json

    out = Path(output)
    figs = figures(cal, out)
    doc = dict(cal)
    doc["rank_stability"] = {k: v for k, v in cal["rank_stability"].items() if k != "taus"}
    doc["context"] = context or {}
    write_json(out / f"{cal['track']}.json", doc)
    md = out / f"{cal['track']}.md"
    atomic_write_bytes(md, markdown(cal, figs, context or {}).encode("utf-8"))
    return {"json": out / f"{cal['track']}.json", "markdown": md, **{f: out / f for f in figs}}

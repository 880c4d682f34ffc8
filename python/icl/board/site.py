"""The static board site: Jinja2 pages, matplotlib SVG figures, JSON and CSV beside every table.

Layout of ``icl board build ... --output SITE``::

    SITE/index.html, SITE/boards.json, SITE/style.css
    SITE/<board>/index.html            one page per track, split and board
    SITE/<board>/board.json, board.csv the board's table
    SITE/<board>/scores.svg            every row's score, interval and worst run
    SITE/<board>/<entry>.html          one page per submission on that board
    SITE/<board>/<entry>/              its tables (JSON and CSV) and figures (SVG)

The pages load nothing from the network and run no script: every page carries a content security policy
that allows only its own style sheet and images (``default-src 'none'; style-src 'self'; img-src 'self'``).
Tables become cards below 720 px, so a phone shows every field without scrolling sideways; figures keep
their natural size and scroll inside their box.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Any

from icl.board import figures
from icl.io import atomic_write_bytes, dumps_json, prepare_output_dir

TEMPLATES = Path(__file__).with_name("templates")
CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'"
MIB = 2**20


def slug(name: str) -> str:
    """Return a file name for a submission (letters, digits, ``.``, ``_``, ``-``; no leading dot)."""
    s = re.sub(r"[^A-Za-z0-9._-]", "-", name).lstrip(".") or "entry"
    return s[:80]


def _gate_text(v: bool | None) -> str:
    return "pass" if v is True else "fail" if v is False else "not assessed"


def _cell(v: Any) -> str:
    """Format a table cell: a dash for nothing, three significant digits for a float."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def board_table(board: dict) -> tuple[list[str], list[list[Any]]]:
    """Return the board's table as CSV columns and rows (one row per entry, in board order)."""
    rows = board["rows"]
    gate_names = list(rows[0]["gates"]) if rows else []
    group_names = list(rows[0]["groups"]) if rows else []
    runs = max((len(r["run_scores"]) for r in rows), default=0)
    cols = (
        [
            "place",
            "name",
            "status",
            "status_reason",
            "group",
            "score",
            "raw_score",
            "interval_lo",
            "interval_hi",
            "worst",
        ]
        + [f"run_{i + 1}" for i in range(runs)]
        + ["completion_rate", "missing_tasks", "tasks"]
        + gate_names
        + [f"group_{g}" for g in group_names]
        + ["cpu_s_per_run", "wall_s_per_run", "peak_memory_mib", "freeze_sha256", "code_sha256"]
    )
    out = []
    for r in rows:
        iv = r["interval"] or [None, None]
        out.append(
            [
                r["place"],
                r["name"],
                r["status"],
                r["status_reason"],
                r["group"],
                r["score"],
                r["raw_score"],
                iv[0],
                iv[1],
                r["worst"],
                *r["run_scores"],
                *([None] * (runs - len(r["run_scores"]))),
                r["completion_rate"],
                r["missing_tasks"],
                r["tasks"],
                *(_gate_text(r["gates"][g]["pass"]) for g in gate_names),
                *(r["groups"].get(g) for g in group_names),
                _mean([c["cpu_s"] for c in r["cost"]]),
                _mean([c["wall_s"] for c in r["cost"]]),
                max(c["peak_memory_bytes"] for c in r["cost"]) / MIB if r["cost"] else None,
                board["freeze_sha256"],
                r["frozen_sha256"],
            ]
        )
    return cols, out


def _csv(cols: list[str], rows: list[list[Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if v is None else f"{v:.6g}" if isinstance(v, float) else v for v in r])
    return buf.getvalue().encode()


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data.encode() if isinstance(data, str) else data)


def _entry_tables(board: dict, r: dict) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """Return the tables of an entry page: runs, gates with their evidence, groups, missing tasks."""
    runs = [
        [i + 1, s, c["cpu_s"], c["wall_s"], c["peak_memory_bytes"] / MIB, c["sets"], c["build_s"]]
        for i, (s, c) in enumerate(zip(r["run_scores"], r["cost"], strict=True))
    ]
    gates = [[g, _gate_text(v["pass"]), v["reason"]] for g, v in r["gates"].items()]
    evidence = [[g, e["what"], e["score"], e["note"]] for g, items in r["evidence"].items() for e in items]
    groups = [[g, v] for g, v in r["groups"].items()]
    missing = [[i + 1, t] for i, ts in enumerate(r["missing_by_run"]) for t in ts]
    return {
        "runs": (["run", "score", "cpu_s", "wall_s", "peak_memory_mib", "input_sets", "build_s"], runs),
        "gates": (["gate", "result", "reason"], gates),
        "evidence": (["gate", "what", "score", "note"], evidence),
        "groups": (["group", "score"], groups),
        "missing": (["run", "task"], missing),
    }


def build_site(data: dict[str, Any], output: str | os.PathLike, force: bool = False) -> list[Path]:
    """Write the site of :func:`icl.board.rows.board_data` into ``output`` (new or empty; see ``force``)."""
    import jinja2

    out = prepare_output_dir(output, force)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["num"] = lambda v, d=1: "–" if v is None else f"{v:.{d}f}"
    env.filters["gate"] = _gate_text
    env.filters["mib"] = lambda b: f"{b / MIB:.0f}"
    env.filters["mean"] = _mean
    env.filters["cell"] = _cell
    written = []

    def page(path: Path, template: str, **ctx: Any) -> None:
        html = env.get_template(template).render(csp=CSP, **ctx)
        _write(path, html)
        written.append(path)

    _write(out / "style.css", (TEMPLATES / "style.css").read_bytes())
    _write(out / "boards.json", dumps_json(data))
    page(out / "index.html", "index.html", boards=data["boards"], root="")
    for b in data["boards"]:
        d = out / b["id"]
        cols, rows = board_table(b)
        _write(d / "board.csv", _csv(cols, rows))
        _write(
            d / "board.json",
            dumps_json(
                {k: v for k, v in b.items() if k != "rows"}
                | {"columns": cols, "rows": [dict(zip(cols, r, strict=True)) for r in rows]}
            ),
        )
        scale = 100.0
        _write(d / "scores.svg", figures.board_scores(b["rows"], scale))
        for r in b["rows"]:
            r["slug"] = slug(r["name"])
        groups = list(dict.fromkeys(r["group"] for r in b["rows"]))  # in board order: qualified first
        sections = [(g, [r for r in b["rows"] if r["group"] == g]) for g in groups]
        page(d / "index.html", "board.html", board=b, sections=sections, root="../")
        for r in b["rows"]:
            e = d / r["slug"]
            tables = _entry_tables(b, r)
            for name, (tc, tr) in tables.items():
                _write(e / f"{name}.csv", _csv(tc, tr))
                _write(
                    e / f"{name}.json",
                    dumps_json({"columns": tc, "rows": [dict(zip(tc, x, strict=True)) for x in tr]}),
                )
            _write(e / "entry.json", dumps_json({"board": b["id"], "freeze_sha256": b["freeze_sha256"], **r}))
            _write(e / "groups.svg", figures.groups(r))
            _write(e / "runs.svg", figures.runs(r))
            _write(e / "distribution.svg", figures.distribution(r))
            page(d / f"{r['slug']}.html", "entry.html", board=b, row=r, tables=tables, root="../")
    return written

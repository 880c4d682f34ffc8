"""Board rows: scored runs of an evaluation turned into the rows of each board.

:func:`score_evaluation` scores the runs that :mod:`icl.board.queue` wrote (the professional scorer over the
runs of each submission; the halo scorer on each run and split) into ``scores/<name>.json``.
:func:`board_data` gathers one or more evaluations into boards, kept apart by track, split and board:

- professional test split: ``from-scratch``, ``reference-assisted``, ``research``;
- halo development split (public, never ranked) and test split (ranked), each with the same three boards.

Each row carries the raw total (mean of the runs), the worst run, the completion rate and the cost of every
run (CPU seconds, peak memory, wall seconds), a clustered bootstrap 95 % interval (professional: base eye x
design family, :func:`icl.pro.score.bootstrap`; halo: the case, through the calibration's bootstrap
:func:`icl.calibrate.core.rank_stability`), the number of missing tasks, and for the professional track the
five gates and six group scores. Rows are grouped by gates (every gate passed first) and then sorted by
score. Each row's status is one of

- ``provisional``: a from-scratch entry whose source review is not recorded (no scan sees a recompiled or
  translated copy of the reference, so a reviewer reads the source before the entry is confirmed);
- ``reviewed``: a from-scratch entry whose recorded source review confirms it;
- ``ranked``: an entry of a board that needs no source review (reference-assisted, research);
- ``not ranked``, with the reason: a release whose answers can be rebuilt, the public development split, an
  entry moved off the from-scratch board by evidence of reference code, or a review that reclassified it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from icl.board.queue import BOARDS, HALO_SET
from icl.errors import InputError
from icl.io import load_json, write_json

FORMAT = "icl-board/1"
SOURCE_REVIEW_FORMAT = "icl-source-review/1"
GATES = ("G1", "G2", "G3", "G4", "G5")
GROUPS = ("A", "B", "C", "D", "E", "F")
HALO_SPLITS = ("dev", "test")
#: Check kinds whose results are a gate's evidence (G3 comes from the harness records).
GATE_KINDS = {"G1": ("sequence",), "G2": ("energy", "pair"), "G4": ("convergence",), "G5": ("provenance",)}


# scoring --------------------------------------------------------------------------------------------------


def run_cost(records: list[dict]) -> dict[str, float | int | None]:
    """One run's cost from its sets' harness records: CPU and wall seconds summed, the largest peak memory.

    Peak memory is the run's control-group peak (every process of the run) where the record has it, else the
    largest resident set the wrapper measured.
    """
    peaks = [r.get("peak_memory_bytes") or r.get("peak_rss_bytes") or 0 for r in records]
    return {
        "cpu_s": float(sum(r.get("cpu_s") or 0.0 for r in records)),
        "wall_s": float(sum(r.get("wall_s") or 0.0 for r in records)),
        "peak_memory_bytes": int(max(peaks, default=0)),
        "sets": len(records),
        "build_s": 0.0,
    }


def score_evaluation(work: str | os.PathLike, bootstrap_n: int = 2000) -> list[dict]:
    """Score every submission of an evaluation into ``work/scores/<name>.json``; return the documents."""
    work = Path(work)
    ev = load_json(work / "evaluation.json")
    release = ev["release"]
    out = []
    for sub in ev["submissions"]:
        name = sub["name"]
        run_dirs = [work / "runs" / name / f"run{k}" for k in range(ev["runs"])]
        if ev["track"] == "pro":
            doc = _score_pro(release, run_dirs, name, ev["instances"], bootstrap_n)
        else:
            doc = _score_halo(release, run_dirs, name)
        doc.update(board=sub["board"], declared=sub["track"], frozen_sha256=sub["frozen_sha256"])
        write_json(work / "scores" / f"{name}.json", doc)
        out.append(doc)
    return out


def _score_pro(release: str, run_dirs: list[Path], name: str, ids: list[str], n: int) -> dict:
    from icl.pro.catalog import load_catalog
    from icl.pro.score import bootstrap_totals, load_sets, score_submission

    s = score_submission(release, run_dirs, name, instances=ids, bootstrap_n=n)
    reps = (
        bootstrap_totals(s["run_details"], load_catalog(Path(release) / "catalog.json"), n)
        if s["run_details"][0]["instances"]
        else np.zeros(0)
    )
    s["bootstrap_replicates"] = [round(float(x), 6) for x in reps]
    s["run_cost"] = [run_cost([row["record"] for row in load_sets(d) or []]) for d in run_dirs]
    return s


def _halo_record(run_dir: Path) -> dict:
    """The harness record of one halo board run (``run.json``), verified as :func:`icl.pro.score.load_sets`
    verifies ``sets.json``: the file's signature, the record's, and the OUTPUT against its artifact hashes."""
    from icl.sandbox.signing import verify, verify_artifacts

    path = run_dir / "run.json"
    doc = load_json(path)
    record = doc.get("record") if isinstance(doc, dict) else None
    if not isinstance(record, dict):
        raise InputError("expected {set, record}", str(path), "record")
    verify(doc, path)
    verify(record, path, "record")
    verify_artifacts(record, run_dir / HALO_SET, path, "record.artifacts")
    return record


def _score_halo(release: str, run_dirs: list[Path], name: str) -> dict:
    from icl.halo.evaluate import evaluate, load_release

    records = [_halo_record(d) for d in run_dirs]
    splits = {}
    for split in HALO_SPLITS:
        loaded = load_release(release, split)
        runs = []
        for d, rec in zip(run_dirs, records, strict=True):
            doc = evaluate(release, d / HALO_SET, loaded, split=split)
            ok = rec.get("ok") is True
            conds = [c for case in doc["cases"].values() for c in case["conditions"].values()]
            runs.append(
                {
                    # A run that broke a rule scores 0, whatever files it left (as ``icl halo-run --score``).
                    "score": float(doc["halo_development_score"] or 0.0) if ok else 0.0,
                    "cases": {k: (v["score"] if ok else 0.0) for k, v in doc["cases"].items()},
                    "conditions": len(conds),
                    "missing": sum(1 for c in conds if not c["valid"]) if ok else len(conds),
                    "reasons": sorted({c["reason"] for c in conds if not c["valid"]})[:5],
                    "not_ranked": doc["not_ranked"],
                    "subscores": doc["diagnostic_subscores"],
                }
            )
        splits[split] = runs
    from icl.keys import release_rankable
    from icl.sandbox.boards import board_entry

    rank_ok, rank_why = release_rankable(release)
    entry = board_entry(name, 0.0, records)
    return {
        "name": name,
        "track_kind": "halo",
        "splits": splits,
        "run_records_ok": [r.get("ok") for r in records],
        "violations": sorted({v for r in records for v in r.get("violations") or []}),
        "declared_track": entry["declared_track"],
        "track": entry["track"],
        "boards": entry["boards"],
        "rankable": rank_ok,
        "rankable_reason": rank_why,
        "run_cost": [run_cost([r]) for r in records],
    }


# source reviews -------------------------------------------------------------------------------------------


def load_source_reviews(path: str | os.PathLike | None) -> dict[tuple[str, str], dict]:
    """Read recorded source reviews: (submission, frozen code hash) -> review.

    ``{"format": "icl-source-review/1", "reviews": [{"submission", "code_sha256", "verdict", "reviewers",
    "note"}]}`` with ``verdict`` ``from-scratch`` (confirmed) or ``reference-assisted`` (reclassified). A
    review counts only for the code it read (its hash).
    """
    if path is None:
        return {}
    doc = load_json(path)
    if (
        not isinstance(doc, dict)
        or doc.get("format") != SOURCE_REVIEW_FORMAT
        or not isinstance(doc.get("reviews"), list)
    ):
        raise InputError(
            f"expected {{format: {SOURCE_REVIEW_FORMAT!r}, reviews: [...]}}", str(path), "reviews"
        )
    out = {}
    for i, r in enumerate(doc["reviews"]):
        if (
            not isinstance(r, dict)
            or r.get("verdict") not in BOARDS[:2]
            or not isinstance(r.get("submission"), str)
            or not isinstance(r.get("code_sha256"), str)
        ):
            raise InputError(
                "each review needs submission, code_sha256 and a verdict (from-scratch or "
                "reference-assisted)",
                str(path),
                f"reviews[{i}]",
            )
        out[(r["submission"], r["code_sha256"])] = r
    return out


def _status(
    board: str,
    cell_reason: str,
    rankable: bool,
    rank_why: str,
    review: dict | None,
    public_split: bool = False,
) -> tuple[str, str]:
    if public_split:
        return "not ranked", "public development split: its answers are published"
    if not rankable:
        return "not ranked", rank_why
    if cell_reason:
        return "not ranked", cell_reason
    if board != "from-scratch":
        return "ranked", ""
    if review is None:
        return "provisional", "source review not recorded"
    if review["verdict"] != "from-scratch":
        return "not ranked", "source review reclassified it as reference-assisted: " + str(
            review.get("note", "")
        )
    who = ", ".join(map(str, review.get("reviewers") or []))
    return "reviewed", f"source review recorded ({who})" if who else "source review recorded"


# rows -----------------------------------------------------------------------------------------------------


def _missing_pro(run: dict) -> list[str]:
    return sorted(k for k, v in run["instances"].items() if not v.get("completed", True))


def _gate_evidence(s: dict, catalog_kinds: dict[str, str]) -> dict[str, list[dict]]:
    """Per gate, what it was judged on in the first run: the checks of its kinds, or the harness records."""
    run = s["run_details"][0]
    ev: dict[str, list[dict]] = {g: [] for g in GATES}
    for c in run["checks"]:
        kind = catalog_kinds.get(c["check"])
        for g, kinds in GATE_KINDS.items():
            if kind in kinds:
                ev[g].append(
                    {"what": f"{c['instance']} {c['check']}", "score": c["score"], "note": c["reason"]}
                )
    for g in GATES:
        if not ev[g]:
            ev[g].append(
                {"what": "no check of this gate was answered", "score": None, "note": s["gates"][g]["reason"]}
            )
    ev["G3"] = [{"what": "harness records", "score": None, "note": s["gates"]["G3"]["reason"]}]
    return ev


def pro_rows(scores: list[dict], release: str, reviews: dict) -> dict[str, list[dict]]:
    """Rows of the three professional boards from :func:`score_evaluation` documents."""
    from icl.pro.catalog import load_catalog

    catalog = load_catalog(Path(release) / "catalog.json")
    kinds = {ch.id: ch.kind for t in catalog.templates for ch in t.checks}
    out: dict[str, list[dict]] = {b: [] for b in BOARDS}
    for s in scores:
        cells = (
            {"research": {"score": s["professional_score"], "reason": ""}}
            if s["board"] == "research"
            else (s.get("boards") or {})
        )
        missing = [_missing_pro(r) for r in s["run_details"]]
        gates = {g: {"pass": s["gates"][g]["pass"], "reason": s["gates"][g]["reason"]} for g in GATES}
        for board, cell in cells.items():
            status, why = _status(
                board,
                cell["reason"],
                s.get("rankable") is True,
                s.get("rankable_reason", ""),
                reviews.get((s["name"], s["frozen_sha256"])),
            )
            out[board].append(
                {
                    "name": s["name"],
                    "board": board,
                    "score": float(cell["score"]),
                    "raw_score": s["professional_score"],
                    "worst": s["worst"],
                    "run_scores": s["run_scores"],
                    "completion_rate": s["completion_rate"],
                    "interval": s["bootstrap_95"],
                    "qualified": all(v["pass"] is True for v in gates.values()),
                    "gates": gates,
                    "gates_passed": sum(v["pass"] is True for v in gates.values()),
                    "groups": s["groups"],
                    "missing_tasks": max(len(m) for m in missing),
                    "missing_by_run": missing,
                    "tasks": len(s["run_details"][0]["instances"]),
                    "cost": s["run_cost"],
                    "status": status,
                    "status_reason": why,
                    "declared_track": s.get("declared_track"),
                    "frozen_sha256": s["frozen_sha256"],
                    "expert_status": s["professional_score_status"],
                    "replicates": s.get("bootstrap_replicates", []),
                    "evidence": _gate_evidence(s, kinds),
                    "not_ranked_tasks": s["run_details"][0].get("not_ranked", {}),
                }
            )
    return out


def halo_rows(scores: list[dict], split: str, reviews: dict, n: int = 2000) -> dict[str, list[dict]]:
    """Rows of the three halo boards of one split, intervals from one shared clustered bootstrap."""
    from icl.calibrate.core import Table, rank_stability

    out: dict[str, list[dict]] = {b: [] for b in BOARDS}
    units = sorted(scores[0]["splits"][split][0]["cases"]) if scores else []
    unit_score = {
        s["name"]: {u: float(np.mean([r["cases"].get(u, 0.0) for r in s["splits"][split]])) for u in units}
        for s in scores
    }
    interval: dict[str, list[float]] = {}
    if units:
        table = Table(
            track="halo",
            baselines=[s["name"] for s in scores],
            unit_stratum=dict.fromkeys(units, "all"),
            unit_cluster={u: u.split("_")[0] for u in units},
            checks={s["name"]: {} for s in scores},
            total=lambda b, us: float(np.mean([unit_score[b][u] for u in us])),
            unit_score=unit_score,
        )
        interval = rank_stability(table, n)["interval_95"]
    for s in scores:
        runs = s["splits"][split]
        mean = float(np.mean([r["score"] for r in runs]))
        cells = (
            {"research": {"score": mean, "reason": ""}}
            if s["board"] == "research"
            else {
                b: {"score": mean if not c["reason"] else 0.0, "reason": c["reason"]}
                for b, c in (s.get("boards") or {}).items()
            }
        )
        for board, cell in cells.items():
            status, why = _status(
                board,
                cell["reason"],
                s.get("rankable") is True,
                s.get("rankable_reason", ""),
                reviews.get((s["name"], s["frozen_sha256"])),
                public_split=split == "dev",
            )
            conds = runs[0]["conditions"]
            out[board].append(
                {
                    "name": s["name"],
                    "board": board,
                    "score": float(cell["score"]),
                    "raw_score": mean,
                    "worst": float(min(r["score"] for r in runs)),
                    "run_scores": [r["score"] for r in runs],
                    "completion_rate": float(np.mean([1 - r["missing"] / conds for r in runs]))
                    if conds
                    else 0.0,
                    "interval": interval.get(s["name"]),
                    "qualified": all(s["run_records_ok"]),
                    "gates": {
                        "run": {
                            "pass": all(s["run_records_ok"]),
                            "reason": ", ".join(s["violations"]) or "every run ok in the sandbox",
                        }
                    },
                    "gates_passed": int(all(s["run_records_ok"])),
                    "groups": runs[0]["subscores"],
                    "missing_tasks": max(r["missing"] for r in runs),
                    "missing_by_run": [r["reasons"] for r in runs],
                    "tasks": conds,
                    "cost": s["run_cost"],
                    "status": status,
                    "status_reason": why,
                    "declared_track": s.get("declared_track"),
                    "frozen_sha256": s["frozen_sha256"],
                    "replicates": [],
                    "cases": unit_score[s["name"]],
                    "evidence": {},
                    "not_ranked_tasks": runs[0]["not_ranked"],
                }
            )
    return out


def order(rows: list[dict]) -> list[dict]:
    """Order rows: ranked first, then by gates (all passed first), then by score; number ranked ones."""
    rows = sorted(
        rows, key=lambda r: (r["status"] == "not ranked", not r["qualified"], -r["score"], r["name"])
    )
    place = 0
    for r in rows:
        if r["status"] == "not ranked":
            r["place"] = None
        else:
            place += 1
            r["place"] = place
        r["group"] = "qualified: every gate passed" if r["qualified"] else "not qualified"
    return rows


def board_data(
    works: list[str | os.PathLike], source_reviews: str | os.PathLike | None = None, bootstrap_n: int = 2000
) -> dict[str, Any]:
    """Every board of the given evaluation folders (``scores/`` written), ready for :mod:`icl.board.site`."""
    reviews = load_source_reviews(source_reviews)
    boards = []
    for w in works:
        w = Path(w)
        ev = load_json(w / "evaluation.json")
        scores = [load_json(w / "scores" / f"{s['name']}.json") for s in ev["submissions"]]
        common = {
            "track": ev["track"],
            "release": ev["release"],
            "freeze_sha256": ev["freeze"]["freeze_sha256"],
            "frozen_at": ev["freeze"].get("frozen_at"),
            "runs": ev["runs"],
            "budget": ev["budget"],
            "scheduler": ev["scheduler"],
            "disputed": ev["freeze"].get("disputed", {}),
        }
        if ev["track"] == "pro":
            per = pro_rows(scores, ev["release"], reviews)
            for b in BOARDS:
                boards.append(
                    {
                        **common,
                        "id": f"pro-test-{b}",
                        "split": "test",
                        "board": b,
                        "title": f"Professional track, test split: {b} board",
                        "rows": order(per[b]),
                    }
                )
        else:
            for split in HALO_SPLITS:
                per = halo_rows(scores, split, reviews, bootstrap_n)
                what = "development split (public, not ranked)" if split == "dev" else "test split (ranked)"
                for b in BOARDS:
                    boards.append(
                        {
                            **common,
                            "id": f"halo-{split}-{b}",
                            "split": split,
                            "board": b,
                            "title": f"Halo track, {what}: {b} board",
                            "rows": order(per[b]),
                        }
                    )
    ids = [b["id"] for b in boards]
    if len(ids) != len(set(ids)):
        raise InputError(
            "two evaluations of the same track: build one site per release of a track", None, "works"
        )
    return {"format": FORMAT, "boards": boards}

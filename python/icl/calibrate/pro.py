"""Professional track: the seven baselines of ``icl pro-baselines``, each run through the sandboxed harness.

Units are test instances, strata are templates, clusters are base eye x design family (as in
:func:`icl.pro.score.bootstrap`); a check's value is its 0 / 0.5 / 1 grade averaged over the runs, and it
passes at 1. Expert checks stay pending (no review) and are left out.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from icl.calibrate.core import Table

ORDER = ("full-model", "knowledge-qa", "ignores_hole", "geometric", "hand_halo", "gaussian", "constant", "placeholder")
ROLES = {"full-model": "ceiling", "constant": "floor", "placeholder": "adversarial (no physics)"}
#: Report line of the references left out of the ranking.
NOT_RANKED = (
    "not ranked (left out of every baseline's score alike; a template with no ranked reference leaves "
    "its group's mean)"
)


def run(
    release: str | os.PathLike,
    work: str | os.PathLike,
    runs: int = 3,
    per_template: int = 4,
    split: str = "test",
    bar=None,
    strategies: tuple[str, ...] = ORDER,
) -> tuple[Table, dict]:
    """Write, freeze, run and score every baseline; return the table and the context of the report."""
    from icl.pro.evaluate import evaluate, select_instances, write_baselines

    work = Path(work)
    subs = write_baselines(work / "baselines", strategies)
    ids = select_instances(release, per_template, split)
    scores = []
    task = bar.add_task("pro: baselines through the harness", total=len(subs)) if bar else None
    for sub in subs:  # one evaluation folder each: evaluate writes its input sets into a new folder
        scores += evaluate(release, [sub], work / "runs" / sub.name, runs=runs, instances=ids, progress=False)
        if bar:
            bar.advance(task)
    frozen = sorted((scores[0]["run_details"][0].get("not_ranked") or {}).items()) if scores else []
    ctx = {
        "instances": f"{len(ids)} {split} instances ({per_template} per template)",
        "runs": runs,
        NOT_RANKED: "; ".join(f"{k}: {v}" for k, v in frozen) or "none",
        "scores": {
            s["name"]: {
                "score": s["professional_score"],
                "bootstrap_95": s["bootstrap_95"],
                "gates": {g: v["pass"] for g, v in s["gates"].items()},
                "completion_rate": s["completion_rate"],
            }
            for s in scores
        },
    }
    return table(release, scores), ctx


def table(release: str | os.PathLike, scores: list[dict]) -> Table:
    """Calibration table from :func:`icl.pro.score.score_submission` results (with ``run_details``)."""
    from icl.pro.catalog import load_catalog
    from icl.pro.score import aggregate

    catalog = load_catalog(Path(release) / "catalog.json")
    names = [s["name"] for s in scores]
    first = scores[0]["run_details"][0]["instances"]
    units = sorted(first)
    checks: dict[str, dict] = {}
    unit_score: dict[str, dict] = {}
    for s in scores:
        vals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in s["run_details"]:
            for c in r["checks"]:
                if c["mode"] == "auto" and c["score"] is not None:
                    vals[c["instance"]][c["check"]].append(float(c["score"]))
        checks[s["name"]] = {u: {c: float(np.mean(v)) for c, v in vals[u].items()} for u in units}
        unit_score[s["name"]] = {
            u: float(np.mean([r["instances"][u]["score"] for r in s["run_details"]])) for u in units
        }

    # Why the ceiling misses a check: the reasons the scorer wrote (the report's note column).
    notes: dict[str, list[str]] = defaultdict(list)
    ceiling = next((s for s in scores if ROLES.get(s["name"]) == "ceiling"), None)
    for c in ceiling["run_details"][0]["checks"] if ceiling else []:
        why = str(c["reason"])[:90]
        if c["mode"] == "auto" and c["score"] != 1.0 and why not in notes[c["check"]]:
            notes[c["check"]].append(why)

    def total(b: str, sample: list[str]) -> float:
        return aggregate(
            catalog, {f"{u}#{k}": (first[u]["template"], unit_score[b][u]) for k, u in enumerate(sample)}
        )["professional_score"]

    return Table(
        track="pro",
        baselines=names,
        unit_stratum={u: first[u]["template"] for u in units},
        unit_cluster={u: first[u]["cluster"] for u in units},
        checks=checks,
        total=total,
        pass_mark=1.0,
        stratum_group={first[u]["template"]: first[u]["template"][0] for u in units},
        unit_score=unit_score,
        roles={b: ROLES.get(b, "baseline") for b in names},
        notes={c: "ceiling: " + "; ".join(v[:2]) for c, v in notes.items()},
    )

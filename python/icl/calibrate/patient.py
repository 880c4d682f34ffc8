"""Patient layer: the demo prediction, the oracle and four negative controls on the fictional demo set.

Negative controls (each built from ``public/targets.json`` only, except the last, which borrows another
patient's report):

``constant-ring``
    One ring for every target: radius 1.3 deg, band 0.25 deg, at fixation whatever the sources, presence
    0.85 whatever the room light.
``misplaced-ring``
    The demo prediction's ring (1.3 deg on each source) moved 3 deg to the right of its source.
``no-halo``
    Nothing visible anywhere: presence probability 0 and no features.
``ignores-eye``
    A percept that ignores this eye's measurements: the first repeat of another patient's report under
    the same condition (the next patient in the plan that has it), with its sources renamed onto this
    target's. It is a real percept of the same condition, so only eye-specific information separates it
    from the oracle.

Units are targets; clusters are patients (bootstrap: patients resampled with replacement); a target's
checks are the four score parts averaged over its repeats (presence as 1 - Brier, ring IoU, contour
C, count/attribution F), each passing at 0.5.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icl.calibrate.core import Table

CONTROLS = ("constant-ring", "misplaced-ring", "no-halo", "ignores-eye")
PASS_MARK = 0.5
RING = {"rx_deg": 1.3, "width_deg": 0.25}


def _ring(fid: str, source: str, x: float, y: float) -> dict[str, Any]:
    r = RING["rx_deg"]
    return {
        "id": fid,
        "source_id": source,
        "kind": "circle",
        "cx_deg": x,
        "cy_deg": y,
        "rx_deg": r,
        "ry_deg": r,
        "rotation_deg": 0,
        "width_deg": RING["width_deg"],
        "radius_interval_deg": [0.95, 1.75],
    }


def _symptoms() -> dict[str, int]:
    return {"visibility": 6, "bother": 3, "impact_7d": 2}


def constant_ring(target: dict) -> dict:
    """Predict the same ring at fixation for every target."""
    src = target["stimulus"]["sources"][0]["id"]
    return {
        "target_id": target["target_id"],
        "presence_probability": 0.85,
        "features": [_ring("F1", src, 0.0, 0.0)],
        "symptoms": _symptoms(),
    }


def misplaced_ring(target: dict) -> dict:
    """Predict a ring of the demo size on each source, 3 deg to its right."""
    feats = [
        _ring(f"F{k + 1}", s["id"], s["x_deg"] + 3.0, s["y_deg"])
        for k, s in enumerate(target["stimulus"]["sources"])
    ]
    return {
        "target_id": target["target_id"],
        "presence_probability": 0.85,
        "features": feats,
        "symptoms": _symptoms(),
    }


def no_halo(target: dict) -> dict:
    """No visible structure."""
    return {
        "target_id": target["target_id"],
        "presence_probability": 0.0,
        "features": [],
        "symptoms": {"visibility": 0, "bother": 0, "impact_7d": 0},
    }


def ignores_eye(target: dict, targets: list[dict], first_repeat: dict[str, dict]) -> dict:
    """Another patient's first report under the same condition, its sources renamed onto this target's."""
    same = [t for t in targets if t["condition_id"] == target["condition_id"]]
    other = same[(same.index(target) + 1) % len(same)]
    rec = first_repeat[other["target_id"]]
    rename = {
        s["id"]: d["id"]
        for s, d in zip(other["stimulus"]["sources"], target["stimulus"]["sources"], strict=False)
    }
    feats = []
    for f in rec["features"]:
        g = {k: v for k, v in f.items() if k != "confirmed"}
        g["source_id"] = rename.get(f["source_id"], target["stimulus"]["sources"][0]["id"])
        feats.append(g)
    return {
        "target_id": target["target_id"],
        "presence_probability": 1.0 if rec["presence"] == "present" else 0.0,
        "features": feats,
        "symptoms": dict(rec["symptoms"]),
    }


def write_controls(demo: str | os.PathLike, output: str | os.PathLike) -> dict[str, Path]:
    """Write one prediction file per negative control into ``output``; return their paths."""
    from icl.io import load_json, write_json

    demo = Path(demo)
    targets = load_json(demo / "public" / "targets.json")["targets"]
    first: dict[str, dict] = {}
    for r in load_json(demo / "private" / "reference.json")["records"]:
        first.setdefault(r["target_id"], r)
    makers = {
        "constant-ring": constant_ring,
        "misplaced-ring": misplaced_ring,
        "no-halo": no_halo,
        "ignores-eye": lambda t: ignores_eye(t, targets, first),
    }
    out = {}
    for name, make in makers.items():
        p = Path(output) / f"{name}.json"
        write_json(
            p,
            {
                "schema_version": "0.4.0-patient-draft",
                "fictional": True,
                "description": f"negative control {name} (icl calibrate patient)",
                "predictions": [make(t) for t in targets],
            },
        )
        out[name] = p
    return out


def run(
    demo: str | os.PathLike,
    work: str | os.PathLike,
    advance: Callable[[str], None] | None = None,
    raster: int = 256,
) -> tuple[Table, dict]:
    """Score the demo prediction, the oracle and the four controls; return the table and the score files."""
    from icl.patient.schema import load_predictions, load_reports
    from icl.patient.scoring import score

    demo = Path(demo)
    files = {
        "oracle": demo / "private" / "oracle_prediction.json",
        "demo-prediction": demo / "predictions" / "demo_prediction.json",
    }
    files |= write_controls(demo, Path(work))
    reports = load_reports(demo / "private" / "reference.json")
    sources = {
        tid: [s["id"] for s in recs[0]["stimulus"]["sources"]] for tid, recs in reports.targets.items()
    }
    docs = {}
    for name, path in files.items():
        docs[name] = score(reports, load_predictions(path, sources), raster)
        if advance:
            advance(name)
    return table(docs, reports), docs


def table(docs: dict[str, dict], reports) -> Table:
    """Calibration table from patient score documents."""
    patient_of = {tid: recs[0]["patient_id"] for tid, recs in reports.targets.items()}
    cond_of = {tid: recs[0]["condition_id"] for tid, recs in reports.targets.items()}
    first = next(iter(docs.values()))
    units = sorted(first["targets"])
    checks, unit_score = {}, {}
    for b, doc in docs.items():
        checks[b], unit_score[b] = {}, {}
        for tid in units:
            t = doc["targets"][tid]
            unit_score[b][tid] = t["score"] / 100.0
            reps = list((t.get("repeats") or {}).values())
            checks[b][tid] = (
                {
                    "presence": float(np.mean([1 - r["brier"] for r in reps])),
                    "ring_iou": float(np.mean([r["iou"] for r in reps])),
                    "contour": float(np.mean([r["C"] for r in reps])),
                    "count_attribution": float(np.mean([r["F"] for r in reps])),
                }
                if reps
                else {"presence": 0.0, "ring_iou": 0.0, "contour": 0.0, "count_attribution": 0.0}
            )
    n_of = defaultdict(int)
    for u in units:
        n_of[patient_of[u]] += 1

    def total(b: str, sample: list[str]) -> float:
        # patient score = mean of its targets; overall = mean over patients (a resampled patient counts
        # as often as it was drawn)
        per: dict[str, float] = defaultdict(float)
        for u in sample:
            per[patient_of[u]] += unit_score[b][u] / n_of[patient_of[u]]
        w = {p: sum(1 for u in sample if patient_of[u] == p) / n_of[p] for p in per}
        return 100.0 * sum(per.values()) / sum(w.values())

    roles = {b: "control" if b in CONTROLS else ("ceiling" if b == "oracle" else "baseline") for b in docs}
    return Table(
        track="patient",
        baselines=list(docs),
        unit_stratum={u: cond_of[u] for u in units},
        unit_cluster={u: patient_of[u] for u in units},
        checks=checks,
        total=total,
        pass_mark=PASS_MARK,
        unit_score=unit_score,
        roles=roles,
        bootstrap_strata={u: "all" for u in units},
    )

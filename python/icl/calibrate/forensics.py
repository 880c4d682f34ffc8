"""Forensics track: the random floor, the physics check and the nuisance-fit detector.

Units are images (bootstrap: images resampled with replacement inside each kind); a forged image's
check is its item (NH, DUP or SPL) and passes when the image scores above the 90th percentile of the
genuine images on that item (caught at a 10 % false-alarm rate); genuine images carry no check. The track
total is the safety score S of :mod:`icl.contest.safety` (x 100), recomputed on each resampled set.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from icl.calibrate.core import Table

DETECTORS = ("random", "physics", "fit")


def run(
    release: str | os.PathLike,
    work: str | os.PathLike,
    advance: Callable[[str], None] | None = None,
    detectors: tuple[str, ...] = DETECTORS,
    workers: int = 1,
) -> tuple[Table, dict]:
    """Score every detector on the release; return the calibration table and the score documents.

    ``workers`` local processes share the nuisance fits (the scores do not depend on it).
    """
    from icl.forensics.baseline import load_public, physics_scores, random_scores
    from icl.forensics.evaluate import evaluate
    from icl.forensics.fit import fit_scores
    from icl.io import write_json

    images, stated = load_public(release)
    subs, docs = {}, {}
    for d in detectors:
        if d == "random":
            sc = random_scores(list(images), 0)
        elif d == "physics":
            sc = physics_scores(images, stated)
        else:
            sc = fit_scores(images, stated, workers=workers)
        path = Path(work) / f"{d}.json"
        write_json(path, {"scores": sc})
        subs[d], docs[d] = sc, evaluate(release, path)
        if advance:
            advance(d)
    return table(release, subs), docs


def table(release: str | os.PathLike, subs: dict[str, dict]) -> Table:
    """Calibration table from per-image scores of every detector."""
    from icl.contest.pr import item_area
    from icl.contest.safety import ITEMS, safety_score
    from icl.forensics.evaluate import load_release

    ids, labels = load_release(release)
    item_of = {i: next((k for k in ITEMS if labels[i][k] == 1), None) for i in ids}
    checks, unit_score = {}, {}
    for d, sc in subs.items():
        checks[d], unit_score[d] = {}, {}
        for item in ITEMS:
            genuine = [sc[i][item] for i in ids if item_of[i] is None]
            cut = float(np.percentile(genuine, 90))
            for i in ids:
                if item_of[i] == item:
                    checks[d].setdefault(i, {})[item] = 1.0 if sc[i][item] > cut else 0.0
        for i in ids:
            checks[d].setdefault(i, {})
            unit_score[d][i] = next(iter(checks[d][i].values()), 0.0)

    def total(d: str, units: list[str]) -> float:
        areas = {}
        for item in ITEMS:
            members = [u for u in units if item_of[u] in (None, item)]
            y = [1 if item_of[u] == item else 0 for u in members]
            a = item_area(item, [subs[d][u][item] for u in members], y)
            areas[item] = a.value if a.computable else None
        return 100.0 * safety_score(areas)[0]

    kind = {i: labels[i]["kind"] for i in ids}
    roles = {"random": "floor", "physics": "baseline", "fit": "detector"}
    return Table(
        track="forensics",
        baselines=list(subs),
        unit_stratum={i: item_of[i] or "genuine" for i in ids},
        unit_cluster={i: i for i in ids},
        checks=checks,
        total=total,
        pass_mark=1.0,
        unit_score=unit_score,
        roles={d: roles.get(d, "baseline") for d in subs},
        bootstrap_strata=kind,
    )

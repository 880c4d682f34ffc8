"""Halo track: the baselines of :mod:`icl.halo.baselines` and perturbations of the reference answer.

Perturbations start from the private reference components of each condition (an evaluator's instrument,
not a submission) and change one thing: a 1-pixel shift along +x (the pixel rolled off is dropped), a
Gaussian blur of 1 pixel sigma, an x or a y mirror, the ring removed (every pixel outside the sources'
main lobes set to 0) and every flux times 0.9. Each is written as a submission and scored by
:func:`icl.halo.evaluate.evaluate`, so it meets the same validity rules as any submission.

Units are the 14 cases (bootstrap: cases resampled with replacement); a case's checks are the score
terms averaged over its two conditions plus the paired-difference term, each ``exp(-error / scale)``;
a check passes at 0.5 (an error below ``scale x ln 2``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from icl.calibrate.core import Table

BASELINES = ("reference", "wrong-position", "no-halo", "fixed-circle")
PERTURBATIONS = ("shift-1px", "blur-1px", "x-flip", "y-flip", "ring-removed", "flux-0.9")
PASS_MARK = 0.5


def perturb(kind: str, ref) -> np.ndarray:
    """One perturbation of a reference condition's components ``[n_src, n, n]``."""
    from icl import libm
    from icl.halo.evaluate import halo_mask

    c = np.array(ref.components, dtype=float)
    if kind == "shift-1px":
        out = np.zeros_like(c)
        out[:, :, 1:] = c[:, :, :-1]  # column j grows with +x
        return out
    if kind == "blur-1px":
        return np.stack([libm.gaussian_filter(a, 1.0, mode="constant") for a in c])
    if kind == "x-flip":
        return np.ascontiguousarray(c[:, :, ::-1])
    if kind == "y-flip":
        return np.ascontiguousarray(c[:, ::-1, :])
    if kind == "ring-removed":
        return c * ~halo_mask(ref)[None]
    if kind == "flux-0.9":
        return 0.9 * c
    raise ValueError(f"unknown perturbation {kind!r}")


def _write(folder: Path, ref, comps: np.ndarray) -> None:
    from icl.io import write_npz

    write_npz(
        folder / f"{ref.id}.npz",
        components=comps,
        scene=comps.sum(axis=0),
        angular_pixel_arcsec=np.float64(ref.scene.detector.pitch_arcsec),
    )


def run(
    release: str | os.PathLike,
    work: str | os.PathLike,
    split: str = "dev",
    advance: Callable[[str], None] | None = None,
) -> tuple[Table, dict]:
    """Score the four baselines and six perturbations; return the calibration table and the score files."""
    from icl.halo.baselines import run_baseline
    from icl.halo.evaluate import evaluate, load_release

    work = Path(work)
    loaded = load_release(release, split)
    docs = {}
    for mode in BASELINES:
        d = work / mode
        run_baseline(release, d, mode, progress=False, split=split)
        docs[mode] = evaluate(release, d, loaded, split)
        if advance:
            advance(mode)
    for kind in PERTURBATIONS:
        d = work / kind
        for _case, refs in loaded:
            for ref in refs:
                _write(d, ref, perturb(kind, ref))
        docs[kind] = evaluate(release, d, loaded, split)
        if advance:
            advance(kind)
    return table(docs), docs


def table(docs: dict[str, dict]) -> Table:
    """Calibration table from halo score documents (one per baseline)."""
    names = list(docs)
    first = docs[names[0]]["cases"]
    unit_score, checks = {}, {}
    for b, doc in docs.items():
        unit_score[b], checks[b] = {}, {}
        for cid, case in doc["cases"].items():
            unit_score[b][cid] = case["score"] / 100.0
            vals: dict[str, list[float]] = {}
            for cid_, cond in case["conditions"].items():
                if cond["valid"]:
                    for term, v in cond["terms"].items():
                        vals.setdefault(term, []).append(v["value"])
                else:  # an invalid condition scores 0 on every term the valid answers of it have
                    for term in next(
                        (
                            d["cases"][cid]["conditions"][cid_]["terms"]
                            for d in docs.values()
                            if d["cases"][cid]["conditions"][cid_]["valid"]
                        ),
                        {},
                    ):
                        vals.setdefault(term, []).append(0.0)
            row = {k: float(np.mean(v)) for k, v in vals.items()}
            row["paired"] = case["paired"]["score"] / 100.0
            checks[b][cid] = row
    roles = {
        b: "perturbation" if b in PERTURBATIONS else ("ceiling" if b == "reference" else "baseline")
        for b in names
    }
    return Table(
        track="halo",
        baselines=names,
        unit_stratum={c: c for c in first},
        unit_cluster={c: c for c in first},
        checks=checks,
        total=lambda b, units: 100.0 * float(np.mean([unit_score[b][u] for u in units])),
        pass_mark=PASS_MARK,
        stratum_group={c: "position" if first[c]["position_bearing"] else "fixation" for c in first},
        unit_score=unit_score,
        roles=roles,
        bootstrap_strata={c: "all" for c in first},
    )

"""CPU time of patient scoring on a freehand-heavy target, against an earlier revision if asked.

The target is the one of ``tests/test_patient_speed.py``: 3 repeats x 8 freehand contours x 2,000 points
(validation and scoring, with repeat agreement and the fine-raster recheck). Each round builds fresh inputs
and times the whole call with ``time.process_time``; the median over the rounds is printed with the load
average before and after. ``--against REV`` also scores with ``python/icl/patient/scoring.py`` and
``geometry.py`` as they are in git revision ``REV``, in interleaved rounds, so both see the same load, and
checks that both give the same score bits. ``--profile`` adds one cProfile run sorted by cumulative time.

Run: ``python bench/patient_scoring.py [--rounds 9] [--against REV] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import icl.patient.scoring  # noqa: E402
from icl.patient.schema import Predictions, _entry_error, _first_error, validate_reports  # noqa: E402
from patient_fixtures import TARGET, freehand_target  # noqa: E402


def _module(name: str, rev: str, path: str) -> ModuleType:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
    ).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{rev}:{path}", "exec"), mod.__dict__)
    return mod


def revision_score(rev: str) -> Callable:
    """``score`` of git revision ``rev``: its scoring module bound to its own geometry module."""
    geometry = _module("icl.patient.geometry", rev, "python/icl/patient/geometry.py")
    current = sys.modules["icl.patient.geometry"]
    sys.modules["icl.patient.geometry"] = geometry  # what the old scoring module imports
    try:
        return _module(f"scoring_{rev}", rev, "python/icl/patient/scoring.py").score
    finally:
        sys.modules["icl.patient.geometry"] = current


def score_once(score: Callable) -> tuple[float, float]:
    """Validate and score the target with ``score``; return (CPU seconds, target score)."""
    reports, preds = freehand_target()
    t0 = time.process_time()
    assert _first_error("report", reports) is None
    rep = validate_reports(reports, "reference.json")
    p = Predictions("predictions.json")
    entry = preds["predictions"][0]
    assert _first_error("prediction", entry, "prediction") is None
    assert _entry_error(entry, 0, None, "predictions.json") is None
    p.valid[TARGET] = entry
    res = score(rep, p)
    return time.process_time() - t0, res["targets"][TARGET]["score"]


def main() -> None:
    """Time the rounds and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9, help="timed rounds per variant (default 9)")
    ap.add_argument("--against", metavar="REV", help="also time git revision REV's scoring, interleaved")
    ap.add_argument("--profile", action="store_true", help="also print one cProfile run of the working tree")
    args = ap.parse_args()
    variants = {"working tree": icl.patient.scoring.score}
    if args.against:
        variants[args.against] = revision_score(args.against)
    load0 = os.getloadavg()
    for score in variants.values():
        score_once(score)  # warm-up: first-call costs
    times: dict[str, list[float]] = {k: [] for k in variants}
    scores: dict[str, set[float]] = {k: set() for k in variants}
    for _ in range(args.rounds):
        for name, score in variants.items():
            cpu, s = score_once(score)
            times[name].append(cpu)
            scores[name].add(s)
    load1 = os.getloadavg()
    before, after = " ".join(f"{x:.2f}" for x in load0), " ".join(f"{x:.2f}" for x in load1)
    print(f"load average (1, 5, 15 min) before {before}, after {after}")
    print(f"{'variant':>14}  {'median s':>8}  {'min s':>6}  {'max s':>6}  target score")
    for name, t in times.items():
        shown = ", ".join(repr(s) for s in sorted(scores[name]))
        print(f"{name:>14}  {statistics.median(t):8.3f}  {min(t):6.3f}  {max(t):6.3f}  {shown}")
    if len({frozenset(s) for s in scores.values()}) > 1:
        print("the variants' scores differ")
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        score_once(icl.patient.scoring.score)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()

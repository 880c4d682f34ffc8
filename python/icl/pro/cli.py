"""Professional-track commands: generate instances, score runs, write and evaluate baselines."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import click


@click.command("pro-generate")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--per-template", default=8, show_default=True, type=int)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--only", multiple=True, help="Template ids to generate (default: all 36).")
def pro_generate(output: Path, per_template: int, seed: int, only: tuple[str, ...]) -> None:
    """Generate professional instances, grouped splits and private references into OUTPUT."""
    from icl.pro.generate import generate

    summary = generate(output, per_template, seed, only=list(only) or None)
    click.echo(f"instances {summary['instances']}; groups {summary['groups']}; {summary['seconds']:.1f} s")


@click.command("pro-score")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", default="submission", show_default=True)
@click.option("--split", default="test", show_default=True, type=click.Choice(["train", "dev", "test", "ood"]))
@click.option("--reviews", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the full score JSON here.")
@click.option("--bootstrap-seed", default=20261027, show_default=True, type=int)
def pro_score(release: Path, runs: tuple[Path, ...], name: str, split: str, reviews: Path | None, output: Path | None,
              bootstrap_seed: int) -> None:
    """Score one to three independent RUNS (output folders) of one submission against RELEASE."""
    from icl.io import write_json
    from icl.pro.score import score_submission

    s = score_submission(release, list(runs), name, split, reviews, seed=bootstrap_seed)
    if output:
        write_json(output, s)
    _table([s])


def _table(scores: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    from icl.pro.score import leaderboard

    t = Table(title="professional_score (development score while expert review is pending)")
    for col in ("name", "gates", "score", "worst", "95 % CI", "A", "B", "C", "D", "E", "F"):
        t.add_column(col)
    for r in leaderboard(scores):
        gates = " ".join(f"{g}:{'-' if v is None else 'P' if v else 'F'}" for g, v in r["gates"].items())
        ci = "-" if r["bootstrap_95"] is None else f"{r['bootstrap_95'][0]:.1f}-{r['bootstrap_95'][1]:.1f}"
        t.add_row(r["name"], gates, f"{r['professional_score']:.1f}", f"{r['worst']:.1f}", ci,
                  *(f"{r['groups'][g]:.2f}" for g in "ABCDEF"))
    Console().print(t)


@click.command("pro-baselines")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path))
def pro_baselines(output: Path) -> None:
    """Write the five baseline submissions (folders with a ``run INPUT OUTPUT`` script) into OUTPUT."""
    from icl.io import atomic_write_bytes, write_json
    from icl.pro.baselines.runner import STRATEGIES

    for s in STRATEGIES:
        d = output / s
        script = f'#!/bin/sh\nexec "{sys.executable}" -m icl.pro.baselines.runner {s} "$1" "$2"\n'
        atomic_write_bytes(d / "run", script.encode())
        (d / "run").chmod((d / "run").stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        write_json(d / "manifest.json", {"format": "icl-pro-submission/1",
                                         "model": {"name": f"baseline-{s}", "version": "1", "description": f"baseline strategy {s}"},
                                         "tools": [], "versions": {"submission": "1"}, "dependencies": [],
                                         "random_seeds": {}, "compute_budget": {"cpus": 1, "memory_gb": 2, "build_minutes": 0,
                                                                                "run_minutes_per_case": 1}})
    click.echo(f"wrote {len(STRATEGIES)} baselines to {output}")


@click.command("pro-baselines-eval")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("baselines", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--work", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--per-template", default=1, show_default=True, type=int, help="Test instances per template to run.")
@click.option("--runs", default=1, show_default=True, type=int)
def pro_baselines_eval(release: Path, baselines: Path, work: Path, per_template: int, runs: int) -> None:
    """Run every baseline's ``run`` script on a subset of test instances and print the leaderboard."""
    import shutil
    import subprocess
    import time

    from icl.pro.score import score_submission

    subset = work / "subset"
    shutil.rmtree(subset, ignore_errors=True)
    subset.mkdir(parents=True)
    ids = []
    test = release / "inputs" / "test"
    for tid in sorted({p.name[:3] for p in test.iterdir()}):
        for d in sorted(test.glob(f"{tid}-*"))[:per_template]:
            (subset / d.name).symlink_to(d.resolve())
            ids.append(d.name)
    scores = []
    for b in sorted(p for p in baselines.iterdir() if (p / "run").is_file()):
        dirs, recs = [], []
        for k in range(runs):
            out = work / b.name / f"run{k}"
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            proc = subprocess.run([str(b / "run"), str(subset), str(out)], capture_output=True, timeout=3600)
            recs.append({"ok": proc.returncode == 0, "wall_seconds": time.perf_counter() - t0})
            dirs.append(out)
        scores.append(score_submission(release, dirs, b.name, instances=ids, run_records=recs))
    _table(scores)


COMMANDS = [pro_generate, pro_score, pro_baselines, pro_baselines_eval]
try:
    from icl.pro.cli_harness import COMMANDS as HARNESS_COMMANDS
except ImportError:
    HARNESS_COMMANDS = []
COMMANDS = COMMANDS + list(HARNESS_COMMANDS)

"""Command-line entry points of the halo track (heavy imports stay inside the commands)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from icl.cli_options import force_option
from icl.parallel import scheduler_options


@click.command("halo-generate")
@click.option("--output", required=True, type=click.Path(file_okay=False), help="Release folder to write.")
@click.option("--no-gallery", is_flag=True, help="Skip the evaluator-only gallery.")
@click.option(
    "--test-variants",
    default=4,
    show_default=True,
    type=click.IntRange(min=0),
    help="Keyed variants per case in the held-out test split (0: development split only).",
)
@click.option(
    "--seed",
    default=None,
    type=click.IntRange(min=0),
    help="Make a public development release from this seed: anyone can rebuild its test answers and it "
    "cannot be ranked. Without it a secret key is drawn and kept in OUTPUT/private/release.key.",
)
@scheduler_options
@force_option
def halo_generate(
    output: str,
    no_gallery: bool,
    test_variants: int,
    seed: int | None,
    scheduler: str | None,
    workers: int,
    force: bool,
) -> None:
    """Generate the halo release: development and test splits, private references, gallery and manifest.

    The development split is the same bytes whatever the key; the test split is a function of the key.
    """
    import time

    from icl.halo.release import generate
    from icl.io import prepare_output_dir

    prepare_output_dir(output, force, release=True)

    t0 = time.perf_counter()
    manifest = generate(
        output,
        gallery=not no_gallery,
        progress=sys.stderr.isatty(),
        scheduler=scheduler,
        workers=workers,
        test_variants=test_variants,
        seed=seed,
    )
    click.echo(f"wrote {len(manifest['files'])} files to {output} in {time.perf_counter() - t0:.1f} s")


@click.command("halo-baseline")
@click.option(
    "--release",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Release folder written by halo-generate (only public/ is read).",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False),
    help="Submission folder to write, outside the release (a release is written only by halo-generate).",
)
@click.option(
    "--mode",
    default="reference",
    show_default=True,
    type=click.Choice(
        ["reference", "wrong-position", "no-halo", "fixed-circle", "x-flip", "y-flip", "dev-warp"]
    ),
    help="Which baseline to compute (docs/halo.md describes each).",
)
@click.option(
    "--split",
    default="dev",
    show_default=True,
    type=click.Choice(["dev", "test"]),
    help="Which split's public conditions to compute.",
)
def halo_baseline(release: str, output: str, mode: str, split: str) -> None:
    """Write a baseline submission computed from the release's public part only."""
    from icl.halo.baselines import run_baseline

    written = run_baseline(release, output, mode, progress=sys.stderr.isatty(), split=split)
    click.echo(f"{mode}: wrote {len(written)} conditions to {output}")


@click.command("halo-baselines")
@click.option(
    "--release",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Release folder written by halo-generate.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for the runs: OUTPUT/<split>/<mode>/ with score.json.",
)
@click.option(
    "--split",
    "splits",
    multiple=True,
    default=("dev", "test"),
    show_default=True,
    type=click.Choice(["dev", "test"]),
    help="Splits to run (repeat the option for several).",
)
def halo_baselines(release: str, output: str, splits: tuple[str, ...]) -> None:
    """Run every baseline on each split, score it and print the table of docs/halo.md."""
    from icl.halo.baselines import baseline_table

    rows = baseline_table(release, output, splits, progress=sys.stderr.isatty())
    click.echo("| split | baseline | score | position-bearing | fixation |")
    click.echo("|---|---|---|---|---|")
    for r in rows:
        cells = [
            f"{v:.2f}" if v is not None else "-"
            for v in (r["score"], r["position_bearing_cases"], r["fixation_cases"])
        ]
        click.echo(f"| {r['split']} | {r['mode']} | " + " | ".join(cells) + " |")


@click.command("halo-evaluate")
@click.option(
    "--release",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Release folder written by halo-generate (with its private references).",
)
@click.option(
    "--submission",
    required=True,
    type=click.Path(file_okay=False),
    help="Submission folder: one <condition>.npz per condition of the split.",
)
@click.option("--output", required=True, type=click.Path(dir_okay=False), help="score.json to write.")
@click.option(
    "--split",
    default="dev",
    show_default=True,
    type=click.Choice(["dev", "test"]),
    help="Which split's conditions to score.",
)
def halo_evaluate(release: str, submission: str, output: str, split: str) -> None:
    """Score a submission folder against one split of a release and write score.json."""
    from rich.console import Console

    from icl.halo.evaluate import evaluate, score_table, write_score

    doc = evaluate(release, submission, split=split)
    write_score(doc, output)
    Console().print(score_table(doc))


@click.command("halo-validate-prediction")
@click.argument("file", type=click.Path(dir_okay=False))
def halo_validate_prediction(file: str) -> None:
    """Check a structured halo prediction FILE against its schema."""
    from icl.halo.prediction import validate_prediction

    problems = validate_prediction(file)
    if problems:
        for p in problems:
            click.echo(f"error: {file}: {p}", err=True)
        sys.exit(1)
    click.echo(f"{file}: valid")


@click.command("halo-run")
@click.option(
    "--release",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Halo release folder; only its public/ is shown to the program.",
)
@click.option(
    "--submission",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Submission folder holding an executable run.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Prediction folder to write (absent or empty).",
)
@click.option(
    "--track",
    default=None,
    type=click.Choice(["from-scratch", "reference-assisted"]),
    help="Track to run on (default: the manifest's track, else from-scratch).",
)
@click.option(
    "--cpus",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="CPU cores (capped at the host's, with a note).",
)
@click.option("--memory", default="8G", show_default=True, help="Total memory of the run, e.g. 8G.")
@click.option(
    "--timeout",
    "timeout_s",
    default=1200.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Wall-clock limit in seconds.",
)
@click.option(
    "--logs",
    "logs_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Logs folder (default OUTPUT.logs).",
)
@click.option(
    "--split",
    default="dev",
    show_default=True,
    type=click.Choice(["dev", "test"]),
    help="Split whose conditions are checked (and scored with --score).",
)
@click.option(
    "--score",
    "score_file",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also score the predictions and write this score.json (with the track and each board's score).",
)
def halo_run(
    release: Path,
    submission: Path,
    output: Path,
    track: str | None,
    cpus: int,
    memory: str,
    timeout_s: float,
    logs_dir: Path | None,
    split: str,
    score_file: Path | None,
) -> None:
    """Run a halo SUBMISSION in the sandbox on RELEASE/public only; print what happened (exit 1 unless ok).

    The run is ok when the program exited 0, broke no rule and wrote a valid array for every condition of
    the split; otherwise ``reason`` says why (exit status, last lines of stderr and the log's path for a
    crash; ``invalid_conditions`` for each missing or invalid condition).
    """
    from icl.halo.run import run_halo
    from icl.io import dumps_json

    got = run_halo(
        release,
        submission,
        output,
        track=track,
        cpus=cpus,
        memory=memory,
        timeout_s=timeout_s,
        logs_dir=logs_dir,
        split=split,
        score_file=score_file,
    )
    rec = got["record"]
    summary = {
        "ok": got["ok"],
        "reason": got["reason"],
        "notes": got["notes"],
        **{k: rec[k] for k in ("exit_status", "signal", "violations", "messages")},
        "stderr_tail": got["stderr_tail"],
        "stderr_log": got["stderr_log"],
        "invalid_conditions": got["invalid_conditions"],
        **{
            k: rec[k]
            for k in ("track", "effective_track", "wall_s", "peak_memory_bytes", "limits", "artifacts")
        },
    }
    if got["score"] is not None:
        summary["halo_development_score"] = got["score"].get("halo_development_score")
        summary["boards"] = got["score"]["boards"]
    click.echo(dumps_json(summary), nl=False)
    sys.exit(0 if got["ok"] else 1)


COMMANDS = [halo_generate, halo_baseline, halo_baselines, halo_evaluate, halo_validate_prediction, halo_run]

"""Professional-track commands: generate instances, score runs, write and evaluate baselines."""

from __future__ import annotations

from pathlib import Path

import click

from icl.cli_options import force_option
from icl.parallel import scheduler_options


@click.command("pro-generate")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Release folder to write (new or empty; see --force).")
@click.option("--per-template", default=8, show_default=True, type=click.IntRange(min=4),
              help="Instances generated per template (at least 4: one train, one dev, two test).")
@click.option("--seed", default=None, type=click.IntRange(min=0),
              help="Make a public development release from this seed: anyone can rebuild its answers and it "
                   "cannot be ranked. Without it a secret key is drawn and kept in OUTPUT/private/release.key.")
@click.option("--only", multiple=True,
              help="Template ids to generate, repeated or comma-separated (default: all 36); "
                   "an unknown id is refused.")
@scheduler_options
@force_option
def pro_generate(output: Path, per_template: int, seed: int | None, only: tuple[str, ...], scheduler: str | None,
                 workers: int, force: bool) -> None:
    """Generate professional instances, grouped splits and private references into OUTPUT.

    The bytes written are the same for serial, ``--workers N`` and ``--scheduler`` runs with one key.
    """
    from icl.io import prepare_output_dir
    from icl.pro.catalog import load_catalog
    from icl.pro.generate import generate

    ids = [t.strip() for v in only for t in v.split(",") if t.strip()]
    chosen = load_catalog().select(ids) if only else None
    prepare_output_dir(output, force, release=True)
    summary = generate(output, per_template, seed, only=chosen, scheduler=scheduler, workers=workers)
    click.echo(f"instances {summary['instances']}; groups {summary['groups']}; {summary['seconds']:.1f} s")


@click.command("pro-score")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", default="submission", show_default=True, help="Submission name shown in the score and table.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["train", "dev", "test", "ood"]),
              help="Split of the release to score.")
@click.option("--reviews", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Expert reviews of this submission (review-merge output) for the expert checks.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the full score JSON here.")
@click.option("--bootstrap-seed", default=20261027, show_default=True, type=int,
              help="Seed of the grouped bootstrap interval.")
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
    """One table per track's board; runs not made by the harness (no track) in a table of their own."""
    from icl.pro.score import leaderboard

    for track in ("from-scratch", "reference-assisted"):
        rows = leaderboard(scores, track)
        if rows:
            _print_rows(f"{track} board: professional_score (development score while expert review is pending)",
                        rows)
    loose = [s for s in scores if not s.get("boards")]
    if loose:
        _print_rows("professional_score of runs without harness records (no track, on no board)", leaderboard(loose))


def _print_rows(title: str, rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for col in ("place", "name", "gates", "score", "worst", "95 % CI", "done", "wall s", "CPU s", "peak MiB",
                "A", "B", "C", "D", "E", "F"):
        t.add_column(col)
    notes = []
    if not all(r["rankable"] for r in rows):
        notes.append("place '-': not ranked, the release's answers can be rebuilt from public information "
                     "(a --seed development release)")
    notes += [f"{r['name']}: {r['board_reason']}" for r in rows if r.get("board_reason")]
    t.caption = "\n".join(notes) or None
    for r in rows:
        gates = " ".join(f"{g}:{'-' if v is None else 'P' if v else 'F'}" for g, v in r["gates"].items())
        ci = "-" if r["bootstrap_95"] is None else f"{r['bootstrap_95'][0]:.1f}-{r['bootstrap_95'][1]:.1f}"
        c = r["cost"]
        cost = ("-", "-", "-") if not c else (f"{sum(c['wall_s']) / len(c['wall_s']):.1f}",
                                             f"{sum(c['cpu_s']) / len(c['cpu_s']):.1f}",
                                             f"{c['peak_rss_bytes'] / 2**20:.0f}")
        t.add_row("-" if r["place"] is None else str(r["place"]), r["name"], gates, f"{r['professional_score']:.1f}",
                  f"{r['worst']:.1f}", ci, f"{r['completion_rate']:.2f}", *cost,
                  *(f"{r['groups'][g]:.2f}" for g in "ABCDEF"))
    Console(width=200).print(t)


@click.command("pro-baselines")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write the baseline submissions into (new or empty; see --force).")
@force_option
def pro_baselines(output: Path, force: bool) -> None:
    """Write the five baseline submissions (``run`` script, manifest, vendored icl) into OUTPUT."""
    from icl.io import prepare_output_dir
    from icl.pro.evaluate import write_baselines

    prepare_output_dir(output, force)
    folders = write_baselines(output)
    click.echo(f"wrote {len(folders)} baselines to {output}")


@click.command("pro-baselines-eval")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("baselines", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--work", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Working folder for the input copies, run outputs and logs (new or empty; see --force).")
@click.option("--per-template", default=4, show_default=True, type=click.IntRange(min=1),
              help="Test instances per template to run.")
@click.option("--runs", default=3, show_default=True, type=click.IntRange(1, 3), help="Independent runs per baseline.")
@click.option("--cpus", default=4, show_default=True, type=int, help="CPU cores granted to each sandboxed run.")
@click.option("--memory", default="8G", show_default=True, help="Memory limit of each sandboxed run, e.g. 8G.")
@click.option("--timeout", "timeout_s", default=1200.0, show_default=True, type=float, help="Wall seconds per input set.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write every score JSON here.")
@click.option("--force", is_flag=True,
              help="Empty a non-empty WORK folder first (everything in it is deleted).")
def pro_baselines_eval(release: Path, baselines: Path, work: Path, per_template: int, runs: int, cpus: int, memory: str,
                       timeout_s: float, output: Path | None, force: bool) -> None:
    """Freeze every baseline in BASELINES, run it on RELEASE through the sandboxed harness, print the leaderboard."""
    from icl.io import prepare_output_dir, write_json
    from icl.pro.evaluate import evaluate

    subs = sorted(p for p in baselines.iterdir() if (p / "run").is_file())
    if not subs:
        raise click.UsageError(f"no submission folders with a run program in {baselines}")
    prepare_output_dir(work, force)
    scores = evaluate(release, subs, work, per_template=per_template, runs=runs, cpus=cpus, memory=memory,
                      timeout_s=timeout_s)
    if output:
        write_json(output, {"scores": [{k: v for k, v in s.items() if k != "run_details"} for s in scores]})
    _table(scores)


COMMANDS = [pro_generate, pro_score, pro_baselines, pro_baselines_eval]
try:
    from icl.pro.cli_harness import COMMANDS as HARNESS_COMMANDS
except ImportError:
    HARNESS_COMMANDS = []
COMMANDS = COMMANDS + list(HARNESS_COMMANDS)

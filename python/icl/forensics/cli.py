"""``icl forensics-generate``, ``icl forensics-baseline`` and ``icl forensics-evaluate``."""

from __future__ import annotations

from pathlib import Path

import click

from icl.cli_options import force_option
from icl.parallel import scheduler_options


@click.command("forensics-generate")
@click.option(
    "--output", required=True, type=click.Path(file_okay=False, path_type=Path), help="Release folder."
)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Make a public development release from this seed: anyone can rebuild its labels and it "
                   "is never ranked. Without it a secret key is drawn and kept in "
                   "OUTPUT/private/release.key.")
@scheduler_options
@force_option
def forensics_generate(
    output: Path, seed: int | None, scheduler: str | None, workers: int, force: bool
) -> None:
    """Render physical halo images, mix in forged ones, write a release with private labels."""
    import sys

    from icl.forensics.generate import write_release
    from icl.io import prepare_output_dir

    prepare_output_dir(output, force, release=True)

    manifest = write_release(output, seed, progress=sys.stderr.isatty(), scheduler=scheduler, workers=workers)
    key = f"seed {seed}, labels rebuildable" if seed is not None else f"secret key {manifest['key_id']}"
    click.echo(f"{output}: {manifest['counts']} ({key}), {len(manifest['files'])} files")


@click.command("forensics-baseline")
@click.option("--release", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Release folder written by forensics-generate (only public/ is read).")
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Submission JSON."
)
@click.option("--mode", type=click.Choice(["random", "physics", "fit"]), required=True,
              help="random: seeded random scores (the floor); physics: re-render each stated condition and "
                   "compare features; fit: fit the tolerance nuisances to each image and score what they "
                   "cannot explain (the ceiling; about 80 renders per genuine image, 400 per forgery).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random baseline.")
@click.option("--details", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="fit: also write each image's fitted nuisances, misfit, anomaly and F05 probes "
                   "to this JSON.")
@scheduler_options
def forensics_baseline(release: Path, output: Path, mode: str, seed: int, details: Path | None,
                       scheduler: str | None, workers: int) -> None:
    """Write a reference submission: random scores, the physics check or the nuisance-fit detector."""
    import sys

    from icl.forensics.baseline import load_public, physics_scores, random_scores
    from icl.forensics.fit import fit_scores
    from icl.io import write_json

    images, stated = load_public(release)
    if mode == "random":
        scores = random_scores(list(images), seed)
    elif mode == "physics":
        scores = physics_scores(images, stated)
    else:
        fits: dict[str, dict] = {}
        scores = fit_scores(images, stated, progress=sys.stderr.isatty(), scheduler=scheduler,
                            workers=workers, details=fits)
        if details is not None:
            write_json(details, {"fits": fits})
    write_json(output, {"scores": scores})
    click.echo(f"{output}: {mode} scores for {len(scores)} images")


@click.command("forensics-evaluate")
@click.option("--release", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Release folder written by forensics-generate (with its private labels).")
@click.option("--submission", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Submission JSON: a score per image and item.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Score JSON.")
def forensics_evaluate(release: Path, submission: Path, output: Path) -> None:
    """Score a submission with the contest rule: NH, DUP, SPL areas and the safety score S."""
    from rich.console import Console
    from rich.table import Table

    from icl.contest.report import NOTE
    from icl.forensics.evaluate import evaluate
    from icl.io import write_json

    record = evaluate(release, submission)
    write_json(output, record)
    t = Table(title=f"halo forensics: {submission.name}", caption=NOTE, caption_justify="left")
    for col in ("symbol", "value", "P/N", "area", "reason"):
        t.add_column(col)
    for k, a in record["items"].items():
        t.add_row(
            k,
            f"{a['value']:.4f}",
            f"{a['positives']}/{a['negatives']}",
            f"{a['kind']} [{a['interval'][0]:g}, {a['interval'][1]:g}] step",
            a["reason"] or "",
        )
    t.add_row("S", f"{record['S']:.4f}", "", "harmonic mean", record["zero_rule"] or "")
    console = Console()
    console.print(t)
    for p in record["problems"]:
        console.print(f"problem: {p}")


COMMANDS = [forensics_generate, forensics_baseline, forensics_evaluate]

"""Commands of an operator: freeze a release, evaluate submissions on it, build the board site."""

from __future__ import annotations

from pathlib import Path

import click

from icl.cli_options import force_option

#: The scoring modules of each track, whose code a freeze hashes (with everything they import).
SCORERS = {
    "pro": ("icl.pro.score", "icl.pro.evaluate"),
    "halo": ("icl.halo.evaluate",),
    "forensics": ("icl.forensics.evaluate",),
}


def release_kind(release: Path) -> str:
    """``pro``, ``halo`` or ``forensics`` from a release's layout."""
    if (release / "public" / "forensics_cases.json").is_file():
        return "forensics"
    from icl.board.queue import release_track

    return release_track(release)


def _disputes(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, reason = v.partition("=")
        if not sep or not key.strip() or not reason.strip():
            raise click.BadParameter(f"expected ID=REASON, got {v!r}", param_hint="--dispute")
        out[key.strip()] = reason.strip()
    return out


@click.command("release-freeze")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--dispute",
    multiple=True,
    metavar="ID=REASON",
    help="Freeze out a disputed reference (instance or template id; halo case; forensics image) for "
    "every submission alike. Repeatable.",
)
@click.option("--check", is_flag=True, help="Only check the release against its freeze record.")
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing freeze record (every submission must then be evaluated again).",
)
def release_freeze(release: Path, dispute: tuple[str, ...], check: bool, force: bool) -> None:
    """Freeze RELEASE before any evaluation: hashes of its task texts, references and scoring code.

    Writes RELEASE/freeze.json; every scorer then refuses the release if a frozen part changes.
    """
    from icl.freeze import check_release, freeze_release

    if check:
        status = check_release(release)
        if not status["frozen"]:
            raise click.UsageError(f"{release} has no freeze record")
        click.echo(f"frozen {status['freeze_sha256']}: unchanged since {status['frozen_at']}")
        return
    from icl.io import claim_release

    claim_release(release)  # freeze.json is the release's own record: the one file written inside it
    kind = release_kind(release)
    doc = freeze_release(release, SCORERS[kind], _disputes(dispute), track=kind, force=force)
    parts = doc["parts"]
    click.echo(
        f"froze {kind} release {release}: {len(parts['task'])} task files, {len(parts['reference'])} "
        f"reference files, {len(parts['code'])} scoring code files; freeze {doc['freeze_sha256']}"
    )


@click.group("board")
def board() -> None:
    """Evaluate submissions on a frozen release and publish the boards as a static site."""


@board.command("evaluate")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument(
    "submissions", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--work",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Evaluation folder to write (new or empty): runs, records, scores.",
)
@click.option(
    "--runs", default=3, show_default=True, type=click.IntRange(1, 10), help="Independent runs each."
)
@click.option(
    "--per-template",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Test instances per template (professional track).",
)
@click.option(
    "--research",
    multiple=True,
    metavar="NAME",
    help="Enter this submission on the research board (no build limit). Repeatable.",
)
@click.option(
    "--build-minutes",
    default=90.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Build phase budget (the research board has none).",
)
@click.option(
    "--run-minutes",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Run phase budget per input set.",
)
@click.option("--cpus", default=4, show_default=True, type=click.IntRange(min=1), help="Cores per run.")
@click.option("--memory", default="8G", show_default=True, help="Memory per run, e.g. 8G.")
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="dask.distributed scheduler address, or 'local' for a LocalCluster; default serial.",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Workers of the LocalCluster with --scheduler local.",
)
@click.option(
    "--bootstrap",
    "bootstrap_n",
    default=2000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Bootstrap replicates of each interval.",
)
def board_evaluate(
    release: Path,
    submissions: tuple[Path, ...],
    work: Path,
    runs: int,
    per_template: int,
    research: tuple[str, ...],
    build_minutes: float,
    run_minutes: float,
    cpus: int,
    memory: str,
    scheduler: str | None,
    workers: int,
    bootstrap_n: int,
) -> None:
    """Run every SUBMISSION (a folder with a run program) RUNS times on the frozen RELEASE and score them.

    Each (submission, run, input set) is one task, serially or on dask.distributed; WORK gets the runs, the
    harness records, the scores and evaluation.json.
    """
    from icl.board.queue import Budget, evaluate_board

    budget = Budget(build_s=build_minutes * 60, run_s=run_minutes * 60, cpus=cpus, memory=memory)
    doc = evaluate_board(
        release,
        submissions,
        work,
        runs=runs,
        per_template=per_template,
        research=research,
        budget=budget,
        scheduler=scheduler,
        workers=workers,
        bootstrap_n=bootstrap_n,
    )
    bad = [t["key"] for t in doc["tasks"] if not t["ok"]]
    click.echo(
        f"evaluated {len(doc['submissions'])} submissions x {runs} runs ({len(doc['tasks'])} tasks, "
        f"{doc['wall_s']:.1f} s) on freeze {doc['freeze']['freeze_sha256'][:16]}; "
        f"{len(bad)} tasks not ok{': ' + ', '.join(bad[:5]) if bad else ''}"
    )


@board.command("build")
@click.argument(
    "works", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Site folder to write (new or empty; see --force).",
)
@click.option(
    "--source-reviews",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Recorded source reviews (icl-source-review/1) that confirm or reclassify from-scratch entries.",
)
@click.option(
    "--bootstrap",
    "bootstrap_n",
    default=2000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Bootstrap replicates of the halo intervals.",
)
@force_option
def board_build(
    works: tuple[Path, ...], output: Path, source_reviews: Path | None, bootstrap_n: int, force: bool
) -> None:
    """Build the static site of the boards from one or more evaluation folders (WORKS)."""
    from icl.board.rows import board_data
    from icl.board.site import build_site

    data = board_data(list(works), source_reviews, bootstrap_n)
    pages = build_site(data, output, force)
    click.echo(f"wrote {len(pages)} pages for {len(data['boards'])} boards into {output}")


COMMANDS = [release_freeze, board]

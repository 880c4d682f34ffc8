"""``icl demo``: generate the halo release, run every baseline on both splits, score each and print the table."""

from __future__ import annotations

import sys

import click

from icl.cli_options import force_option


@click.command("demo")
@click.option("--output", default="demo-output", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the release, the baseline runs and their scores.")
@click.option("--no-gallery", is_flag=True, help="Skip the evaluator-only gallery.")
@force_option
def demo(output: str, no_gallery: bool, force: bool) -> None:
    """Build the halo release (dev and held-out test split), run every baseline on both and print the scores."""
    import time

    from rich.console import Console

    from icl.halo.baselines import MODES, run_baseline
    from icl.halo.evaluate import evaluate, load_release, write_score
    from icl.halo.release import generate
    from icl.io import prepare_output_dir

    out = prepare_output_dir(output, force, release=True)
    release = out / "halo-release"
    console = Console()
    tty = sys.stderr.isatty()
    t0 = time.perf_counter()
    generate(release, gallery=not no_gallery, progress=tty)
    console.print(f"release: {release} ({time.perf_counter() - t0:.1f} s)")
    table = baseline_table()
    for split in ("dev", "test"):
        loaded = load_release(release, split)
        for mode in MODES:
            sub = out / "runs" / split / mode
            run_baseline(release, sub, mode, progress=tty, split=split)
            doc = evaluate(release, sub, loaded, split=split)
            write_score(doc, sub / "score.json")
            invalid = sum(not c["valid"] for case in doc["cases"].values() for c in case["conditions"].values())
            sub_scores = doc["diagnostic_subscores"]
            table.add_row(split, mode, *(_cell(v) for v in (doc["halo_development_score"],
                                                             sub_scores["position_bearing_cases"],
                                                             sub_scores["fixation_cases"])), str(invalid))
        table.add_section()
    console.print(table)
    if not no_gallery:
        console.print(f"gallery (evaluator only): {release / 'gallery' / 'index.html'}")


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def baseline_table():
    """The demo's score table: short headers, so that it stays whole at 80 columns; the caption names them."""
    from rich.table import Table

    table = Table(
        title="halo baselines (halo_development_score, 0-100)",
        caption="position / fixation: mean over the position-bearing and the fixation cases; "
        "invalid: conditions scored 0 because their file is missing or was refused",
        caption_justify="left",
    )
    for col in ("split", "baseline", "score", "position", "fixation", "invalid"):
        table.add_column(col, justify="left" if col in ("split", "baseline") else "right", no_wrap=True)
    return table


COMMANDS = [demo]

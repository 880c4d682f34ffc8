"""``icl demo``: generate the halo release, run the four baselines, score each and print the table."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from icl.cli_options import force_option

BASELINES = ("reference", "wrong-position", "no-halo", "fixed-circle")


@click.command("demo")
@click.option("--output", default="demo-output", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the release, the four baseline runs and their scores.")
@click.option("--no-gallery", is_flag=True, help="Skip the evaluator-only gallery.")
@force_option
def demo(output: str, no_gallery: bool, force: bool) -> None:
    """Build the halo release, run the four baselines and print their scores."""
    import time

    from rich.console import Console

    from icl.halo.baselines import run_baseline
    from icl.halo.evaluate import evaluate, write_score
    from icl.halo.release import generate
    from icl.io import prepare_output_dir

    out = prepare_output_dir(output, force)
    console = Console()
    tty = sys.stderr.isatty()
    t0 = time.perf_counter()
    generate(out / "halo-release", gallery=not no_gallery, progress=tty)
    console.print(f"release: {out / 'halo-release'} ({time.perf_counter() - t0:.1f} s)")
    table = baseline_table()
    for mode in BASELINES:
        sub = out / "runs" / f"halo-{mode}"
        run_baseline(out / "halo-release", sub, mode, progress=tty)
        doc = evaluate(out / "halo-release", sub)
        write_score(doc, sub / "score.json")
        invalid = sum(not c["valid"] for case in doc["cases"].values() for c in case["conditions"].values())
        sub_scores = doc["diagnostic_subscores"]
        table.add_row(mode, f"{doc['halo_development_score']:.2f}", f"{sub_scores['position_bearing_cases']:.2f}",
                      f"{sub_scores['fixation_cases']:.2f}", str(invalid))
    console.print(table)
    console.print(f"gallery (evaluator only): {out / 'halo-release' / 'gallery' / 'index.html'}")


def baseline_table():
    """The demo's score table: short headers, so that it stays whole at 80 columns; the caption names them."""
    from rich.table import Table

    table = Table(
        title="halo baselines (halo_development_score, 0-100)",
        caption="position / fixation: mean over the position-bearing and the fixation cases; "
        "invalid: conditions scored 0 because their file is missing or was refused",
        caption_justify="left",
    )
    for col in ("baseline", "score", "position", "fixation", "invalid"):
        table.add_column(col, justify="left" if col == "baseline" else "right", no_wrap=True)
    return table


COMMANDS = [demo]

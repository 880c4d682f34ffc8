"""``icl eye-trace``: a thick-eye data package in; PSF, energy ledger, sampled rays and metrics out."""

from __future__ import annotations

from pathlib import Path

import click

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
ALL_PATHS = ("lens", "hole", "edge", "ghost_icl", "ghost_icl_lens")


@click.command("eye-trace")
@click.option("--eye", "eye", required=True, type=_FILE, help="eye.json of the data package.")
@click.option("--implant", required=True, type=_FILE, help="implant.json.")
@click.option("--illumination", required=True, type=_FILE, help="illumination.json.")
@click.option("--detector", required=True, type=_FILE, help="detector.json.")
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder: new or empty (see --force), so that its manifest lists exactly what is written.",
)
@click.option(
    "--paths",
    default=",".join(ALL_PATHS),
    show_default=True,
    help="Comma-separated light paths to keep (ablation: leave some out).",
)
@click.option(  # icl.cli_options.force_option's rule; the engine imports nothing above icl.io
    "--force", is_flag=True, help="Empty a non-empty OUTPUT folder first (everything in it is deleted)."
)
def eye_trace_cmd(
    eye: Path, implant: Path, illumination: Path, detector: Path, output: Path, paths: str, force: bool
) -> None:
    """Trace a thick eye with its ICL and render its PSF onto the detector.

    Writes psf_linear.npz, energy.json, paths.npz, metrics.json and manifest.json into OUTPUT.
    """
    from rich import box
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from icl.errors import InputError
    from icl.eye.package import load_package
    from icl.eye.run import _paths_of, run
    from icl.io import prepare_output_dir, write_json, write_manifest, write_npz

    chosen = tuple(p.strip() for p in paths.split(",") if p.strip())
    bad = [p for p in chosen if p not in ALL_PATHS]
    if bad or not chosen:
        raise InputError(f"unknown path(s) {bad or chosen}; known: {list(ALL_PATHS)}", None, "--paths")
    pkg = load_package(eye, implant, illumination, detector)
    prepare_output_dir(output, force)  # before the trace: a refused folder costs nothing
    primary, ghosts = _paths_of(pkg, chosen)
    steps = len(pkg.sources) * ((1 if primary else 0) + len(ghosts))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task("eye-trace", total=steps)
        result = run(pkg, chosen, progress=lambda label: bar.update(task, advance=1, description=label))
    write_npz(output / "psf_linear.npz", **result.psf)
    write_npz(output / "paths.npz", **result.rays)
    write_json(output / "energy.json", result.energy)
    write_json(output / "metrics.json", result.metrics)
    write_manifest(output, {"command": "eye-trace", "paths": list(chosen)})
    # Short headers and fixed-width numbers keep the table whole at 80 columns; energy.json has the keys.
    columns = {"transmitted": "transm.", "outside_detector": "off det.", "reflected": "reflect.",
               "blocked": "blocked", "not_in_path": "not in path", "residual": "residual"}
    table = Table(title="Energy per path (fraction of the incident flux, summed over sources)",
                  caption="keys in energy.json: " + ", ".join(columns), caption_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("path", no_wrap=True)
    for header in columns.values():
        table.add_column(header, justify="right", no_wrap=True)
    for p in primary + ghosts:
        vals = [sum(s["paths"][p][k] for s in result.energy["sources"].values()) for k in columns]
        table.add_row(p, *(f"{v:.4f}" for v in vals[:-1]), f"{vals[-1]:.1e}")
    Console().print(table)
    click.echo(
        f"recorded on the detector: {result.metrics['total_recorded']:.6f} of the source flux; wrote {output}"
    )


COMMANDS = [eye_trace_cmd]

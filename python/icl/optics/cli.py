"""``icl render``: a scene JSON in, linear components and an energy ledger out."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("render")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output .npz; the energy ledger is written beside it as .json.",
)
@click.option("--fft-factor", type=float, default=None, help="FFT period / support window (default 4).")
def render_cmd(spec: Path, output: Path, fft_factor: float | None) -> None:
    """Render SPEC (DESIGN.md section 4 scene JSON) through the thin-phase eye."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from icl.io import load_json, write_json, write_npz
    from icl.optics import Sampling, Scene, render

    scene = Scene.from_dict(load_json(spec), file=str(spec))
    sampling = Sampling() if fft_factor is None else Sampling(fft_factor=fft_factor)
    res = render(scene, sampling)
    output = output if output.suffix == ".npz" else output.with_suffix(".npz")
    write_npz(
        output,
        components=res.components,
        scene=res.scene,
        angular_pixel_arcsec=np.float64(res.angular_pixel_arcsec),
        x_arcmin=res.x_arcmin,
        y_arcmin=res.y_arcmin,
    )
    ledger = {
        "units": "fraction of the source flux (flux x sum of spectral weights)",
        "sources": {s.id: led for s, led in zip(scene.sources, res.ledgers)},
        "total": res.ledger,
        "sampling": res.sampling,
        "scene": scene.to_dict(),
    }
    write_json(output.with_suffix(".json"), ledger)
    table = Table(title=f"Energy ledger of {spec.name} (fraction of source flux)")
    table.add_column("entry")
    for s in scene.sources:
        table.add_column(s.id, justify="right")
    table.add_column("total", justify="right")
    for k in res.ledgers[0]:
        table.add_row(k, *(f"{led[k]:.6g}" for led in res.ledgers), f"{res.ledger[k]:.6g}")
    Console().print(table)
    click.echo(f"wrote {output} and {output.with_suffix('.json')}")


COMMANDS = [render_cmd]

"""``icl render``: a scene JSON in, linear components and an energy ledger out."""

from __future__ import annotations

from pathlib import Path

import click

# Sampling().fft_factor, written out so that the command line loads without the engine (a test
# keeps the two equal).
DEFAULT_FFT_FACTOR = 2.0
LEDGER_UNITS = (
    "absolute flux, in the units of the sources' flux: source_flux = flux x sum of spectral weights; "
    "divide an entry by source_flux for a fraction"
)


# What each scene frame means (icl.optics.model.FRAMES), written beside every render (docs/conventions.md).
FRAME_DEFINITIONS = {
    "visual": "visual frame: +x right and +y up as the observer sees them; a source at +x appears at +x and "
              "a minus optic decentred toward +x moves its pattern toward +x (Prentice, 'with motion'); "
              "row i = +y, column j = +x",
    "halo": "halo-track convention: sources where they are seen, but a pupil tilt W = a . u draws the pattern "
            "at +a (a minus optic decentred toward +x moves its pattern toward -x); row i = +y, column j = +x",
}


def ledger_path(output: Path) -> Path:
    """Where ``icl render -o OUTPUT.npz`` writes its ledger: ``OUTPUT.npz.ledger.json``.

    The name keeps the ``.npz`` it belongs to, so that it never lands on a scene file ``OUTPUT.json``.
    """
    return output.with_name(output.name + ".ledger.json")


@click.command("render")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file, named *.npz; the energy ledger is written beside it as OUTPUT.npz.ledger.json.",
)
@click.option(
    "--fft-factor",
    type=click.FloatRange(min=1.0),
    default=DEFAULT_FFT_FACTOR,
    show_default=True,
    help="Lower bound on the FFT period / PSF support window (>= 1).",
)
def render_cmd(spec: Path, output: Path, fft_factor: float) -> None:
    """Render SPEC (a scene JSON, docs/formats.md) through the thin-phase eye."""
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from icl.errors import InputError, OutputError
    from icl.io import load_json, output_target, write_json, write_npz
    from icl.optics import Sampling, Scene, render
    from icl.optics.model import MAX_RENDER_BYTES, render_memory_estimate

    if output.suffix != ".npz":  # the name given is the name written, or nothing is
        raise OutputError(
            "the output is a NumPy .npz archive: give a name ending in .npz, "
            f"e.g. {output.with_suffix('.npz')}",
            str(output),
        )
    scene = Scene.from_dict(load_json(spec), file=str(spec))
    for target in (output, ledger_path(output)):  # both checked before anything is written
        output_target(target)
    need = render_memory_estimate(scene, fft_factor)  # the scene checked the default factor only
    if need > MAX_RENDER_BYTES:
        raise InputError(
            f"rendering with --fft-factor {fft_factor:g} needs about {need / 2**30:.3g} GiB, more than the "
            f"{MAX_RENDER_BYTES / 2**30:g} GiB cap",
            str(spec),
        )
    res = render(scene, Sampling(fft_factor=fft_factor))
    write_npz(
        output,
        components=res.components,
        scene=res.scene,
        angular_pixel_arcsec=np.float64(res.angular_pixel_arcsec),
        x_arcmin=res.x_arcmin,
        y_arcmin=res.y_arcmin,
    )
    ledger = {
        "units": LEDGER_UNITS,
        "frame": res.frame,
        "frame_definition": FRAME_DEFINITIONS[res.frame],
        "sources": {s.id: led for s, led in zip(scene.sources, res.ledgers, strict=True)},
        "total": res.ledger,
        "sampling": res.sampling,
        "scene": scene.to_dict(),
    }
    write_json(ledger_path(output), ledger)
    table = Table(title=f"Energy ledger of {spec.name}", caption="absolute flux (units of the source flux)")
    table.add_column("entry")
    for s in scene.sources:
        table.add_column(s.id, justify="right")
    table.add_column("total", justify="right")
    for k in res.ledgers[0]:
        table.add_row(k, *(f"{led[k]:.6g}" for led in res.ledgers), f"{res.ledger[k]:.6g}")
    Console().print(table)
    click.echo(f"wrote {output} and {ledger_path(output)}")


COMMANDS = [render_cmd]

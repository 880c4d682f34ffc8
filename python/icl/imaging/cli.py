"""``icl mtf`` and ``icl scene``: imaging metrics and multi-variant scene renders."""

from __future__ import annotations

from pathlib import Path

import click

from icl.cli_options import force_option


@click.command("mtf")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON file for the MTF cuts, Strehl ratios and encircled energy.")
def mtf_command(spec: Path, output: Path) -> None:
    """MTF (radial, tangential, sagittal; cycles/deg), Strehl and encircled energy of a pupil.

    SPEC is ``{"pupil": {...}, "spectrum": [[nm, w], ...], "field_deg": [x, y],
    "freqs_cpd": [...], "radii_arcmin": [...]}`` (all but ``pupil`` optional).
    """
    import numpy as np

    from icl.errors import InputError
    from icl.imaging.metrics import encircled_energy, pupil_psf_period, strehl
    from icl.imaging.mtf import analytic_mtf, cutoff_cpd, default_pitch_arcsec, pupil_otf
    from icl.io import load_json, write_json
    from icl.optics.model import Pupil, Source, _check_keys

    file = str(spec)
    d = _check_keys(load_json(spec), {"pupil", "spectrum", "field_deg", "freqs_cpd", "radii_arcmin"}, "", file)
    pupil = Pupil.from_dict(d.get("pupil", {}), "pupil", file)
    src = Source.from_dict({"spectrum": d["spectrum"]} if "spectrum" in d else {}, "", file)
    field = d.get("field_deg", [0.0, 0.0])
    if not (isinstance(field, list) and len(field) == 2 and all(isinstance(v, (int, float)) for v in field)):
        raise InputError("expected [x_deg, y_deg]", file, "field_deg")
    lam_min = min(lam for lam, _ in src.spectrum)
    fc = cutoff_cpd(pupil.diameter_mm, lam_min)
    freqs = np.asarray(d.get("freqs_cpd", np.linspace(0.0, fc, 41).tolist()), dtype=float)
    radii = np.asarray(d.get("radii_arcmin", [0.25, 0.5, 1.0, 2.0, 5.0]), dtype=float)
    if freqs.ndim != 1 or np.any(~np.isfinite(freqs)) or np.any(freqs < 0):
        raise InputError("expected non-negative frequencies", file, "freqs_cpd")
    if radii.ndim != 1 or np.any(~np.isfinite(radii)) or np.any(radii <= 0):
        raise InputError("expected positive radii", file, "radii_arcmin")
    otf = pupil_otf(pupil, src.spectrum)
    tan, sag = otf.tangential_sagittal(freqs, *field)
    per_lambda = {}
    for lam, _ in src.spectrum:
        st = strehl(pupil, lam)
        samples, pitch = pupil_psf_period(pupil, lam, default_pitch_arcsec(pupil.diameter_mm, lam_min))
        per_lambda[f"{lam:g}"] = {"strehl": st.__dict__, "cutoff_cpd": cutoff_cpd(pupil.diameter_mm, lam),
                                  "encircled_energy": encircled_energy(samples, pitch, radii).tolist()}
    out = {"pupil": pupil.to_dict(), "spectrum": [list(p) for p in src.spectrum], "field_deg": field,
           "freqs_cpd": freqs, "mtf_radial": otf.radial(freqs), "mtf_tangential": tan, "mtf_sagittal": sag,
           "mtf_diffraction_limit_shortest_wavelength": analytic_mtf(freqs / fc), "radii_arcmin": radii,
           "per_wavelength": per_lambda,
           "notes": "MTF from the engine's band-limited PSF over one FFT period (no pixel MTF); Strehl at the origin"}
    write_json(output, out)
    click.echo(f"wrote {output}")


@click.command("scene")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for one sub-folder per variant and a manifest (new or empty; see --force).")
@click.option("--figure", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the side-by-side picture of all previews here.")
@force_option
def scene_command(spec: Path, output: Path, figure: Path | None, force: bool) -> None:
    """Render every variant of the scene spec SPEC: linear retinal image, fixed-mapping preview, metrics."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from icl.imaging.night_road import figure_order, load_spec, run_scene, side_by_side, spec_labels
    from icl.io import load_json, prepare_output_dir

    scenes, _, _ = load_spec(spec)
    prepare_output_dir(output, force)  # the manifest then lists exactly what this run wrote
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn()) as bar:
        task = bar.add_task("variants", total=len(scenes))
        seen: list[str] = []

        def step(name: str) -> None:
            if seen:
                bar.advance(task)
            seen.append(name)
            bar.update(task, description=f"rendering {name}")

        run_scene(spec, output, step)
        bar.advance(task)
    if figure is not None:
        meta = load_json(spec)
        side_by_side(output, figure_order(meta, list(scenes)), figure, spec_labels(meta))
        click.echo(f"wrote {figure}")
    click.echo(f"wrote {output}")


@click.command("thick-fields")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="JSON file for the field table and the patch-blending errors.")
@click.option("--figure", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the PSF panels (e.g. docs/img/fieldmap_thick.png).")
@click.option("--package", "package_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Eye data package folder (default: the example package cases/examples/eye).")
def thick_fields_command(output: Path, figure: Path | None, package_dir: Path | None) -> None:
    """Off-axis PSFs of the thick eye at 0, 5, 10, 20 deg against the translated on-axis PSF (~3 min)."""
    from icl._paths import cases_dir
    from icl.eye.package import load_package_dir
    from icl.imaging.thick import thick_field_report
    from icl.io import write_json

    pkg = load_package_dir(package_dir or cases_dir() / "examples" / "eye")
    out = thick_field_report(pkg.eye, pkg.implant, figure=figure, progress=click.echo)
    write_json(output, out)
    click.echo(f"wrote {output}" + (f" and {figure}" if figure else ""))


@click.command("mtf-figure")
@click.argument("png", type=click.Path(dir_okay=False, path_type=Path))
def mtf_figure_command(png: Path) -> None:
    """MTF figure to PNG: clear pupil at 450/550/650 nm vs the analytic curve; thin eye with hole; thick eye."""
    from icl.imaging.mtf_figure import mtf_figure

    rows = mtf_figure(png)
    for name, err in rows.items():
        click.echo(f"{name}: {err}")
    click.echo(f"wrote {png}")


COMMANDS = [mtf_command, scene_command, thick_fields_command, mtf_figure_command]

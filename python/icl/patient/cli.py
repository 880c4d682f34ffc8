"""Command-line entry points of the patient layer: patient-annotate, patient-demo, patient-score."""

from __future__ import annotations

import click

from icl.cli_options import force_option


@click.command("patient-annotate")
@click.option(
    "--port",
    default=8737,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port on 127.0.0.1 (0 picks a free one).",
)
@click.option("--no-browser", is_flag=True, help="Do not open a browser window.")
def patient_annotate(port: int, no_browser: bool) -> None:
    """Serve the halo annotation page on 127.0.0.1 (it stores and sends nothing)."""
    import webbrowser

    from icl.patient.annotate import make_server

    try:
        server = make_server(port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    click.echo(f"Annotation page at {url}  (Ctrl-C to stop; the page keeps data in memory only)")
    if not no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command("patient-demo")
@click.option("--output", required=True, type=click.Path(file_okay=False), help="Folder to write.")
@click.option("--seed", default=2026, show_default=True, type=int, help="Seed of the fictional generator.")
@force_option
def patient_demo(output: str, seed: int, force: bool) -> None:
    """Write the FICTIONAL patient-layer demo set: 48 reports, public targets, reference, demo prediction."""
    from icl.io import prepare_output_dir
    from icl.patient.demo import build_demo

    prepare_output_dir(output, force, release=True)

    manifest = build_demo(output, seed)
    click.echo(
        f"wrote {len(manifest['files'])} files to {output} (fictional data; manifest.json lists hashes)"
    )


@click.command("patient-score")
@click.option("--reference", required=True, type=click.Path(dir_okay=False), help="Report file (reference).")
@click.option("--predictions", required=True, type=click.Path(dir_okay=False), help="Prediction file.")
@click.option("--output", required=True, type=click.Path(dir_okay=False), help="Score file to write (JSON).")
@click.option(
    "--raster",
    default=256,
    show_default=True,
    type=click.IntRange(64, 512),
    help="Raster size per axis of the fixed +/-15 deg frame.",
)
def patient_score(reference: str, predictions: str, output: str, raster: int) -> None:
    """Score a prediction file against patient reports (development score; not clinical)."""
    from pathlib import Path

    from icl.io import sha256_file, write_json
    from icl.patient.report import print_summary
    from icl.patient.schema import load_predictions, load_reports
    from icl.patient.scoring import score

    reports = load_reports(reference)
    sources = {
        tid: [s["id"] for s in recs[0]["stimulus"]["sources"]] for tid, recs in reports.targets.items()
    }
    preds = load_predictions(predictions, sources)
    result = score(reports, preds, raster)
    result["inputs"] = {
        "reference": {"file": Path(reference).name, "sha256": sha256_file(reference)},
        "predictions": {
            "file": Path(predictions).name,
            "sha256": sha256_file(predictions) if Path(predictions).is_file() else None,
        },
    }
    write_json(output, result)
    print_summary(result)
    click.echo(f"score file: {output}")


COMMANDS = [patient_annotate, patient_demo, patient_score]

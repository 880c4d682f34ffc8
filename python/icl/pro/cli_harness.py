"""Commands ``icl pro-validate`` and ``icl pro-run`` (registered by ``icl.pro.cli``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("pro-validate")
@click.argument("submission", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def pro_validate(submission: Path, as_json: bool) -> None:
    """Check a professional-track SUBMISSION folder against the contract (exit 1 if it fails).

    A valid submission declared from-scratch is also scanned as the harness will scan it before each run
    (:func:`icl.sandbox.provenance.classify_track`): the track it would count for is printed, with the
    files that move it (reference code, opaque content). That is a notice, not a failure.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from icl.io import dumps_json
    from icl.pro.contract import validate_submission
    from icl.sandbox.fstree import tree_sha256
    from icl.sandbox.harness import manifest_track
    from icl.sandbox.provenance import classify_track

    report = validate_submission(submission)
    # The hash to freeze the code with (pass it to pro-run --frozen-hash); only for a valid submission.
    code_hash = tree_sha256(submission) if report.ok else None
    counts = None
    if report.ok and manifest_track(submission) == "from-scratch":
        track, evidence = classify_track(submission)
        counts = {"declared": "from-scratch", "counts_for": track, "summary": evidence["summary"],
                  "hits": evidence["hits"][:20]}
    if as_json:
        click.echo(dumps_json({**report.to_dict(), "code_sha256": code_hash, "track_check": counts}), nl=False)
    else:
        console = Console(soft_wrap=True)
        if report.ok:
            console.print(f"[green]valid[/green]: {submission} ({len(report.cases)} case(s))")
            console.print(f"code sha256: {code_hash}")
            if counts and counts["counts_for"] != "from-scratch":
                console.print(f"[yellow]declared from-scratch, counts as {counts['counts_for']}[/yellow]: "
                              + escape(counts["summary"]))
        else:
            table = Table("file", "field", "problem", title=f"{submission}: {len(report.issues)} problem(s)")
            for issue in report.issues:
                table.add_row(issue.file, issue.field, issue.message)
            console.print(table)
    sys.exit(0 if report.ok else 1)


@click.command("pro-run")
@click.option("--submission", required=True, type=click.Path(path_type=Path), help="Submission folder.")
@click.option("--input", "input_dir", required=True, type=click.Path(path_type=Path),
              help="Input folder (read-only inside).")
@click.option("--output", "output_dir", required=True, type=click.Path(path_type=Path),
              help="Empty or absent output folder.")
@click.option("--cpus", default=4, show_default=True, type=click.IntRange(min=1), help="CPU cores.")
@click.option("--memory", default="8G", show_default=True, help="Total memory of the run, e.g. 8G.")
@click.option("--timeout", "timeout_s", default=1200.0, show_default=True, type=click.FloatRange(min=0,
              min_open=True), help="Wall-clock limit in seconds.")
@click.option("--frozen-hash", default=None, help="Refuse to run unless the code tree has this SHA-256.")
@click.option("--logs", "logs_dir", default=None, type=click.Path(path_type=Path),
              help="Logs folder (default OUTPUT.logs).")
@click.option("--track", default=None, type=click.Choice(["from-scratch", "reference-assisted"]),
              help="Track to run on (default: the manifest's track, else from-scratch).")
def pro_run(submission: Path, input_dir: Path, output_dir: Path, cpus: int, memory: str, timeout_s: float,
            frozen_hash: str | None, logs_dir: Path | None, track: str | None) -> None:
    """Run SUBMISSION/run INPUT OUTPUT in the sandbox; print the run record (exit 1 unless it is ok).

    Every result file in OUTPUT is then checked against the results schema; each problem is listed under
    ``result_issues`` with its file (relative to OUTPUT) and field. The scorer gives 0 to the checks such
    a file feeds.
    """
    from icl.io import dumps_json
    from icl.pro.results_schema import validate_output
    from icl.sandbox.harness import run_submission

    record = run_submission(submission, input_dir, output_dir, cpus=cpus, memory=memory, timeout_s=timeout_s,
                            frozen_hash=frozen_hash, logs_dir=logs_dir, track=track)
    issues = validate_output(output_dir) if output_dir.is_dir() else []
    click.echo(dumps_json({**record.to_dict(), "result_issues": issues}), nl=False)
    sys.exit(0 if record.ok else 1)


COMMANDS = [pro_validate, pro_run]

"""Command ``icl halo-run``: a halo-track submission run in the sandbox on a release's public part only."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def run_halo(
    release: str | Path,
    submission: str | Path,
    output: str | Path,
    *,
    track: str | None = None,
    cpus: int = 4,
    memory: str = "8G",
    timeout_s: float = 1200.0,
    logs_dir: str | Path | None = None,
    split: str | None = None,
    score_file: str | Path | None = None,
    mechanism: str | None = None,
) -> dict:
    """Run ``SUBMISSION/run /input /output`` with ``/input`` = ``RELEASE/public``; optionally score it.

    Nothing else of the release is staged into the sandbox: not ``private/`` (references, the release key),
    not ``gallery/``, not the release's host path. The prediction folder ``output`` is what
    ``icl halo-evaluate`` scores.

    Parameters
    ----------
    release : path-like
        Halo release folder (``public/``, ``private/``, ...).
    submission : path-like
        Folder with an executable ``run``; its ``manifest.json`` may declare ``track``.
    output : path-like
        Prediction folder to create (absent or empty).
    track : {"from-scratch", "reference-assisted"}, optional
        Declared track; default the manifest's, else from-scratch.
    cpus, memory, timeout_s, logs_dir, mechanism
        As for :func:`icl.sandbox.harness.run_submission`.
    split : {"dev", "test"}, optional
        With ``score_file``: the split to score.
    score_file : path-like, optional
        Write the score document there, with the run's tracks and its score on each board.

    Returns
    -------
    dict
        ``{"record": ..., "score": ... or None}``.

    """
    from icl.errors import InputError
    from icl.sandbox.boards import board_entry
    from icl.sandbox.harness import run_submission

    public = Path(release) / "public"
    if not public.is_dir() or public.is_symlink():
        raise InputError("no public/ folder in the release", str(release), "release")
    record = run_submission(
        submission,
        public,
        output,
        cpus=cpus,
        memory=memory,
        timeout_s=timeout_s,
        logs_dir=logs_dir,
        track=track,
        mechanism=mechanism,
    )
    doc = None
    if score_file is not None:
        from icl.halo.evaluate import evaluate
        from icl.io import write_json

        doc = evaluate(release, output, split=split or "dev")
        total = doc.get("halo_development_score") or 0.0
        # A run that broke a rule scores 0, whatever files it left.
        score = float(total) if record.ok else 0.0
        entry = board_entry(Path(submission).name, score, [record.to_dict()])
        doc["run"] = {
            "ok": record.ok,
            "violations": record.violations,
            "track": record.track,
            "effective_track": record.effective_track,
            "track_evidence": record.track_evidence.get("summary", ""),
            "record": record.logs.get("dir"),
        }
        doc["boards"] = entry["boards"]
        write_json(score_file, doc)
    return {"record": record.to_dict(), "score": doc}


@click.command("halo-run")
@click.option(
    "--release",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Halo release folder; only its public/ is shown to the program.",
)
@click.option(
    "--submission",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Submission folder holding an executable run.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Prediction folder to write (absent or empty).",
)
@click.option(
    "--track",
    default=None,
    type=click.Choice(["from-scratch", "reference-assisted"]),
    help="Track to run on (default: the manifest's track, else from-scratch).",
)
@click.option("--cpus", default=4, show_default=True, type=click.IntRange(min=1), help="CPU cores.")
@click.option("--memory", default="8G", show_default=True, help="Total memory of the run, e.g. 8G.")
@click.option(
    "--timeout",
    "timeout_s",
    default=1200.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Wall-clock limit in seconds.",
)
@click.option(
    "--logs",
    "logs_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Logs folder (default OUTPUT.logs).",
)
@click.option(
    "--split",
    default="dev",
    show_default=True,
    type=click.Choice(["dev", "test"]),
    help="Split scored with --score.",
)
@click.option(
    "--score",
    "score_file",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also score the predictions and write this score.json (with the track and each board's score).",
)
def halo_run(
    release: Path,
    submission: Path,
    output: Path,
    track: str | None,
    cpus: int,
    memory: str,
    timeout_s: float,
    logs_dir: Path | None,
    split: str,
    score_file: Path | None,
) -> None:
    """Run a halo SUBMISSION in the sandbox on RELEASE/public only; print the record (exit 1 unless ok)."""
    from icl.io import dumps_json

    got = run_halo(
        release,
        submission,
        output,
        track=track,
        cpus=cpus,
        memory=memory,
        timeout_s=timeout_s,
        logs_dir=logs_dir,
        split=split,
        score_file=score_file,
    )
    rec = got["record"]
    summary = {
        k: rec[k]
        for k in (
            "ok",
            "exit_status",
            "violations",
            "messages",
            "track",
            "effective_track",
            "wall_s",
            "peak_memory_bytes",
            "artifacts",
        )
    }
    if got["score"] is not None:
        summary["halo_development_score"] = got["score"].get("halo_development_score")
        summary["boards"] = got["score"]["boards"]
    click.echo(dumps_json(summary), nl=False)
    sys.exit(0 if rec["ok"] else 1)


COMMANDS = [halo_run]

"""A halo-track submission run in the sandbox on a release's public part only (``icl halo-run``).

The sandbox (:mod:`icl.sandbox`) runs any track's program and knows none; this module stages the halo
release's ``public/`` as the program's input and, when asked, scores what it wrote with the halo scorer.
"""

from __future__ import annotations

from pathlib import Path


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

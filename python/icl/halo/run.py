"""A halo-track submission run in the sandbox on a release's public part only (``icl halo-run``).

The sandbox (:mod:`icl.sandbox`) runs any track's program and knows none; this module stages the halo
release's ``public/`` as the program's input, checks what the program wrote against one split, and, when
asked, scores it. A result says what went wrong in words: a crash gives the exit status, the last lines
of stderr and the log's path; a missing, misshapen or invalid array the reason for each condition; a
CPU request above the host's cores is capped with a note.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

STDERR_TAIL_LINES = 20
STDERR_TAIL_BYTES = 16 * 1024


def stderr_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> list[str]:
    """Return the last ``lines`` lines of a log (at most its last 16 KiB, decoded leniently)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - STDERR_TAIL_BYTES))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-lines:]


def run_failure(record: dict[str, Any]) -> str:
    """Say in one sentence why a sandboxed run is not ok (empty when it is)."""
    if record["ok"]:
        return ""
    parts = []
    status, sig = record.get("exit_status"), record.get("signal")
    if status is None:
        parts.append("the program was not run")
    elif sig:
        parts.append(f"the program was killed by {sig} (exit status {status})")
    elif status != 0:
        parts.append(f"the program exited with status {status}")
    parts += record.get("messages") or [f"rule broken: {v}" for v in record.get("violations", [])]
    return "; ".join(parts)


def _cap_cpus(cpus: int) -> tuple[int, list[str]]:
    host = len(os.sched_getaffinity(0))
    if cpus <= host:
        return cpus, []
    return host, [f"{cpus} cores requested, this host offers {host}: the run gets {host}"]


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
    """Run ``SUBMISSION/run /input /output`` on ``RELEASE/public``; check and optionally score the output.

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
    cpus : int
        Cores requested; capped at the cores this host offers, with a note.
    memory, timeout_s, logs_dir, mechanism
        As for :func:`icl.sandbox.harness.run_submission`.
    split : {"dev", "test"}, optional
        The split whose conditions are checked (and scored with ``score_file``); default ``dev``.
    score_file : path-like, optional
        Write the score document there, with the run's tracks and its score on each board.

    Returns
    -------
    dict
        ``ok`` (the run was ok and every condition of the split valid), ``reason`` (why not, in words),
        ``notes``, ``stderr_tail`` and ``stderr_log`` (for a failed run), ``invalid_conditions``
        (condition id -> reason), ``record`` (the sandbox's run record) and ``score`` (the score
        document or None).

    """
    from icl.errors import InputError
    from icl.halo.evaluate import evaluate
    from icl.halo.release import split_paths
    from icl.sandbox.boards import board_entry
    from icl.sandbox.harness import run_submission

    split = split or "dev"
    public = Path(release) / "public"
    if not public.is_dir() or public.is_symlink():
        raise InputError("no public/ folder in the release", str(release), "release")
    cases_file = Path(release) / split_paths(split)[0]
    if not cases_file.is_file():
        raise InputError(f"the release has no {split} split to check the run on", str(cases_file), "split")
    cpus, notes = _cap_cpus(cpus)
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
    ).to_dict()
    stderr_log = Path(record["logs"]["dir"]) / record["logs"].get("stderr", "stderr.log")
    failure = run_failure(record)
    doc = evaluate(release, output, split=split)
    invalid = {
        cid: cond["reason"]
        for case in doc["cases"].values()
        for cid, cond in case["conditions"].items()
        if not cond["valid"]
    }
    total_conditions = sum(len(c["conditions"]) for c in doc["cases"].values())
    reasons = []
    if failure:
        reasons.append(f"{failure}; last lines of stderr below, the whole log in {stderr_log}")
    if invalid:
        reasons.append(
            f"{len(invalid)} of {total_conditions} conditions of the {split} split are missing or invalid "
            "(see invalid_conditions)"
        )
    result = {
        "ok": record["ok"] and not invalid,
        "reason": "; ".join(reasons),
        "notes": notes,
        "stderr_tail": stderr_tail(stderr_log) if failure else [],
        "stderr_log": str(stderr_log),
        "invalid_conditions": invalid,
        "record": record,
        "score": None,
    }
    if score_file is not None:
        from icl.io import write_json

        total = doc.get("halo_development_score") or 0.0
        # A run that broke a rule scores 0, whatever files it left.
        score = float(total) if record["ok"] else 0.0
        entry = board_entry(Path(submission).name, score, [record])
        for cell in entry["boards"].values():
            if not cell["reason"]:
                cell["reason"] = result["reason"]
        doc["run"] = {
            "ok": result["ok"],
            "reason": result["reason"],
            "exit_status": record["exit_status"],
            "violations": record["violations"],
            "stderr_tail": result["stderr_tail"],
            "stderr_log": result["stderr_log"],
            "invalid_conditions": invalid,
            "notes": notes,
            "track": record["track"],
            "effective_track": record["effective_track"],
            "track_evidence": record["track_evidence"].get("summary", ""),
            "record": record["logs"].get("dir"),
        }
        doc["boards"] = entry["boards"]
        write_json(score_file, doc)
        result["score"] = doc
    return result

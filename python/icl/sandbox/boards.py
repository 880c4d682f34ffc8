"""Scores kept per track: a submission's runs decide where it is listed and what it scores there.

A submission declared from-scratch whose runs found reference code (``effective_track`` of any run record is
``reference-assisted``) scores 0 on the from-scratch board, with the reason, and is listed with its score on
the reference-assisted board. A run that broke a rule scores 0 on every board (the scorer already gives its
tasks 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from icl.sandbox.layout import TRACKS


def declared_track(records: Iterable[Mapping[str, Any]]) -> str:
    """Return the track the runs were declared for (from-scratch unless every record says otherwise)."""
    tracks = {r.get("track", "from-scratch") for r in records}
    return "reference-assisted" if tracks == {"reference-assisted"} else "from-scratch"


def effective_track(records: Iterable[Mapping[str, Any]]) -> str:
    """Reference-assisted when any run was declared or found to be; else from-scratch."""
    for r in records:
        if "reference-assisted" in (r.get("track"), r.get("effective_track")):
            return "reference-assisted"
    return "from-scratch"


def board_entry(name: str, score: float, records: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One submission's place on each board.

    Parameters
    ----------
    name : str
        Submission name.
    score : float
        Its score from the scorer (already 0 for tasks whose run was not ok).
    records : list of dict
        Its run records (:meth:`icl.sandbox.harness.RunRecord.to_dict`).

    Returns
    -------
    dict
        ``name``, ``declared_track``, ``track`` (effective) and ``boards``: track -> ``{"score", "reason"}``
        for each board the submission appears on.

    """
    declared, track = declared_track(records), effective_track(records)
    boards: dict[str, dict[str, Any]] = {}
    if declared == "from-scratch":
        if track == "from-scratch":
            boards["from-scratch"] = {"score": score, "reason": ""}
        else:
            evidence = next(
                (
                    r.get("track_evidence") or {}
                    for r in records
                    if r.get("effective_track") == "reference-assisted"
                ),
                {},
            )
            boards["from-scratch"] = {
                "score": 0.0,
                "reason": "counted as reference-assisted: "
                + str(evidence.get("summary", "reference code found")),
            }
    if track == "reference-assisted":
        boards["reference-assisted"] = {"score": score, "reason": ""}
    return {"name": name, "declared_track": declared, "track": track, "boards": boards}


def leaderboards(entries: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows of each board (``{"name", "score", "reason"}``), highest score first."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in TRACKS}
    for e in entries:
        for track, cell in e["boards"].items():
            out[track].append({"name": e["name"], **cell})
    for rows in out.values():
        rows.sort(key=lambda r: (-r["score"], r["name"]))
    return out

"""Merge two independent reviews and a third reviewer's arbitration into scores per submission.

A reviewer file (exported by the review page, :mod:`icl.review.page`)::

    {"format": "icl-review/1", "reviewer": "R-anna", "reviews": [{"packet", "score", "evidence"}, ...]}

``score`` is 0, 0.5 or 1 and ``evidence`` a non-empty statement of what in the artifacts supports it.
The arbitration file has the same form; its ``evidence`` is the arbiter's reason.

Rules: a packet graded alike by both reviewers takes that grade; a packet graded differently takes the
arbiter's grade when the arbiter graded it, and otherwise stays pending (left out of the score, never
averaged). A packet graded by only one reviewer stays pending. Agreement statistics are computed over the
packets both reviewers graded, before arbitration.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from icl.errors import InputError
from icl.io import load_json, write_json
from icl.review import agreement
from icl.review.packets import load_packets

REVIEW_FORMAT = "icl-review/1"
REVIEWS_FORMAT = "icl-reviews/1"
MAX_EVIDENCE = 20_000


def load_review_file(path: str | os.PathLike, packet_ids: set[str]) -> tuple[str, dict[str, dict]]:
    """Reviewer id and ``packet -> {score, evidence}`` of one reviewer file, every row checked."""
    file = str(path)
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("format") != REVIEW_FORMAT:
        raise InputError(f"expected format {REVIEW_FORMAT}", file, "format")
    rid = doc.get("reviewer")
    if not isinstance(rid, str) or not 1 <= len(rid.strip()) <= 64:
        raise InputError("reviewer id must be a non-empty string of at most 64 characters", file, "reviewer")
    rows = doc.get("reviews")
    if not isinstance(rows, list):
        raise InputError("expected a list", file, "reviews")
    out: dict[str, dict] = {}
    for i, r in enumerate(rows):
        where = f"reviews[{i}]"
        if not isinstance(r, dict):
            raise InputError("expected an object", file, where)
        pid = r.get("packet")
        if pid not in packet_ids:
            raise InputError(f"unknown packet {pid!r}", file, f"{where}.packet")
        if pid in out:
            raise InputError(f"packet {pid} graded twice", file, f"{where}.packet")
        score = r.get("score")
        if isinstance(score, bool) or score not in (0, 0.5, 1):
            raise InputError("score must be 0, 0.5 or 1", file, f"{where}.score")
        ev = r.get("evidence")
        if not isinstance(ev, str) or not ev.strip() or len(ev) > MAX_EVIDENCE:
            raise InputError(
                f"evidence must be a non-empty text of at most {MAX_EVIDENCE} characters",
                file,
                f"{where}.evidence",
            )
        out[pid] = {"score": float(score), "evidence": ev.strip()}
    return rid.strip(), out


def merge(
    packets_dir: str | os.PathLike,
    first: str | os.PathLike,
    second: str | os.PathLike,
    output: str | os.PathLike,
    arbitration: str | os.PathLike | None = None,
    bootstrap_n: int = 2000,
) -> dict:
    """Merge two reviewer files (and an optional arbitration file) of one packet folder.

    Writes ``output/agreement.json`` (statistics, disagreements and how each was settled),
    ``output/reviews/<submission>.json`` (input of ``icl pro-score --reviews``) and, while disagreements
    remain unsettled, ``output/arbitration_packets.json`` for the third reviewer: the packets with both
    grades and evidence, the reviewers' ids withheld.

    Returns
    -------
    dict
        The content of ``agreement.json``.

    """
    packets, identity = load_packets(packets_dir)
    ids = set(identity)
    ra, a = load_review_file(first, ids)
    rb, b = load_review_file(second, ids)
    if ra == rb:
        raise InputError(
            f"both files are by reviewer {ra!r}: two independent reviewers are needed",
            str(second),
            "reviewer",
        )
    rc, c = (None, {})
    if arbitration is not None:
        rc, c = load_review_file(arbitration, ids)
        if rc in (ra, rb):
            raise InputError(f"the arbiter {rc!r} is one of the two reviewers", str(arbitration), "reviewer")
    both = sorted(set(a) & set(b))
    stats = (
        agreement.summary([a[p]["score"] for p in both], [b[p]["score"] for p in both], bootstrap_n)
        if both
        else None
    )
    per_sub: dict[str, list[dict]] = defaultdict(list)
    disagreements, unsettled, ignored = [], [], []
    for pid in both:
        who = identity[pid]
        row = {
            "instance": who["instance"],
            "check": who["check"],
            "packet": pid,
            "reviewers": [ra, rb],
            "scores": {ra: a[pid]["score"], rb: b[pid]["score"]},
            "evidence": {ra: a[pid]["evidence"], rb: b[pid]["evidence"]},
        }
        if a[pid]["score"] == b[pid]["score"]:
            row |= {"score": a[pid]["score"], "resolution": "agreement"}
            if pid in c:
                ignored.append(pid)
        elif pid in c:
            row |= {
                "score": c[pid]["score"],
                "resolution": "arbitration",
                "arbiter": rc,
                "reason": c[pid]["evidence"],
            }
            disagreements.append(
                {
                    "packet": pid,
                    **who,
                    "scores": row["scores"],
                    "arbiter": rc,
                    "decision": c[pid]["score"],
                    "reason": c[pid]["evidence"],
                }
            )
        else:
            disagreements.append(
                {
                    "packet": pid,
                    **who,
                    "scores": row["scores"],
                    "arbiter": None,
                    "decision": None,
                    "reason": None,
                }
            )
            unsettled.append(pid)
            continue
        per_sub[who["submission"]].append(row)
    single = sorted(set(a) ^ set(b))
    output = Path(output)
    for name in sorted({v["submission"] for v in identity.values()}):
        rows = sorted(per_sub.get(name, []), key=lambda r: (r["instance"], r["check"]))
        write_json(
            output / "reviews" / f"{name}.json",
            {
                "format": REVIEWS_FORMAT,
                "submission": name,
                "reviewers": [ra, rb],
                "arbiter": rc,
                "agreement": stats,
                "reviews": rows,
            },
        )
    report = {
        "format": "icl-review-agreement/1",
        "reviewers": [ra, rb],
        "arbiter": rc,
        "packets": len(ids),
        "graded_by_both": len(both),
        "graded_by_one": single,
        "not_graded": len(ids - set(a) - set(b)),
        "agreement": stats,
        "disagreements": disagreements,
        "unsettled": unsettled,
        "arbitration_on_agreed_packets_ignored": ignored,
    }
    write_json(output / "agreement.json", report)
    arb = output / "arbitration_packets.json"
    if unsettled:
        by_id = {p["packet"]: p for p in packets}
        write_json(
            arb,
            {
                "format": "icl-review-packets/1",
                "packets": [
                    by_id[p]
                    | {
                        "prior_reviews": [
                            {"score": a[p]["score"], "evidence": a[p]["evidence"]},
                            {"score": b[p]["score"], "evidence": b[p]["evidence"]},
                        ]
                    }
                    for p in unsettled
                ],
            },
        )
    elif arb.exists():
        arb.unlink()
    return report

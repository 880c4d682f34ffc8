"""Score a halo-forensics submission with the contest rule (``icl.contest``).

Each item is a separate detection question asked of the same images: the item's forgeries are the
positives and the genuine images the negatives. Images forged in another way are left out of that
item's curve, so that flagging, say, a splice as non-physical is neither rewarded nor counted as a
false alarm on the genuine population.

A submission is hostile input. It is read with the bounded JSON loader; an item for which any image
lacks a finite score is not computable and scores 0 with the reason (the zero rule then makes S = 0),
while the other items are still scored. Unknown image ids are reported and ignored.

Scores on a release whose labels can be rebuilt from public information (a ``--seed`` development
release) are computed but marked ``rankable: false``; :func:`rank` gives them no place.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from icl.contest.pr import ITEM_KIND, PARTIAL_INTERVAL, ItemArea, item_area
from icl.contest.safety import ITEMS, safety_score
from icl.contest.scoring import RULE, SYMBOLS, weakest
from icl.crosscheck import not_ranked_reason
from icl.errors import InputError
from icl.keys import release_rankable

MAX_SUBMISSION_BYTES = 16 * 1024 * 1024


def load_release(release: str | Path) -> tuple[list[str], dict[str, dict]]:
    """Image ids (public index) and labels (private) of a release; a bad release is an InputError."""
    from icl.io import load_json

    release = Path(release)
    index_file = release / "public" / "forensics_cases.json"
    labels_file = release / "private" / "labels.json"
    index = load_json(index_file)
    if not isinstance(index, dict) or not isinstance(index.get("images"), list):
        raise InputError("expected an object with an 'images' list", str(index_file), "images")
    ids = index["images"]
    labels = load_json(labels_file)
    if not isinstance(labels, dict):
        raise InputError("expected an object of labels by image id", str(labels_file))
    for i in ids:
        lab = labels.get(i) if isinstance(i, str) else None
        if (
            not isinstance(lab, dict)
            or any(lab.get(k) not in (0, 1) for k in ITEMS)
            or not isinstance(lab.get("kind"), str)
        ):
            raise InputError("missing or malformed label", str(labels_file), str(i))
    return ids, labels


def read_scores(
    submission: Any, ids: list[str], file: str
) -> tuple[dict[str, dict[str, float | None]], list[str]]:
    """Per image and item, the submitted score or ``None`` with problems listed (never raises)."""
    problems: list[str] = []
    table: dict[str, dict[str, float | None]] = {i: dict.fromkeys(ITEMS) for i in ids}
    if not isinstance(submission, dict) or not isinstance(submission.get("scores"), dict):
        problems.append(f"{file}: scores: expected {{'scores': {{image id: {{NH, DUP, SPL}}}}}}")
        return table, problems
    scores = submission["scores"]
    extra = sorted(k for k in scores if k not in table)
    if extra:
        problems.append(f"{file}: scores: {len(extra)} unknown image id(s) ignored, e.g. {extra[:3]}")
    for i in ids:
        entry = scores.get(i)
        if not isinstance(entry, dict):
            continue
        for item in ITEMS:
            v = entry.get(item)
            if not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v):
                table[i][item] = float(v)
    return table, problems


def evaluate(release: str | Path, submission_path: str | Path) -> dict[str, Any]:
    """Score one submission against a release.

    Returns
    -------
    dict
        Item areas (with case counts and rule), weakest item, S and zero rule, and every problem met.

    """
    from icl.io import answer_identities, check_answer_file, check_kind, load_json

    from icl.freeze import check_release, disputed

    # A frozen release whose public index, labels or scoring code changed is refused (FrozenChanged).
    freeze = check_release(release)
    ids, labels = load_release(release)
    file = str(submission_path)
    try:
        # a hard link to the private labels (or any hard link) is not the submission's own file
        check_answer_file(submission_path, answer_identities(Path(release) / "private"))
        submission = load_json(submission_path, max_bytes=MAX_SUBMISSION_BYTES)
    except InputError as exc:
        table, problems = {i: dict.fromkeys(ITEMS) for i in ids}, [str(exc)]
    else:
        check_kind(submission, file, "a forensics submission", ("scores",))  # another kind of file: exit 2
        table, problems = read_scores(submission, ids, file)
    areas: dict[str, ItemArea] = {}
    # A genuine image whose render failed its two-solver cross-check: out of every item, reported apart.
    not_ranked = {i: not_ranked_reason(labels[i]) for i in ids if not_ranked_reason(labels[i])}
    not_ranked.update({i: why for i, why in disputed(freeze).items() if i in labels})
    ranked = [i for i in ids if i not in not_ranked]
    for item in ITEMS:
        members = [i for i in ranked if labels[i][item] == 1 or labels[i]["kind"] == "genuine"]
        y = [labels[i][item] for i in members]
        missing = [i for i in members if table[i][item] is None]
        if missing:
            reason = f"{len(missing)} image(s) without a finite score, e.g. {missing[:3]}"
            kind = ITEM_KIND[item]
            interval = PARTIAL_INTERVAL if kind == "partial" else (0.0, 1.0)
            areas[item] = ItemArea(item, 0.0, kind, interval, sum(y), len(y) - sum(y), reason)
            problems.append(f"{file}: scores.<id>.{item}: {reason}; item scores 0")
            continue
        areas[item] = item_area(item, [table[i][item] for i in members], y)
    s, zero_rule = safety_score({k: (a.value if a.computable else None) for k, a in areas.items()})
    w = weakest(areas)
    rankable, rankable_reason = release_rankable(release)
    return {
        "items": {k: a.to_dict() for k, a in areas.items()},
        "S": s,
        "rankable": rankable,
        "rankable_reason": rankable_reason,
        "zero_rule": zero_rule,
        "weakest": {"item": w.item, "value": w.value, "positives": w.positives, "negatives": w.negatives},
        "C": None,
        "T": None,
        "note": "forensics track: safety items only, no clinical score, no total",
        "rule": RULE,
        "symbols": {k: SYMBOLS[k] for k in ("NH", "DUP", "SPL", "S")},
        "problems": problems,
        "not_ranked": not_ranked,
        "freeze": freeze,
    }


def rank(records: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Order evaluated submissions (``(name, evaluate() record)`` pairs) by S, highest first.

    Only records on a release with a secret key get a place; the others follow, listed apart with
    ``place`` None and the reason (their labels can be rebuilt, so their S proves nothing).
    """
    rows = [{"name": name, "S": r.get("S"), "rankable": r.get("rankable") is True,
             "reason": r.get("rankable_reason", "no rankable field: not an evaluate() record")} for name, r in records]
    rows.sort(key=lambda r: (not r["rankable"], -(r["S"] or 0.0), r["name"]))
    for place, r in enumerate(rows, 1):
        r["place"] = place if r["rankable"] else None
    return rows

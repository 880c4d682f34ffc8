"""Precision-recall curves and the areas the contest rule scores, with one interpolation everywhere.

Interpolation (the only one this package uses)
----------------------------------------------
Scores are sorted from high to low. An *operating point* is one distinct score threshold: every item
whose score is at least the threshold is called forged. Items with equal scores therefore enter
together (ties are never split by input order, so the curve does not depend on how a file is
sorted). At operating point ``k`` recall is ``r_k = TP_k / P`` and precision ``p_k = TP_k / (TP_k + FP_k)``.

The curve is the right-continuous-from-the-left *step* function

    p(r) = p_k   for r in (r_{k-1}, r_k],   r_0 = 0,

that is, the precision at recall ``r`` is the precision of the first operating point (highest
threshold) whose recall reaches ``r``. No linear interpolation between points: a linear segment
between two operating points is not achievable by any threshold and, in precision-recall space,
overstates the area (Davis & Goadrich 2006). The full area under this step curve over ``[0, 1]`` equals
the usual average precision ``sum_k (r_k - r_{k-1}) p_k``.

A partial area over the closed recall interval ``[a, b]`` integrates the same step function from ``a``
to ``b``. Whether the ends are closed or open does not change an integral; the interval is stated as
closed so that the precision *at* ``a`` and ``b`` (used by :func:`precision_at_recall`) are defined
by the same rule. The partial area is divided by the width ``b - a`` so that it lies in ``[0, 1]``
like the full area: the harmonic mean that forms the safety score needs inputs on one scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

INTERPOLATION = (
    "step: precision at recall r is the precision of the first operating point "
    "(highest score threshold, tied scores entering together) whose recall is >= r"
)
PARTIAL_INTERVAL = (0.05, 0.50)


class NotComputable(ValueError):
    """An area or metric that the data do not define (no positives, bad scores)."""


@dataclass(frozen=True)
class Curve:
    """Operating points of a scored, labelled set.

    Attributes
    ----------
    thresholds : ndarray
        Distinct scores, high to low.
    tp, fp : ndarray of int
        Cumulative true and false positives at each threshold.
    positives, negatives : int
        Case counts (label 1 and label 0).

    """

    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    positives: int
    negatives: int

    @property
    def recall(self) -> np.ndarray:
        """Recall at each operating point."""
        return self.tp / self.positives

    @property
    def precision(self) -> np.ndarray:
        """Precision at each operating point."""
        return self.tp / (self.tp + self.fp)


def pr_curve(scores: Any, labels: Any) -> Curve:
    """Build the operating points of ``scores`` (higher = more likely forged) against 0/1 ``labels``.

    Raises
    ------
    NotComputable
        If the arrays differ in length, are empty, hold non-finite scores or labels other than 0/1,
        or there is no positive case (recall undefined).

    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1 or s.size != y.size:
        raise NotComputable(f"scores and labels must be 1-D of equal length, got {s.shape} and {y.shape}")
    if s.size == 0:
        raise NotComputable("no cases")
    if not np.all(np.isfinite(s)):
        raise NotComputable("non-finite score")
    if not np.all((y == 0) | (y == 1)):
        raise NotComputable("labels must be 0 or 1")
    y = y.astype(np.int64)
    positives = int(y.sum())
    negatives = int(y.size - positives)
    if positives == 0:
        raise NotComputable("no positive case: recall is undefined")
    order = np.argsort(-s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    # Last index of each run of equal scores: ties enter the curve together.
    last = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
    tp = np.cumsum(y_sorted)[last]
    fp = (last + 1) - tp
    return Curve(s_sorted[last], tp, fp, positives, negatives)


def step_area(curve: Curve, lo: float = 0.0, hi: float = 1.0) -> float:
    """Integral of the step precision-recall curve over recall ``[lo, hi]`` (not normalised)."""
    r = np.r_[0.0, curve.recall]
    left = np.clip(r[:-1], lo, hi)
    right = np.clip(r[1:], lo, hi)
    return float(np.sum((right - left) * curve.precision))


def precision_at_recall(curve: Curve, recall: float) -> float:
    """Precision of the first operating point whose recall is ``>= recall`` (the step rule)."""
    k = int(np.searchsorted(curve.recall, recall - 1e-12, side="left"))
    return float(curve.precision[min(k, len(curve.tp) - 1)])


def recall_at_fpr(curve: Curve, fpr: float) -> float:
    """Largest recall over operating points whose false-positive rate is ``<= fpr``."""
    if curve.negatives == 0:
        raise NotComputable("no negative case: false-positive rate is undefined")
    ok = curve.fp / curve.negatives <= fpr + 1e-12
    return float(curve.recall[ok].max()) if ok.any() else 0.0


def precision_at_top_k(curve: Curve, k: int) -> float:
    """Return the expected precision of the ``k`` highest-scored cases, ties at the cut shared pro rata."""
    n = curve.positives + curve.negatives
    if not 1 <= k <= n:
        raise NotComputable(f"top-k needs 1 <= k <= {n}, got {k}")
    counts = curve.tp + curve.fp
    j = int(np.searchsorted(counts, k, side="left"))
    tp_above = int(curve.tp[j - 1]) if j else 0
    n_above = int(counts[j - 1]) if j else 0
    tie_tp = int(curve.tp[j]) - tp_above
    tie_n = int(counts[j]) - n_above
    return (tp_above + (k - n_above) * tie_tp / tie_n) / k


@dataclass(frozen=True)
class ItemArea:
    """The area one contest item scores, with the case counts and rule it was computed by.

    Attributes
    ----------
    item : str
        ``NH``, ``DUP`` or ``SPL``.
    value : float
        Area in ``[0, 1]``; 0 when not computable (then ``reason`` says why).
    kind : str
        ``partial`` (recall interval, divided by its width) or ``full``.
    interval : tuple of float
        Recall interval integrated.
    positives, negatives : int or None
        Case counts (``None`` when the data could not be read).
    reason : str or None
        Why the item is 0 by rule, if it is.
    curve : Curve or None
        Operating points (kept for threshold metrics; not written to files).

    """

    item: str
    value: float
    kind: str
    interval: tuple[float, float]
    positives: int | None
    negatives: int | None
    reason: str | None = None
    curve: Curve | None = field(default=None, repr=False, compare=False)

    @property
    def computable(self) -> bool:
        """True when the area came from data rather than the zero rule."""
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (no arrays)."""
        lo, hi = self.interval
        return {
            "item": self.item,
            "value": self.value,
            "kind": self.kind,
            "interval": [lo, hi],
            "normalised_by": hi - lo,
            "interpolation": INTERPOLATION,
            "positives": self.positives,
            "negatives": self.negatives,
            "reason": self.reason,
        }


# Which area each item scores: partial for non-human and splice, full for duplicate.
ITEM_KIND = {"NH": "partial", "DUP": "full", "SPL": "partial"}


def item_area(item: str, scores: Any, labels: Any) -> ItemArea:
    """Score one item by its rule; a set that cannot be scored gives 0 with the reason.

    Parameters
    ----------
    item : {'NH', 'DUP', 'SPL'}
        Non-human, duplicate or splice detection.
    scores, labels : array-like
        Per-case score (higher = more likely forged) and 0/1 label (1 = forged of this kind).

    Returns
    -------
    ItemArea
        Area 0 with the reason when the set cannot be scored or every score is the same (constant
        output is a complete failure under the rule).

    """
    kind = ITEM_KIND[item]
    interval = PARTIAL_INTERVAL if kind == "partial" else (0.0, 1.0)
    try:
        curve = pr_curve(scores, labels)
    except NotComputable as exc:
        y = np.asarray(labels)
        counts = (None, None)
        if y.ndim == 1 and np.all((y == 0) | (y == 1)):
            counts = (int(np.sum(y == 1)), int(np.sum(y == 0)))
        return ItemArea(item, 0.0, kind, interval, *counts, reason=str(exc))
    n = curve.positives + curve.negatives
    if n > 1 and len(curve.thresholds) == 1:
        # The rule counts constant output as a complete failure; its curve would otherwise score the
        # prevalence (a single operating point at recall 1).
        return ItemArea(
            item,
            0.0,
            kind,
            interval,
            curve.positives,
            curve.negatives,
            f"constant output: all {n} scores are equal (complete failure)",
        )
    lo, hi = interval
    value = step_area(curve, lo, hi) / (hi - lo)
    # Guard rounding: the normalised area is a mean of precisions, so it lies in [0, 1].
    value = min(max(value, 0.0), 1.0)
    if not math.isfinite(value):
        return ItemArea(item, 0.0, kind, interval, curve.positives, curve.negatives, "area not finite")
    return ItemArea(item, value, kind, interval, curve.positives, curve.negatives, None, curve)

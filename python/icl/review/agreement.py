"""Agreement of two reviewers on the ordinal grades 0 / 0.5 / 1.

Weighted Cohen's kappa with linear weights ``w_ij = 1 - |i - j| / (k - 1)``: a half-mark disagreement
counts half, a 0-against-1 disagreement counts fully. The interval is a seeded percentile bootstrap over
packets (pairs of grades are resampled together).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

GRADES = (0.0, 0.5, 1.0)
BOOTSTRAP_SEED = 20261027


def _table(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """Joint proportions ``p[i, j]`` of reviewer A grading ``GRADES[i]`` and reviewer B ``GRADES[j]``."""
    idx = {g: k for k, g in enumerate(GRADES)}
    t = np.zeros((len(GRADES), len(GRADES)))
    for x, y in zip(a, b, strict=True):
        t[idx[float(x)], idx[float(y)]] += 1
    return t / max(len(a), 1)


def _weights() -> np.ndarray:
    k = len(GRADES)
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    return 1.0 - np.abs(i - j) / (k - 1)


def percent_agreement(a: Sequence[float], b: Sequence[float]) -> float:
    """Fraction of packets given the same grade by both reviewers."""
    if len(a) != len(b) or not a:
        raise ValueError("two equally long, non-empty grade lists are needed")
    return float(np.mean([float(x) == float(y) for x, y in zip(a, b, strict=True)]))


def weighted_kappa(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Linearly weighted Cohen's kappa; None when chance agreement is 1 (both always give one grade)."""
    if len(a) != len(b) or not a:
        raise ValueError("two equally long, non-empty grade lists are needed")
    p, w = _table(a, b), _weights()
    observed = float((w * p).sum())
    expected = float((w * np.outer(p.sum(1), p.sum(0))).sum())
    if expected >= 1.0 - 1e-12:
        return None
    return (observed - expected) / (1.0 - expected)


def kappa_interval(
    a: Sequence[float], b: Sequence[float], n: int = 2000, seed: int = BOOTSTRAP_SEED
) -> list[float] | None:
    """95 % percentile bootstrap interval of :func:`weighted_kappa` over packets.

    Replicates whose kappa is undefined are dropped.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        k = rng.integers(0, a.size, a.size)
        v = weighted_kappa(a[k].tolist(), b[k].tolist())
        if v is not None:
            vals.append(v)
    if not vals:
        return None
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return [float(lo), float(hi)]


def summary(a: Sequence[float], b: Sequence[float], n: int = 2000, seed: int = BOOTSTRAP_SEED) -> dict:
    """Packets, percent agreement, weighted kappa, its bootstrap interval and the confusion counts."""
    return {
        "packets": len(a),
        "percent_agreement": percent_agreement(a, b),
        "weighted_kappa": weighted_kappa(a, b),
        "kappa_weights": "linear",
        "kappa_bootstrap_95": kappa_interval(a, b, n, seed),
        "bootstrap": {"replicates": n, "seed": seed, "unit": "packet"},
        "confusion": {"grades": list(GRADES), "counts": np.rint(_table(a, b) * len(a)).astype(int).tolist()},
    }

"""Track-independent calibration statistics.

A :class:`Table` holds, for every baseline, the score of every unit (an instance, a case, a patient, an
image) and of every check of that unit (0 to 1), each unit's stratum (template, case or item) and
cluster (the unit of resampling), and a function giving a baseline's track total from a list of units
(with repeats, for the bootstrap). From it:

- pass rate of each check per baseline: the fraction of its graded units where it reaches the pass mark;
  flags for checks every baseline passes everywhere (no floor) or no baseline ever passes (no ceiling);
- ceiling and floor per stratum and per group: best and worst baseline;
- discrimination index per check: mean check value of the upper half of the baselines (by total) minus
  that of the lower half (classical upper-lower index; 0 = the check does not separate good from bad);
- rank stability: clusters are resampled with replacement inside each stratum, the same draw for every
  baseline; each replicate ranks the baselines, and the report gives the distribution of Kendall's tau
  against the full-data order and the probability of each pairwise order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

BOOTSTRAP_SEED = 20261027


@dataclass
class Table:
    """Scores of a track's baselines, unit by unit and check by check."""

    track: str
    baselines: list[str]
    unit_stratum: dict[str, str]
    unit_cluster: dict[str, str]
    checks: dict[str, dict[str, dict[str, float | None]]]  # baseline -> unit -> check -> value
    total: Callable[[str, list[str]], float]  # (baseline, units with repeats) -> track score
    pass_mark: float = 1.0
    stratum_group: dict[str, str] = field(default_factory=dict)
    unit_score: dict[str, dict[str, float]] = field(default_factory=dict)  # baseline -> unit -> score
    roles: dict[str, str] = field(default_factory=dict)  # baseline -> "ceiling", "floor", "control", ...
    notes: dict[str, str] = field(default_factory=dict)  # check -> why it stays if flagged
    bootstrap_strata: dict[str, str] | None = None  # unit -> resampling stratum (default: unit_stratum)

    @property
    def units(self) -> list[str]:
        """Every unit, sorted."""
        return sorted(self.unit_stratum)


def totals(t: Table) -> dict[str, float]:
    """Each baseline's track score on all units."""
    return {b: float(t.total(b, t.units)) for b in t.baselines}


def check_ids(t: Table) -> list[str]:
    """Every check that some baseline was graded on, in sorted order."""
    return sorted({c for b in t.baselines for u in t.checks[b].values() for c in u})


def pass_rates(t: Table) -> dict[str, dict]:
    """Per check: pass rate and mean value per baseline, the flags, and the discrimination index."""
    tot = totals(t)
    order = sorted(t.baselines, key=lambda b: -tot[b])
    half = max(1, len(order) // 2)
    upper, lower = order[:half], order[-half:]
    out = {}
    for c in check_ids(t):
        rate, mean = {}, {}
        for b in t.baselines:
            vals = [u[c] for u in t.checks[b].values() if c in u and u[c] is not None]
            rate[b] = float(np.mean([v >= t.pass_mark - 1e-12 for v in vals])) if vals else None
            mean[b] = float(np.mean(vals)) if vals else None
        got = [r for r in rate.values() if r is not None]
        up = [mean[b] for b in upper if mean[b] is not None]
        lo = [mean[b] for b in lower if mean[b] is not None]
        out[c] = {
            "pass_rate": rate,
            "mean": mean,
            "passed_by_every_baseline": bool(got) and min(got) >= 1.0 - 1e-12,
            "passed_by_none": bool(got) and max(got) <= 1e-12,
            "discrimination": float(np.mean(up) - np.mean(lo)) if up and lo else None,
            "note": t.notes.get(c),
        }
    return out


def ceiling_floor(t: Table) -> dict[str, dict]:
    """Best and worst baseline of every stratum and of every group (mean of its strata)."""
    strata: dict[str, list[str]] = defaultdict(list)
    for u, s in t.unit_stratum.items():
        strata[s].append(u)
    per = {
        b: {s: float(np.mean([t.unit_score[b][u] for u in us])) for s, us in strata.items()}
        for b in t.baselines
    }

    def best_worst(vals: dict[str, float]) -> dict:
        hi = max(vals, key=lambda b: (vals[b], b))
        lo = min(vals, key=lambda b: (vals[b], b))
        return {"ceiling": vals[hi], "ceiling_by": hi, "floor": vals[lo], "floor_by": lo, "scores": vals}

    out = {"strata": {s: best_worst({b: per[b][s] for b in t.baselines}) for s in sorted(strata)}}
    if t.stratum_group:
        groups = sorted(set(t.stratum_group.values()))
        out["groups"] = {
            g: best_worst(
                {
                    b: float(np.mean([per[b][s] for s in strata if t.stratum_group.get(s) == g]))
                    for b in t.baselines
                }
            )
            for g in groups
            if any(t.stratum_group.get(s) == g for s in strata)
        }
    return out


def _kendall_tau(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b of two score vectors (ties in either vector handled as in tau-b)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    i, j = np.triu_indices(x.size, 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = float(i.size)
    den = np.sqrt((n0 - np.sum(dx == 0)) * (n0 - np.sum(dy == 0)))
    return float(np.sum(dx * dy) / den) if den > 0 else 0.0


def rank_stability(
    t: Table, n: int = 1000, seed: int = BOOTSTRAP_SEED, progress: Callable[[int], None] | None = None
) -> dict:
    """Clustered, stratified bootstrap of the baselines' order (one draw shared by all baselines)."""
    rng = np.random.default_rng(seed)
    strata: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    draw = t.bootstrap_strata or t.unit_stratum
    for u in t.units:
        strata[draw[u]][t.unit_cluster[u]].append(u)
    point = totals(t)
    names = list(t.baselines)
    base = [point[b] for b in names]
    taus, wins = [], np.zeros((len(names), len(names)))
    reps = []
    for k in range(n):
        units: list[str] = []
        for s in sorted(strata):
            keys = sorted(strata[s])
            for ci in rng.integers(0, len(keys), len(keys)):
                units.extend(strata[s][keys[ci]])
        vals = [float(t.total(b, units)) for b in names]
        reps.append(vals)
        taus.append(_kendall_tau(base, vals))
        v = np.array(vals)
        wins += (v[:, None] > v[None, :]) + 0.5 * (v[:, None] == v[None, :])
        if progress:
            progress(k)
    taus_a = np.array(taus)
    reps_a = np.array(reps)
    return {
        "replicates": n,
        "seed": seed,
        "unit": "cluster within stratum",
        "kendall_tau": {
            "mean": float(taus_a.mean()),
            "min": float(taus_a.min()),
            "p05": float(np.percentile(taus_a, 5)),
            "median": float(np.median(taus_a)),
            "share_equal_to_1": float(np.mean(taus_a >= 1 - 1e-12)),
            "histogram": np.histogram(taus_a, bins=np.linspace(-1, 1, 21))[0].tolist(),
        },
        "pairwise_order_probability": {
            a: {b: float(wins[i, j] / n) for j, b in enumerate(names) if b != a} for i, a in enumerate(names)
        },
        "interval_95": {
            b: [float(np.percentile(reps_a[:, i], 2.5)), float(np.percentile(reps_a[:, i], 97.5))]
            for i, b in enumerate(names)
        },
        "taus": taus_a.tolist(),
    }


def calibration(
    t: Table, n: int = 1000, seed: int = BOOTSTRAP_SEED, progress: Callable[[int], None] | None = None
) -> dict:
    """Return the whole calibration record of one track (JSON-ready)."""
    tot = totals(t)
    return {
        "format": "icl-calibration/1",
        "track": t.track,
        "pass_mark": t.pass_mark,
        "baselines": {b: {"score": tot[b], "role": t.roles.get(b, "baseline")} for b in t.baselines},
        "order": sorted(t.baselines, key=lambda b: -tot[b]),
        "checks": pass_rates(t),
        "ceiling_floor": ceiling_floor(t),
        "rank_stability": rank_stability(t, n, seed, progress),
    }

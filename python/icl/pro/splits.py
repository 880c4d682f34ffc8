"""Grouped splits of the professional instances and the leakage check.

A base eye with all its counterfactuals and an ICL design family each belong to exactly one split, so
nothing learnt on train or dev instances transfers to test through a shared eye or design.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

SPLITS = ("train", "dev", "test", "ood")
GROUP_KEYS = ("base_eye", "design_family")


class SplitLeakageError(RuntimeError):
    """A base eye or design family appears in more than one split."""


def check_leakage(records: Iterable[Mapping]) -> dict[str, int]:
    """Raise :class:`SplitLeakageError` if any group crosses splits.

    Parameters
    ----------
    records : iterable of mapping
        One per instance, with ``id``, ``split`` and every key of ``GROUP_KEYS``.

    Returns
    -------
    dict
        Number of distinct groups per key, for the report.

    """
    where: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in records:
        if r["split"] not in SPLITS:
            raise SplitLeakageError(f"instance {r['id']}: unknown split {r['split']!r}")
        for key in GROUP_KEYS:
            where[(key, r[key])].add(r["split"])
    leaks = sorted(f"{k}={g} in {sorted(s)}" for (k, g), s in where.items() if len(s) > 1)
    if leaks:
        raise SplitLeakageError("groups cross splits: " + "; ".join(leaks))
    return {key: sum(1 for (k, _) in where if k == key) for key in GROUP_KEYS}


def pools(n_eyes: Mapping[str, int], n_families: Mapping[str, int]) -> dict[str, dict[str, list[str]]]:
    """Disjoint base-eye and design-family ids for each split (``BE01``..., ``DF01``...)."""
    out: dict[str, dict[str, list[str]]] = {}
    e = f = 0
    for split in SPLITS:
        eyes = [f"BE{e + i + 1:02d}" for i in range(n_eyes[split])]
        fams = [f"DF{f + i + 1:02d}" for i in range(n_families[split])]
        e += n_eyes[split]
        f += n_families[split]
        out[split] = {"base_eye": eyes, "design_family": fams}
    return out

"""Safety score S, its dynamic weight and the total T (seed 003).

``S = 3 / (1/NH + 1/DUP + 1/SPL)`` with the zero rule: if any item is 0, not computable or missing,
``S = 0``. The weights are ``w_s = 0.2 + 0.2 (1 - S)`` and ``w_c = 1 - w_s``; the total is
``T = 100 (S w_s + C w_c)``, rounded to two decimals only at the very end. All arithmetic is float64.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

ITEMS = ("NH", "DUP", "SPL")


def harmonic_mean(values: list[float]) -> float:
    """Harmonic mean of positive finite numbers, computed without overflow or underflow.

    ``3 / sum(1/x)`` overflows ``1/x`` for subnormal ``x`` and would turn a tiny positive item into 0.
    Factoring out the smallest value ``m`` gives ``n m / sum(m / x_i)``: every ratio lies in ``(0, 1]``
    and the denominator in ``[1, n]``, so the result is exact to rounding for any positive float64.
    """
    if not values:
        raise ValueError("no values")
    if any(not (math.isfinite(v) and v > 0) for v in values):
        raise ValueError(f"harmonic mean needs positive finite values, got {values}")
    m = min(values)
    return len(values) * m / math.fsum(m / v for v in values)


def safety_score(items: Mapping[str, float | None]) -> tuple[float, str | None]:
    """Safety score from the three item areas, with the zero rule.

    Parameters
    ----------
    items : mapping
        ``{'NH': a, 'DUP': b, 'SPL': c}``; a value of ``None`` means not computable.

    Returns
    -------
    S : float
        Harmonic mean in ``[0, 1]``, or 0 by the zero rule.
    zero_rule : str or None
        Why S is 0 by rule (the first failing item), else ``None``.

    """
    values = []
    for key in ITEMS:
        if key not in items:
            return 0.0, f"{key} missing"
        v = items[key]
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return 0.0, f"{key} not computable"
        if not 0.0 <= v <= 1.0:
            return 0.0, f"{key} = {v!r} outside [0, 1]"
        if v == 0.0:
            return 0.0, f"{key} = 0"
        values.append(float(v))
    return harmonic_mean(values), None


def safety_weight(s: float) -> float:
    """``w_s = 0.2 + 0.2 (1 - S)``: 0.4 at S = 0, 0.2 at S = 1."""
    _unit(s, "S")
    return 0.2 + 0.2 * (1.0 - s)


def clinical_weight(s: float) -> float:
    """``w_c = 1 - w_s``: 0.6 at S = 0, 0.8 at S = 1."""
    return 1.0 - safety_weight(s)


def total_unrounded(s: float, c: float) -> float:
    """``100 (S w_s + C w_c)`` in float64, not rounded."""
    _unit(c, "C")
    ws = safety_weight(s)
    return 100.0 * (s * ws + c * (1.0 - ws))


def round2(x: float) -> float:
    """Round half away from zero to two decimals, on the shortest decimal form of the float."""
    return float(Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def total(s: float, c: float) -> float:
    """Total score ``T`` in ``[0, 100]``, rounded to two decimals once, at the end."""
    return round2(total_unrounded(s, c))


def _unit(x: float, name: str) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")

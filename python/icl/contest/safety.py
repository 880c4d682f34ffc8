"""Safety score S, its dynamic weight and the total T.

``S = 3 / (1/NH + 1/DUP + 1/SPL)`` with the zero rule: if any item is 0, not computable or missing,
``S = 0``. The weights are ``w_s = 0.2 + 0.2 (1 - S)`` and ``w_c = 1 - w_s``; the total is
``T = 100 (S w_s + C w_c)``, rounded to two decimals only at the very end. ``S`` and the weights are
float64; the total that is rounded is computed exactly in decimal from the decimal form of ``S`` and
``C`` (their shortest repr), so that ``C = 0.50045`` on track 7 gives ``50.045`` and rounds half up to
``50.05`` (float64 ``100 * 0.50045`` is ``50.044999...``, which would round down).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, localcontext

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
    """``100 (S w_s + C w_c)`` before rounding (the exact decimal value, to float64)."""
    return float(total_exact(s, c))


def _decimal(x: float) -> Decimal:
    """Return the decimal a float stands for: its shortest repr (``0.50045``, not ``0.500449...``)."""
    return Decimal(repr(float(x)))


def total_exact(s: float | None, c: float) -> Decimal:
    """``100 (S w_s + C w_c)`` in exact decimal arithmetic; ``s=None`` (track 7) gives ``100 C``."""
    _unit(c, "C")
    with localcontext() as ctx:
        ctx.prec = 80  # products of 17-digit decimals stay exact
        cd = _decimal(c)
        if s is None:
            return 100 * cd
        _unit(s, "S")
        sd = _decimal(s)
        ws = Decimal("0.2") + Decimal("0.2") * (1 - sd)
        return 100 * (sd * ws + cd * (1 - ws))


def round2(x: float | Decimal) -> float:
    """Round half up (away from zero) to two decimals; a float is taken at its shortest decimal form."""
    d = x if isinstance(x, Decimal) else _decimal(x)
    return float(d.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def total(s: float | None, c: float) -> float:
    """Total score ``T`` in ``[0, 100]``, rounded half up to two decimals once, at the end.

    ``s=None`` is track 7 (no safety score): ``T = 100 C``.
    """
    return round2(total_exact(s, c))


def _unit(x: float, name: str) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}")

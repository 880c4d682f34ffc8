"""Elementary functions whose bits do not depend on the host's instruction set.

NumPy evaluates ``exp``, ``log``, ``log10``, ``power``, ``arctan2``, ``arccos``, ``tan`` and other
transcendental ufuncs of float64 with SIMD code chosen at run time: on a CPU with AVX-512 they come from
vectorised approximations whose last bits differ from those of the code used on CPUs without it
(``NPY_DISABLE_CPU_FEATURES="AVX512_ICL X86_V4"`` shows it on one machine). Reference arithmetic that
ends up in a release's files uses the functions here instead: each element goes through the C
library's scalar function (Python's :mod:`math`), the same code on every CPU of a platform. About
0.1 microsecond per element: for the grids of references and detectors, not for inner loops.

``sqrt``, ``hypot``, ``sin``, ``cos``, the arithmetic operators, ``x ** 2`` and ``x ** 0.5`` are
correctly rounded or dispatched identically, and stay NumPy's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _unary(fn: Callable[[float], float], name: str) -> Callable[[np.ndarray | float], np.ndarray]:
    ufunc = np.frompyfunc(fn, 1, 1)

    def apply(x: np.ndarray | float) -> np.ndarray:
        with np.errstate(over="ignore"):  # an overflow is already inf, as in NumPy
            return np.asarray(ufunc(np.asarray(x, dtype=float)), dtype=float)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Element-wise ``math.{name}`` with NumPy's results where it raises (float64, the input's shape)."
    return apply


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _logarithm(fn: Callable[[float], float]) -> Callable[[float], float]:
    # NumPy's conventions where math raises: log(0) = -inf, log(x < 0) = nan.
    return lambda x: fn(x) if x > 0.0 else (-math.inf if x == 0.0 else math.nan)


exp = _unary(_exp, "exp")
log = _unary(_logarithm(math.log), "log")
log10 = _unary(_logarithm(math.log10), "log10")
arccos = _unary(math.acos, "acos")
tan = _unary(math.tan, "tan")

_atan2 = np.frompyfunc(math.atan2, 2, 1)
_pow = np.frompyfunc(math.pow, 2, 1)


def arctan2(y: np.ndarray | float, x: np.ndarray | float) -> np.ndarray:
    """Element-wise ``math.atan2(y, x)`` (broadcast as NumPy does)."""
    return np.asarray(_atan2(np.asarray(y, dtype=float), np.asarray(x, dtype=float)), dtype=float)


def power(x: np.ndarray | float, p: np.ndarray | float) -> np.ndarray:
    """Element-wise ``math.pow(x, p)`` (broadcast as NumPy does); ``x ** 2`` needs none of this."""
    return np.asarray(_pow(np.asarray(x, dtype=float), np.asarray(p, dtype=float)), dtype=float)


def gaussian_filter(img: np.ndarray, sigma: float, mode: str = "reflect", truncate: float = 4.0) -> np.ndarray:
    """``scipy.ndimage.gaussian_filter`` of a 2-D image with the kernel's weights from :func:`exp`.

    SciPy computes the weights with ``numpy.exp``, whose last bits follow the CPU; the filtering itself
    (``correlate1d`` along each axis) is the same compiled code everywhere.
    """
    from scipy.ndimage import correlate1d

    radius = int(truncate * float(sigma) + 0.5)
    x = np.arange(-radius, radius + 1, dtype=float)
    w = exp(-0.5 / (float(sigma) * float(sigma)) * (x * x))
    w /= w.sum()
    out = np.asarray(img, dtype=float)
    for axis in range(out.ndim):
        out = correlate1d(out, w, axis=axis, mode=mode)
    return out

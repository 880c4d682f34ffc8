"""Linear algebra whose result is the same bits on every host: products and least squares in a fixed order.

NumPy's ``@``, ``dot``, ``linalg.norm`` and ``linalg.lstsq`` go through BLAS and LAPACK, whose kernels
(chosen at run time by the CPU, ``OPENBLAS_CORETYPE`` and the thread count) add in different orders and
fuse multiplies with adds differently: the same inputs give results that differ in the last bits, and a
release built on another host would not match its manifest. The functions here use only NumPy's
element-wise arithmetic (correctly rounded on every host) and sums whose order is set by the array
shapes alone, so they give the same bits whatever the BLAS kernel, thread count or instruction set.
They are meant for the small systems of reference arithmetic (2x2 ray-transfer matrices, filter designs,
circle and Zernike fits), not for large products.
"""

from __future__ import annotations

import math

import numpy as np


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Real matrix product ``a @ b`` (2-D, or 1-D on either side): products summed by ``np.sum``.

    Memory grows as rows x inner x columns: for small matrices.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    vec_a, vec_b = a.ndim == 1, b.ndim == 1
    a2, b2 = (a[None, :] if vec_a else a), (b[:, None] if vec_b else b)
    if a2.ndim != 2 or b2.ndim != 2 or a2.shape[1] != b2.shape[0]:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not align")
    out = np.sum(a2[:, :, None] * b2[None, :, :], axis=1)
    if vec_a:
        out = out[0]
    if vec_b:
        out = out[..., 0]
    return out


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """Inner product of two real vectors of one length (products summed by ``np.sum``)."""
    a, b = np.ravel(np.asarray(a, dtype=float)), np.ravel(np.asarray(b, dtype=float))
    if a.shape != b.shape:
        raise ValueError(f"lengths {a.size} and {b.size} differ")
    return float(np.sum(a * b))


def norm(v: np.ndarray) -> float:
    """Euclidean norm of a real vector."""
    return math.sqrt(dot(v, v))


def lstsq(a: np.ndarray, b: np.ndarray, damping: float = 0.0) -> np.ndarray:
    """Least-squares solution of ``a x = b`` by Householder QR (``a``: m x n, m >= n; ``b``: m or m x k).

    ``damping`` > 0 solves the Tikhonov problem ``min |a x - b|^2 + (damping s)^2 |x|^2`` with ``s`` the
    Frobenius norm of ``a``: for a numerically rank-deficient ``a`` (filter designs) it plays the part of
    LAPACK's singular-value cutoff (``rcond``) without a cutoff decision that round-off could move, and
    the solution varies smoothly with the data. Without damping a (numerically) singular ``a`` is an error.
    """
    a, b = np.array(a, dtype=float), np.array(b, dtype=float)
    m, n = a.shape
    one = b.ndim == 1
    y = b[:, None] if one else b
    if y.shape[0] != m:
        raise ValueError(f"a has {m} rows, b {y.shape[0]}")
    if damping > 0.0:
        scale = math.sqrt(float(np.sum(a * a)))
        a = np.vstack([a, damping * scale * np.eye(n)])
        y = np.vstack([y, np.zeros((n, y.shape[1]))])
        m += n
    if m < n:
        raise ValueError(f"{m} equations for {n} unknowns: give at least as many")
    r = a
    for j in range(n):
        x = r[j:, j]
        alpha = math.sqrt(float(np.sum(x * x)))
        if alpha == 0.0:
            raise np.linalg.LinAlgError(f"column {j} is linearly dependent on the ones before it")
        v = x.copy()
        v[0] += math.copysign(alpha, x[0])  # reflect x onto -sign(x0) alpha e1 (no cancellation)
        scale = 2.0 / float(np.sum(v * v))
        r[j:, j:] -= v[:, None] * ((v[:, None] * r[j:, j:]).sum(axis=0) * scale)[None, :]
        y[j:] -= v[:, None] * ((v[:, None] * y[j:]).sum(axis=0) * scale)[None, :]
    diag = np.abs(np.diag(r[:n, :n]))
    if damping == 0.0 and diag.min() <= 1e-13 * diag.max():
        raise np.linalg.LinAlgError("the least-squares system is numerically singular; give a damping")
    sol = np.empty((n, y.shape[1]))
    for i in range(n - 1, -1, -1):  # back substitution in fixed order
        sol[i] = (y[i] - (r[i, i + 1 : n, None] * sol[i + 1 :]).sum(axis=0)) / r[i, i]
    return sol[:, 0] if one else sol


def polyfit(x: np.ndarray, y: np.ndarray, deg: int) -> np.ndarray:
    """Least-squares polynomial coefficients, lowest degree first (as ``np.polynomial.polynomial.polyfit``).

    The Vandermonde columns are scaled to unit norm before the solve, as NumPy does.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    van = np.ones((x.size, deg + 1))
    for k in range(1, deg + 1):
        van[:, k] = van[:, k - 1] * x
    scale = np.sqrt(np.sum(van * van, axis=0))
    return lstsq(van / scale, y) / scale

"""Plain NumPy twins of the C++ kernels: slow, obviously correct, used only by the tests."""

from __future__ import annotations

import math

import numpy as np


def disk_rect_area(cx, cy, r, x0, x1, y0, y1, n=2000):
    """Area of a disk inside a rectangle by midpoint integration of the chord length in x.

    Converges as n^-1.5 at the tangent points; used only to check the exact kernel.
    """
    xs = x0 + (np.arange(n) + 0.5) * (x1 - x0) / n
    h = np.sqrt(np.clip(r * r - (xs - cx) ** 2, 0, None))
    lo = np.maximum(y0, cy - h)
    hi = np.minimum(y1, cy + h)
    return float(np.sum(np.clip(hi - lo, 0, None)) * (x1 - x0) / n)


def disk_coverage(cx, cy, r, n, du):
    """Exact cell coverage by the closed form of the area of a disk inside a rectangle, vectorised."""
    c0 = (n - 1) / 2
    centres = (np.arange(n) - c0) * du
    y, x = np.meshgrid(centres, centres, indexing="ij")
    x0, x1 = x - du / 2 - cx, x + du / 2 - cx
    y0, y1 = y - du / 2 - cy, y + du / 2 - cy

    def prim(t):  # antiderivative of sqrt(r^2 - t^2)
        t = np.clip(t, -r, r)
        return 0.5 * (t * np.sqrt(np.clip(r * r - t * t, 0, None)) + r * r * np.arcsin(t / r))

    def strip_area(yb, yt):
        # Area of the disk within x in [x0, x1] and y in [yb, yt], both bounds on the same side
        # is not assumed: integrate min(yt, h) - max(yb, -h) with breakpoints, via dense midpoints
        # of a fixed partition refined at the breakpoints.
        pts = [np.clip(x0, -r, r), np.clip(x1, -r, r)]
        for yy in (yb, yt):
            xs = np.sqrt(np.clip(r * r - yy * yy, 0, None))
            for cand in (xs, -xs):
                pts.append(np.clip(cand, np.clip(x0, -r, r), np.clip(x1, -r, r)))
        pts = np.sort(np.stack(pts, axis=-1), axis=-1)
        area = np.zeros_like(x0)
        for k in range(pts.shape[-1] - 1):
            a, b = pts[..., k], pts[..., k + 1]
            mid = 0.5 * (a + b)
            h = np.sqrt(np.clip(r * r - mid * mid, 0, None))
            hint = prim(b) - prim(a)
            top = np.where(h < yt, hint, yt * (b - a))
            bottom = np.where(-h > yb, -hint, yb * (b - a))
            ok = (np.minimum(yt, h) > np.maximum(yb, -h)) & (b > a)
            area += np.where(ok, top - bottom, 0.0)
        return area

    return np.clip(strip_area(y0, y1) / (du * du), 0.0, 1.0)


def disk_coverage_filtered(cx, cy, r, n, du, taps, sub):
    """Coverage on cells ``sub`` times finer (a grid wide enough for every tap), filtered along both axes
    by the direct sum over the taps and decimated onto the n x n grid."""
    taps = np.asarray(taps, dtype=float)
    if taps.size == 0:
        return disk_coverage(cx, cy, r, n, du)
    length = taps.size
    k = (length - sub + 2 * sub - 1) // (2 * sub) + 1
    w, off = sub * (n + 2 * k), sub * k + (sub - length) // 2
    fine = disk_coverage(cx, cy, r, w, du / sub)
    idx = off + sub * np.arange(n)[:, None] + np.arange(length)[None, :]  # (n, taps) fine indices
    rows = np.einsum("t,ijt->ij", taps, fine[:, idx])  # along u: (w, n)
    return np.einsum("t,ijt->ij", taps, rows[idx].transpose(0, 2, 1))


def build_pupil(pp, n, du, lam):
    """Thin-phase pupil from a ``core.PupilParams`` (docs/conventions.md), cell coverage by area
    (filtered by ``pp.edge_taps`` on ``pp.edge_sub`` times finer cells when there are taps)."""
    c0 = (n - 1) / 2
    centres = (np.arange(n) - c0) * du
    v, u = np.meshgrid(centres, centres, indexing="ij")

    def disk_coverage(cx, cy, r, n, du):
        return disk_coverage_filtered(cx, cy, r, n, du, pp.edge_taps, pp.edge_sub)

    pupil = disk_coverage(pp.pupil_cu, pp.pupil_cv, pp.pupil_diameter / 2, n, du)
    w_eye = -0.5 * pp.eye_excess * (u**2 + v**2) + pp.tilt_u * u + pp.tilt_v * v
    k = 2 * np.pi / lam
    if not pp.icl_present:
        return pupil * np.exp(1j * k * w_eye)
    zone = disk_coverage(pp.dec_u, pp.dec_v, pp.optic_zone_diameter / 2, n, du)
    hole = (
        disk_coverage(pp.dec_u, pp.dec_v, pp.hole_diameter / 2, n, du) if pp.hole_diameter > 0 else 0 * zone
    )
    dc_u, dc_v = u - pp.dec_u, v - pp.dec_v
    d_perp = -dc_u * math.sin(pp.cyl_axis) + dc_v * math.cos(pp.cyl_axis)
    w_icl = -0.5 * pp.icl_power * (dc_u**2 + dc_v**2) - 0.5 * pp.cyl_power * d_perp**2
    f_hole = zone * hole
    corrected = zone - f_hole
    eye_only = 1 - zone
    mode = int(pp.hole)
    if mode == 0:
        eye_only = eye_only + f_hole
    elif mode == 2:
        corrected = corrected + f_hole
    return pupil * np.exp(1j * k * w_eye) * (eye_only + corrected * np.exp(1j * k * w_icl))


def psf_window(pupil, m, s, scale):
    """Full m x m FFT of the zero-padded pupil, then the centred s x s window of |E|^2."""
    n = pupil.shape[0]
    big = np.zeros((m, m), complex)
    big[:n, :n] = pupil
    e = np.fft.fft2(big)
    idx = (np.arange(s) - s // 2) % m
    return np.abs(e[np.ix_(idx, idx)]) ** 2 * scale


def place_separable(s, ty, tx, r0, c0, n0, n1):
    """Direct double sum over the taps."""
    out = np.zeros((n0, n1))
    for a, wy in enumerate(ty):
        for b, wx in enumerate(tx):
            rows = r0 + np.arange(n0) + a
            cols = c0 + np.arange(n1) + b
            ok_r = (rows >= 0) & (rows < s.shape[0])
            ok_c = (cols >= 0) & (cols < s.shape[1])
            block = np.zeros((n0, n1))
            block[np.ix_(ok_r, ok_c)] = s[np.ix_(rows[ok_r], cols[ok_c])]
            out += wy * wx * block
    return out


def convolve_linear(a, k, r0, c0, n0, n1):
    """Full linear convolution by scipy's direct method, then the window."""
    from scipy.signal import convolve2d

    full = convolve2d(a, k, mode="full")
    out = np.zeros((n0, n1))
    rows = r0 + np.arange(n0)
    cols = c0 + np.arange(n1)
    ok_r = (rows >= 0) & (rows < full.shape[0])
    ok_c = (cols >= 0) & (cols < full.shape[1])
    out[np.ix_(ok_r, ok_c)] = full[np.ix_(rows[ok_r], cols[ok_c])]
    return out

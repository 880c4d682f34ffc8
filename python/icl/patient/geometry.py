"""Feature geometry in the fixed angular frame: curve samples, distances to a curve, band rasters.

All angles are degrees; the frame spans +/-15 deg on each axis around fixation (+x right, +y up). Circles and
arcs use exact (analytic) distances; an ellipse is its 128-point closed polyline; a freehand contour is its
raw open polyline. A band is every point whose distance to the curve is at most half the reported width.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

FRAME_DEG = 15.0  # half-width of the fixed scoring frame on each axis
CURVE_POINTS = 128  # samples per curve for the Chamfer distance and the ellipse polyline
RASTER_DEFAULT = 256
RASTER_MIN, RASTER_MAX = 64, 512


def pixel_centres(n: int) -> np.ndarray:
    """Return pixel-centre angles (deg) of an ``n``-pixel axis spanning the frame, ascending."""
    return -FRAME_DEG + (np.arange(n) + 0.5) * (2 * FRAME_DEG / n)


def _ellipse(feat: Mapping[str, Any], n: int) -> np.ndarray:
    t = 2 * np.pi * np.arange(n) / n
    a = np.deg2rad(feat.get("rotation_deg", 0.0))
    ex, ey = feat["rx_deg"] * np.cos(t), feat["ry_deg"] * np.sin(t)
    return np.column_stack(
        [feat["cx_deg"] + ex * np.cos(a) - ey * np.sin(a), feat["cy_deg"] + ex * np.sin(a) + ey * np.cos(a)]
    )


def _resample(points: np.ndarray, n: int) -> np.ndarray:
    seg = np.hypot(*np.diff(points, axis=0).T)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] == 0:
        return np.repeat(points[:1], n, axis=0)
    t = np.linspace(0.0, s[-1], n)
    return np.column_stack([np.interp(t, s, points[:, 0]), np.interp(t, s, points[:, 1])])


def curve_samples(feat: Mapping[str, Any], n: int = CURVE_POINTS) -> np.ndarray:
    """``n`` points on a feature's curve, shape (n, 2), in degrees.

    Circles and ellipses are sampled at equal parameter angles (closed, no repeated end point), arcs at equal
    angles from ``start_deg`` to ``start_deg + sweep_deg`` inclusive, freehand contours at equal arc length
    along the open polyline (both ends included).
    """
    kind = feat["kind"]
    if kind == "circle":
        r = feat["rx_deg"]
        return _ellipse({**feat, "ry_deg": r, "rotation_deg": 0.0}, n)
    if kind == "ellipse":
        return _ellipse(feat, n)
    if kind == "arc":
        phi = np.deg2rad(feat["start_deg"] + feat["sweep_deg"] * np.arange(n) / (n - 1))
        return np.column_stack(
            [feat["cx_deg"] + feat["rx_deg"] * np.cos(phi), feat["cy_deg"] + feat["rx_deg"] * np.sin(phi)]
        )
    return _resample(np.asarray(feat["points_deg"], dtype=float), n)


def _polyline_distance(vertices: np.ndarray, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    best = np.full(np.broadcast(px, py).shape, np.inf)
    for (x0, y0), (x1, y1) in zip(vertices[:-1], vertices[1:], strict=True):
        dx, dy = x1 - x0, y1 - y0
        ll = dx * dx + dy * dy
        t = np.clip(((px - x0) * dx + (py - y0) * dy) / ll, 0.0, 1.0) if ll > 0 else 0.0
        np.minimum(best, np.hypot(px - x0 - t * dx, py - y0 - t * dy), out=best)
    if len(vertices) == 1:
        best = np.hypot(px - vertices[0, 0], py - vertices[0, 1])
    return best


def distance_to_curve(feat: Mapping[str, Any], px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Distance (deg) from points ``(px, py)`` to a feature's curve (not to its band)."""
    kind = feat["kind"]
    if kind in ("circle", "arc"):
        dx, dy = px - feat["cx_deg"], py - feat["cy_deg"]
        radial = np.abs(np.hypot(dx, dy) - feat["rx_deg"])
        if kind == "circle" or feat["sweep_deg"] >= 360:
            return radial
        rel = np.mod(np.rad2deg(np.arctan2(dy, dx)) - feat["start_deg"], 360.0)
        ends = curve_samples(feat, 2)
        to_end = np.minimum(
            np.hypot(px - ends[0, 0], py - ends[0, 1]), np.hypot(px - ends[1, 0], py - ends[1, 1])
        )
        return np.where(rel <= feat["sweep_deg"], radial, to_end)
    if kind == "ellipse":
        ring = curve_samples(feat)
        return _polyline_distance(np.vstack([ring, ring[:1]]), px, py)
    return _polyline_distance(np.asarray(feat["points_deg"], dtype=float), px, py)


def band_mask(feat: Mapping[str, Any], n: int = RASTER_DEFAULT) -> np.ndarray:
    """Boolean raster (n, n) of the feature's band; row index grows with +y, column index with +x.

    A pixel belongs to the band when its centre lies within ``width_deg / 2`` of the curve. Only the bounding
    box of the curve (widened by the half band) is evaluated.
    """
    c = pixel_centres(n)
    half = 0.5 * feat["width_deg"]
    pts = curve_samples(feat, 4 * CURVE_POINTS)
    if feat["kind"] == "freehand":
        pts = np.asarray(feat["points_deg"], dtype=float)
    elif feat["kind"] in ("circle", "arc"):
        pts = np.vstack(
            [
                pts,
                [
                    [feat["cx_deg"] - feat["rx_deg"], feat["cy_deg"] - feat["rx_deg"]],
                    [feat["cx_deg"] + feat["rx_deg"], feat["cy_deg"] + feat["rx_deg"]],
                ],
            ]
        )
    # the ellipse polygon's 128 vertices are a subset of these 512 samples, and circles/arcs add their full
    # bounding square, so the box holds the whole curve; one extra pixel guards against rounding at its edge
    pad = half + 2 * FRAME_DEG / n
    cols = np.nonzero((c >= pts[:, 0].min() - pad) & (c <= pts[:, 0].max() + pad))[0]
    rows = np.nonzero((c >= pts[:, 1].min() - pad) & (c <= pts[:, 1].max() + pad))[0]
    mask = np.zeros((n, n), dtype=bool)
    if cols.size == 0 or rows.size == 0:
        return mask
    px, py = np.meshgrid(c[cols], c[rows])
    mask[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1] = distance_to_curve(feat, px, py) <= half
    return mask


def chamfer_distance(a: Mapping[str, Any], b: Mapping[str, Any], n: int = CURVE_POINTS) -> float:
    """Symmetric mean nearest-point distance (deg) between two curves.

    ``0.5 * (mean over samples of a of their distance to curve b + the same from b to a)``, with ``n`` samples
    per curve and the exact distance to the other curve (analytic for circles and arcs, polyline otherwise).
    """
    sa, sb = curve_samples(a, n), curve_samples(b, n)
    dab = distance_to_curve(b, sa[:, 0], sa[:, 1]).mean()
    dba = distance_to_curve(a, sb[:, 0], sb[:, 1]).mean()
    return float(0.5 * (dab + dba))


def inside_frame(feat: Mapping[str, Any], limit: float = FRAME_DEG) -> bool:
    """Return True when the feature's band lies wholly within +/-``limit`` deg on both axes."""
    pts = (
        curve_samples(feat, 4 * CURVE_POINTS)
        if feat["kind"] != "freehand"
        else np.asarray(feat["points_deg"], dtype=float)
    )
    reach = np.abs(pts).max() + 0.5 * feat["width_deg"]
    return bool(reach <= limit + 1e-9)

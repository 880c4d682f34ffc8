"""Feature geometry in the fixed angular frame: curve samples, distances to a curve, band rasters.

All angles are degrees; the frame spans +/-15 deg on each axis around fixation (+x right, +y up). Circles and
arcs use exact (analytic) distances; an ellipse is its 128-point closed polyline; a freehand contour is its
raw open polyline. A band is every point whose distance to the curve is at most half the reported width.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icl import libm

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


_CHUNK = 1 << 20  # point-segment (or point-block) pairs evaluated at once


def _segments(vertices: np.ndarray) -> tuple[np.ndarray, ...]:
    """Segment starts, steps and squared lengths as :func:`_segment_distance` takes them.

    A zero-length segment (a repeated vertex) gets step 0 and squared length 1, so its parameter is 0 and
    its distance is the one to its start point, without a branch per pair.
    """
    x0, y0 = vertices[:-1, 0], vertices[:-1, 1]
    dx, dy = vertices[1:, 0] - x0, vertices[1:, 1] - y0
    ll = dx * dx + dy * dy
    moves = ll > 0
    return x0, y0, np.where(moves, dx, 0.0), np.where(moves, dy, 0.0), np.where(moves, ll, 1.0)


def _segment_distance(qx, qy, x0, y0, dx, dy, ll) -> np.ndarray:
    """Distance from points to segments (as :func:`_segments` gives them), element by element."""
    ax, ay = qx - x0, qy - y0
    t = np.clip((ax * dx + ay * dy) / ll, 0.0, 1.0)
    return np.hypot(ax - t * dx, ay - t * dy)


def _polyline_distance(vertices: np.ndarray, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Exact distance from points to an open polyline: the minimum over its segments.

    Long polylines (freehand contours) test each point only against the segments that can be nearest,
    found through a hierarchy of bounding boxes (:class:`_Polyline`). The nearest segment is always among
    them, and each distance is computed by the same expression as the full search, so the result is the
    same number.
    """
    px, py = np.broadcast_arrays(np.asarray(px, dtype=float), np.asarray(py, dtype=float))
    if len(vertices) == 1:
        return np.hypot(px - vertices[0, 0], py - vertices[0, 1])
    fx, fy = px.ravel(), py.ravel()
    if len(vertices) - 1 > _TREE_SEGMENTS:
        return _Polyline(vertices).distance(fx, fy).reshape(px.shape)
    seg = _segments(vertices)
    out = np.empty(fx.size)
    step = max(1, _CHUNK // len(seg[0]))
    for i in range(0, fx.size, step):
        qx, qy = fx[i : i + step, None], fy[i : i + step, None]
        out[i : i + step] = _segment_distance(qx, qy, *seg).min(axis=1)
    return out.reshape(px.shape)


_TREE_SEGMENTS = 256  # above this many segments the block hierarchy pays off


class _Polyline:
    """A long polyline's segments in a hierarchy of blocks of consecutive segments with bounding boxes.

    ``LEVELS`` are the block sizes, coarse to fine; each divides the one before, the finest blocks are
    evaluated segment by segment. The segment list is padded to whole top-level blocks by repeating its
    last segment, which changes no minimum.
    """

    LEVELS = (128, 16, 4)

    def __init__(self, vertices: np.ndarray):
        nseg = len(vertices) - 1
        top = self.LEVELS[0]
        pad = np.minimum(np.arange(-(-nseg // top) * top), nseg - 1)
        start, end = vertices[pad], vertices[pad + 1]
        lo, hi = np.minimum(start, end), np.maximum(start, end)
        self.boxes, self.marks = [], []
        for size in self.LEVELS:
            nblock = len(pad) // size
            box = np.stack(
                [
                    lo[:, 0].reshape(nblock, size).min(axis=1),
                    hi[:, 0].reshape(nblock, size).max(axis=1),
                    lo[:, 1].reshape(nblock, size).min(axis=1),
                    hi[:, 1].reshape(nblock, size).max(axis=1),
                ],
                axis=-1,
            )
            # each block's middle vertex: a point of the curve, so its distance bounds the answer from above
            mark = vertices[pad[np.arange(nblock) * size + size // 2]]
            # finer levels are indexed by (parent block, child), so the children of a parent are one row
            children = size if not self.boxes else self.LEVELS[len(self.boxes) - 1] // size
            self.boxes.append(box if not self.boxes else box.reshape(-1, children, 4))
            self.marks.append(mark if not self.marks else mark.reshape(-1, children, 2))
        self.leaf = np.stack(_segments(vertices), axis=-1)[pad].reshape(-1, self.LEVELS[-1], 5)

    def distance(self, fx: np.ndarray, fy: np.ndarray) -> np.ndarray:
        """Exact distance of each point to the polyline.

        A descent through the blocks whose middle vertex is nearest ends on one finest block, whose
        segments give an upper bound ``u`` on the answer. A block whose box lies farther than ``u`` cannot
        hold the nearest segment: going down the levels, only blocks whose box is within ``u`` (plus a
        margin far above rounding) are kept, and the segments of the finest ones kept are evaluated with
        :func:`_segment_distance`, all points at once. The nearest segment is always among them, and each
        distance is the number an exhaustive search computes, so the minimum is the same.
        """
        out = np.empty(fx.size)
        step = max(1, _CHUNK // (self.leaf.shape[0] * self.leaf.shape[1]))  # bounded even if all blocks open
        for i in range(0, fx.size, step):
            out[i : i + step] = self._distance(fx[i : i + step], fy[i : i + step])
        return out

    def _distance(self, fx: np.ndarray, fy: np.ndarray) -> np.ndarray:
        qx, qy = fx[:, None], fy[:, None]
        top = _box_gap2(self.boxes[0], qx, qy)  # (points, top-level blocks)
        mx, my = self.marks[0][:, 0] - qx, self.marks[0][:, 1] - qy
        block = (mx * mx + my * my).argmin(axis=1)
        for box, mark in zip(self.boxes[1:], self.marks[1:], strict=True):
            mx, my = mark[block, :, 0] - qx, mark[block, :, 1] - qy
            block = block * box.shape[1] + (mx * mx + my * my).argmin(axis=1)
        u = _leaf_distance(self.leaf[block], qx, qy)
        keep = u * (1 + 1e-9) + 1e-9  # kept radius: rounding of the bounds can only add blocks
        keep2 = keep * keep
        point, block = np.nonzero(top <= keep2[:, None])
        for box in self.boxes[1:]:
            near = _box_gap2(box[block], fx[point, None], fy[point, None]) <= keep2[point, None]
            row, child = np.nonzero(near)
            point, block = point[row], block[row] * box.shape[1] + child
        d = _leaf_distance(self.leaf[block], fx[point, None], fy[point, None])
        counts = np.bincount(point, minlength=fx.size)  # every point keeps the block that gave u
        return np.minimum.reduceat(d, np.cumsum(counts) - counts)


def _box_gap2(box: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> np.ndarray:
    """Squared distance from points to boxes ``(..., [xmin, xmax, ymin, ymax])``, broadcast."""
    gx = np.maximum(np.maximum(box[..., 0] - qx, qx - box[..., 1]), 0.0)
    gy = np.maximum(np.maximum(box[..., 2] - qy, qy - box[..., 3]), 0.0)
    return gx * gx + gy * gy


def _leaf_distance(seg: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> np.ndarray:
    """Smallest :func:`_segment_distance` of each point (rows of ``qx, qy``) to its row of segments.

    ``seg`` is (points, segments per row, [x0, y0, dx, dy, ll]). The row minimum is taken column by
    column, faster than ``min(axis=1)`` over a short axis (a minimum is exact in any order).
    """
    d = _segment_distance(qx, qy, seg[..., 0], seg[..., 1], seg[..., 2], seg[..., 3], seg[..., 4])
    out = d[:, 0]
    for j in range(1, d.shape[1]):
        out = np.minimum(out, d[:, j])
    return out


class CurveCache:
    """Per-scoring memory of what a feature costs to prepare: point arrays, block hierarchies, curve samples.

    Keyed by the identity of the feature's objects (kept referenced, so an id is never reused while the
    cache lives); create one per scoring run, during which features are not modified.
    """

    def __init__(self) -> None:
        self._prepared: dict[int, tuple[Any, Mapping[str, Any]]] = {}
        self._polylines: dict[int, tuple[Any, _Polyline]] = {}
        self._samples: dict[tuple[int, int], tuple[Any, np.ndarray]] = {}

    def prepared(self, feat: Mapping[str, Any]) -> Mapping[str, Any]:
        """``feat`` with its ``points_deg`` list as a float array, converted once (other kinds unchanged).

        A long list of coordinate pairs takes longer to convert than most of what is done with it, and
        the same contour is met in many pairings and checks.
        """
        if "points_deg" not in feat:
            return feat
        hit = self._prepared.get(id(feat))
        if hit is None or hit[0] is not feat:
            hit = (feat, {**feat, "points_deg": np.asarray(feat["points_deg"], dtype=float)})
            self._prepared[id(feat)] = hit
        return hit[1]

    def polyline(self, points: Any) -> _Polyline:
        """Return the :class:`_Polyline` of a ``points_deg`` list or array."""
        hit = self._polylines.get(id(points))
        if hit is None or hit[0] is not points:
            hit = (points, _Polyline(np.asarray(points, dtype=float)))
            self._polylines[id(points)] = hit
        return hit[1]

    def samples(self, feat: Mapping[str, Any], n: int) -> np.ndarray:
        """:func:`curve_samples` of ``feat``."""
        hit = self._samples.get((id(feat), n))
        if hit is None or hit[0] is not feat:
            hit = (feat, curve_samples(self.prepared(feat), n))
            self._samples[(id(feat), n)] = hit
        return hit[1]


def _polyline_band(vertices: np.ndarray, half: float, n: int) -> np.ndarray:
    """Band raster of an open polyline: pixels whose centre lies within ``half`` of some segment.

    Each segment is tested only against a window of pixels holding its bounding box widened by ``half`` (a
    pixel nearer than ``half`` to a segment lies in that box), with the same per-segment distance as
    :func:`_polyline_distance`, so the raster is the one of the full minimum at a fraction of the cost.
    Segments whose boxes span about as many pixels (within a factor 2 on each axis) share one window
    size, so that all of a group's tests are one array operation; the extra pixels a window holds are
    tested like the others, which changes nothing.
    """
    c = pixel_centres(n)
    mask = np.zeros((n, n), dtype=bool)
    if len(vertices) == 1:
        vertices = np.vstack([vertices, vertices])  # a single point: one zero-length segment
    x0, y0, dx, dy, ll = _segments(vertices)
    slack = half + 1e-9  # rounding of the box edges can only add candidates, never lose one
    c0 = np.searchsorted(c, np.minimum(x0, x0 + dx) - slack, "left")
    c1 = np.searchsorted(c, np.maximum(x0, x0 + dx) + slack, "right")
    r0 = np.searchsorted(c, np.minimum(y0, y0 + dy) - slack, "left")
    r1 = np.searchsorted(c, np.maximum(y0, y0 + dy) + slack, "right")
    ncol, nrow = c1 - c0, r1 - r0
    live = (ncol > 0) & (nrow > 0)
    group = np.where(live, np.frexp(ncol)[1] * 64 + np.frexp(nrow)[1], -1)  # box size, powers of 2
    for key in np.unique(group[live]):
        members = np.flatnonzero(group == key)
        wc, wr = int(ncol[members].max()), int(nrow[members].max())
        step = max(1, _CHUNK // (wc * wr))
        for i in range(0, members.size, step):
            k = members[i : i + step]
            col = np.minimum(c0[k, None] + np.arange(wc), n - 1)  # (segments, window columns)
            row = np.minimum(r0[k, None] + np.arange(wr), n - 1)
            seg = (a[k, None, None] for a in (x0, y0, dx, dy, ll))
            d = _segment_distance(c[col][:, None, :], c[row][:, :, None], *seg)
            s, i_row, i_col = np.nonzero(d <= half)
            mask[row[s, i_row], col[s, i_col]] = True
    return mask


def distance_to_curve(
    feat: Mapping[str, Any], px: np.ndarray, py: np.ndarray, cache: CurveCache | None = None
) -> np.ndarray:
    """Distance (deg) from points ``(px, py)`` to a feature's curve (not to its band).

    ``cache`` keeps a freehand contour's point array and block hierarchy between calls; the result does
    not depend on it.
    """
    kind = feat["kind"]
    if kind in ("circle", "arc"):
        dx, dy = px - feat["cx_deg"], py - feat["cy_deg"]
        radial = np.abs(np.hypot(dx, dy) - feat["rx_deg"])
        if kind == "circle" or feat["sweep_deg"] >= 360:
            return radial
        rel = np.mod(np.rad2deg(libm.arctan2(dy, dx)) - feat["start_deg"], 360.0)
        ends = curve_samples(feat, 2)
        to_end = np.minimum(
            np.hypot(px - ends[0, 0], py - ends[0, 1]), np.hypot(px - ends[1, 0], py - ends[1, 1])
        )
        return np.where(rel <= feat["sweep_deg"], radial, to_end)
    if kind == "ellipse":
        ring = curve_samples(feat)
        return _polyline_distance(np.vstack([ring, ring[:1]]), px, py)
    if cache is not None:
        feat = cache.prepared(feat)
    points = feat["points_deg"]
    if cache is not None and len(points) - 1 > _TREE_SEGMENTS:
        px, py = np.broadcast_arrays(np.asarray(px, dtype=float), np.asarray(py, dtype=float))
        return cache.polyline(points).distance(px.ravel(), py.ravel()).reshape(px.shape)
    return _polyline_distance(np.asarray(points, dtype=float), px, py)


def band_mask(feat: Mapping[str, Any], n: int = RASTER_DEFAULT) -> np.ndarray:
    """Boolean raster (n, n) of the feature's band; row index grows with +y, column index with +x.

    A pixel belongs to the band when its centre lies within ``width_deg / 2`` of the curve. Only the bounding
    box of the curve (widened by the half band) is evaluated.
    """
    c = pixel_centres(n)
    half = 0.5 * feat["width_deg"]
    if feat["kind"] == "freehand":
        return _polyline_band(np.asarray(feat["points_deg"], dtype=float), half, n)
    pts = curve_samples(feat, 4 * CURVE_POINTS)
    if feat["kind"] in ("circle", "arc"):
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


def chamfer_distance(
    a: Mapping[str, Any], b: Mapping[str, Any], n: int = CURVE_POINTS, cache: CurveCache | None = None
) -> float:
    """Symmetric mean nearest-point distance (deg) between two curves.

    ``0.5 * (mean over samples of a of their distance to curve b + the same from b to a)``, with ``n`` samples
    per curve and the exact distance to the other curve (analytic for circles and arcs, polyline otherwise).
    """
    if cache is None:
        sa, sb = curve_samples(a, n), curve_samples(b, n)
    else:
        sa, sb = cache.samples(a, n), cache.samples(b, n)
    dab = distance_to_curve(b, sa[:, 0], sa[:, 1], cache).mean()
    dba = distance_to_curve(a, sb[:, 0], sb[:, 1], cache).mean()
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

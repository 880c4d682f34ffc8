"""Freehand-heavy scoring is fast and gives the numbers of the original exhaustive implementation.

The reference numbers below were produced by the exhaustive implementation (every pixel and every
sample against every segment of every contour) before the k-d tree and per-segment raster searches
replaced it; that implementation took 38-112 s of CPU for this target, depending on machine load.
"""

import time

import numpy as np
from icl.patient.geometry import CurveCache, band_mask, distance_to_curve, pixel_centres
from icl.patient.schema import Predictions, _entry_error, _first_error, validate_reports
from icl.patient.scoring import score
from patient_fixtures import TARGET, freehand_target

EXHAUSTIVE = {
    "score": 65.9585471705267,
    "R1": {"S": 67.41731022901627, "iou": 0.36462913061977026, "C": 0.6516072502112727, "F": 1.0},
    "R2": {"S": 64.43293109739743, "iou": 0.3170766387032561, "C": 0.5974932774633596, "F": 1.0},
    "R3": {"S": 66.02540018516639, "iou": 0.34774680906486066, "C": 0.6157763911285982, "F": 1.0},
    "repeat_agreement": 72.80662754392746,
    "mean_chamfer_deg": 0.12742483820983594,
    "mean_abs_width_error_deg": 0.08337499999999999,
}


def test_eight_freehand_contours_of_2000_points_score_fast_and_unchanged():
    reports, preds = freehand_target()  # 3 repeats x 8 freehand features x 2,000 points
    t0 = time.process_time()
    assert _first_error("report", reports) is None
    rep = validate_reports(reports, "reference.json")
    p = Predictions("predictions.json")
    entry = preds["predictions"][0]
    assert _first_error("prediction", entry, "prediction") is None
    assert _entry_error(entry, 0, None, "predictions.json") is None
    p.valid[TARGET] = entry
    res = score(rep, p)
    cpu = time.process_time() - t0
    target = res["targets"][TARGET]
    assert target["score"] == EXHAUSTIVE["score"]
    for rid in ("R1", "R2", "R3"):
        for key, value in EXHAUSTIVE[rid].items():
            assert target["repeats"][rid][key] == value, (rid, key)
    assert res["repeat_agreement"]["mean_S"] == EXHAUSTIVE["repeat_agreement"]
    assert res["geometry"]["mean_chamfer_deg"] == EXHAUSTIVE["mean_chamfer_deg"]
    assert res["geometry"]["mean_abs_width_error_deg"] == EXHAUSTIVE["mean_abs_width_error_deg"]
    # A loose bound against a regression to the exhaustive search (38 s+);
    # the < 1 s goal is measured by bench/patient_scoring.py, not here.
    assert cpu < 5.0, f"{cpu:.2f} s of CPU"


def _exhaustive_distance(vertices, px, py):
    """Every point against every segment, with the scorer's expression (a zero-length segment: its start)."""
    x0, y0 = vertices[:-1, 0], vertices[:-1, 1]
    dx, dy = vertices[1:, 0] - x0, vertices[1:, 1] - y0
    ll = dx * dx + dy * dy
    safe = np.where(ll > 0, ll, 1.0)
    out = np.empty(px.size)
    for i in range(0, px.size, 128):
        qx, qy = px[i : i + 128, None], py[i : i + 128, None]
        t = np.where(ll > 0, np.clip(((qx - x0) * dx + (qy - y0) * dy) / safe, 0.0, 1.0), 0.0)
        out[i : i + 128] = np.hypot(qx - x0 - t * dx, qy - y0 - t * dy).min(axis=1)
    return out


def _hostile_contours():
    rng = np.random.default_rng(5)
    t = np.linspace(0.0, 6.0, 3001)
    jumps = rng.normal(0.0, 3.0, (700, 2))
    jumps[50:60] = jumps[50]  # a run of repeated vertices
    jumps[100], jumps[101] = [14.9, -14.9], [-16.0, 20.0]  # a long stroke leaving the frame
    return {
        "smooth ellipse-like, 3,000 segments": np.column_stack([3 * np.cos(t), 2 * np.sin(t)]),
        "random jumps with repeats": jumps,
        "random walk of 5,000 points": np.cumsum(rng.normal(0.0, 0.01, (5000, 2)), axis=0),
        "every vertex three times": np.repeat(rng.uniform(-5.0, 5.0, (130, 2)), 3, axis=0),
        "collinear": np.column_stack([np.linspace(-10.0, 10.0, 400), np.zeros(400)]),
        "tiny": np.round(rng.uniform(-1e-3, 1e-3, (600, 2)), 7),
        "almost all zero-length": np.vstack([np.zeros((300, 2)), [[1.0, 1.0]]]),
    }


def test_contour_distances_are_the_exhaustive_minimum_bit_for_bit():
    rng = np.random.default_rng(6)
    cache = CurveCache()
    for name, v in _hostile_contours().items():
        q = np.vstack(
            [
                rng.uniform(-16.0, 16.0, (400, 2)),  # far and near
                v[rng.integers(0, len(v), 200)],  # on vertices
                v[rng.integers(0, len(v) - 1, 200)] + 1e-12,  # next to them
                0.5 * (v[:200] + v[1:201]),  # on segments
            ]
        )
        want = _exhaustive_distance(v, q[:, 0], q[:, 1])
        feat = {"kind": "freehand", "points_deg": v.tolist(), "width_deg": 0.2}
        for use in (None, cache):  # the block hierarchy built per call and kept between calls
            got = distance_to_curve(feat, q[:, 0], q[:, 1], use)
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64)), name


def test_contour_band_rasters_are_the_exhaustive_test():
    c = pixel_centres(64)
    px, py = np.meshgrid(c, c)
    for name, v in _hostile_contours().items():
        exhaustive = _exhaustive_distance(v, px.ravel(), py.ravel()).reshape(px.shape)
        for half in (0.05, 0.6):
            want = exhaustive <= half
            feat = {"kind": "freehand", "points_deg": v.tolist(), "width_deg": 2 * half}
            assert np.array_equal(band_mask(feat, 64), want), (name, half)

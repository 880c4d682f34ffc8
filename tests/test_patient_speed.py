"""Freehand-heavy scoring is fast and gives the numbers of the original exhaustive implementation.

The reference numbers below were produced by the exhaustive implementation (every pixel and every
sample against every segment of every contour) before the k-d tree and per-segment raster searches
replaced it; that implementation took 38-112 s of CPU for this target, depending on machine load.
"""

import time

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
    # About 0.5 s on an idle core, 1.4 s with the machine loaded 10x; the exhaustive search took 38 s+.
    assert cpu < 5.0, f"{cpu:.2f} s of CPU"

"""Property tests of the scorers: identity, symmetry, bounds and monotonicity.

Halo: the reference scores 100 on every condition; a uniformly scaled-up answer never scores above it and
scores lower the more it is scaled. Patient: a report predicted by itself scores 100; IoU, the Chamfer
distance, and a report's IoU and F with prediction and reference exchanged are symmetric. Contest: a perfect
ranking gives every item area 1; the harmonic mean is symmetric in the three items and lies between them.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from icl.contest.pr import item_area
from icl.contest.safety import ITEMS, harmonic_mean, safety_score
from icl.halo.evaluate import load_release, score_condition
from icl.patient.geometry import band_mask, chamfer_distance
from icl.patient.scoring import MaskCache, _as_prediction, _iou, score_report
from test_halo_release import shared_release
from test_patient_helpers import record

FAST = settings(max_examples=15, deadline=None)


@pytest.fixture(scope="module")
def conditions(tmp_path_factory):
    return {c.id: c for _, conds in load_release(shared_release(tmp_path_factory)) for c in conds}


def test_halo_reference_scores_100_on_every_condition(conditions):
    assert len(conditions) == 28
    for cid, ref in conditions.items():
        doc = score_condition(ref, ref.components.copy())
        # exact: every error is 0 and exp(0) = 1; only the weighted sum of 1s rounds
        assert doc["score"] == pytest.approx(100.0, abs=1e-9), cid
        assert all(t["error"] == 0.0 for t in doc["terms"].values()), (cid, doc["terms"])


def test_halo_scaled_up_submissions_never_beat_the_reference(conditions):
    @FAST
    @given(st.sampled_from(sorted(c for c, r in conditions.items() if not r.zero_flux)),
           st.floats(1.0, 3.0), st.floats(1.0, 3.0))
    def check(cid, a, b):
        ref = conditions[cid]
        lo, hi = sorted((a, b))
        s_lo = score_condition(ref, lo * ref.components)["score"]
        s_hi = score_condition(ref, hi * ref.components)["score"]
        assert s_hi <= s_lo + 1e-9 <= 100.0 + 2e-9
        if hi > 1.0 + 1e-6:
            assert s_hi < 100.0

    check()


# --- patient -------------------------------------------------------------------------------------------

def _feature(kind, fid, src, cx, cy, r, ratio, w, rot, start, sweep):
    f = {"id": fid, "source_id": src, "kind": kind, "cx_deg": cx, "cy_deg": cy, "rx_deg": r, "width_deg": w}
    if kind == "ellipse":
        f.update(ry_deg=r * ratio, rotation_deg=rot)
    elif kind == "arc":
        f.update(start_deg=start, sweep_deg=sweep)
    return f


features = st.builds(_feature, st.sampled_from(["circle", "ellipse", "arc"]), st.just("F"),
                     st.sampled_from(["L1", "L2"]), st.floats(-4, 4), st.floats(-4, 4), st.floats(0.3, 4.0),
                     st.floats(0.5, 1.5), st.floats(0.1, 1.0), st.floats(-90, 90), st.floats(-180, 180),
                     st.floats(10, 360))
feature_lists = st.lists(features, min_size=0, max_size=3).map(
    lambda fs: [{**f, "id": f"F{i}"} for i, f in enumerate(fs)])
MASKS = MaskCache(64)  # the coarsest raster: properties hold at any size, and it keeps the test fast


@FAST
@given(feature_lists)
def test_patient_report_against_itself_scores_100(feats):
    rec = record(feats, presence="present" if feats else "absent")
    res = score_report(_as_prediction(rec), rec, MASKS)
    assert res["S"] == pytest.approx(100.0, abs=1e-9)
    assert res["iou"] == 1.0 and res["F"] == 1.0 and res["brier"] == 0.0


@FAST
@given(features, features)
def test_patient_iou_and_chamfer_are_symmetric(a, b):
    ma, mb = band_mask(a, 64), band_mask(b, 64)
    assert _iou(ma, mb) == _iou(mb, ma)
    assert 0.0 <= _iou(ma, mb) <= 1.0
    assert chamfer_distance(a, b) == pytest.approx(chamfer_distance(b, a), rel=1e-12, abs=1e-12)


@FAST
@given(feature_lists, feature_lists)
def test_patient_score_with_roles_exchanged_is_symmetric(fa, fb):
    # Both present with certainty: Brier is 0 either way; the union IoU, the number of matched pairs and
    # F are symmetric. (C is not asserted: among pairings of equal total IoU, e.g. all at IoU 0, the
    # assignment solver's choice depends on feature order, and with it the Chamfer term.)
    assume(fa and fb)
    ra, rb = record(fa), record(fb)
    ab = score_report(_as_prediction(ra), rb, MASKS)
    ba = score_report(_as_prediction(rb), ra, MASKS)
    assert ab["brier"] == ba["brier"] == 0.0
    for k in ("iou", "F", "matched"):
        assert ab[k] == ba[k], k


# --- contest -------------------------------------------------------------------------------------------

@FAST
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_contest_perfect_ranking_gives_area_one(n_pos, n_neg, seed):
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.uniform(0.6, 1.0, n_pos), rng.uniform(0.0, 0.5, n_neg)])
    labels = np.concatenate([np.ones(n_pos, int), np.zeros(n_neg, int)])
    order = rng.permutation(n_pos + n_neg)
    areas = {k: item_area(k, scores[order], labels[order]) for k in ITEMS}
    # Each area is a float64 sum of recall steps times precision 1 (divided by 0.45 for the partial
    # items): 1 to within two units in the last place (a sum of 1/n steps may land one ulp below 1).
    assert all(a.computable and a.value == pytest.approx(1.0, abs=4.5e-16) for a in areas.values()), areas
    s, rule = safety_score({k: a.value for k, a in areas.items()})
    assert rule is None and s == pytest.approx(1.0, abs=4.5e-16)


unit = st.floats(min_value=5e-324, max_value=1.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(unit, unit, unit)
def test_contest_harmonic_mean_symmetric_and_bounded(a, b, c):
    values = [a, b, c]
    h = harmonic_mean(values)
    for perm in itertools.permutations(values):
        # fsum is exactly rounded, so only the final division can differ between orders: not at all
        assert harmonic_mean(list(perm)) == h
        assert safety_score(dict(zip(ITEMS, perm, strict=True)))[0] == h
    assert min(values) <= h * (1 + 1e-15) and h <= max(values) * (1 + 1e-15)
    if a == b == c:
        assert h == pytest.approx(a, rel=1e-15)
    assert math.isfinite(h) and h > 0

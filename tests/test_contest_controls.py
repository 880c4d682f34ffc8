"""The four control groups of the contest rule plus its worked examples, checked against hand arithmetic."""

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from icl.contest import (
    ThresholdConfigError,
    clinical_weight,
    item_area,
    parse_thresholds,
    pr_curve,
    safety_score,
    safety_weight,
    total,
    total_unrounded,
)
from icl.contest.pr import precision_at_recall, precision_at_top_k, recall_at_fpr, step_area

# Areas are sums of a handful of exact fractions; float64 reproduces them to ~1e-16.
EXACT = 1e-12


def control_set():
    """10 forged (label 1) and 90 real (label 0) with hand-set scores.

    Ranked from the top, the forged cases sit at ranks 1, 3, 4, 8, 10, 20, 30, 40, 50, 100
    (rank k gets score 1 - k/1000, so there are no ties).
    """
    forged_ranks = [1, 3, 4, 8, 10, 20, 30, 40, 50, 100]
    ranks = np.arange(1, 101)
    scores = 1.0 - ranks / 1000.0
    labels = np.isin(ranks, forged_ranks).astype(int)
    return scores, labels


def test_control_1_counts_and_precisions_by_hand():
    s, y = control_set()
    c = pr_curve(s, y)
    assert (c.positives, c.negatives) == (10, 90)
    # Recall 5 %: first point with recall >= 0.05 is the 1st forged case at rank 1 -> 1/1.
    assert precision_at_recall(c, 0.05) == pytest.approx(1 / 1, abs=EXACT)
    # Recall 50 %: the 5th forged case, at rank 10 -> 5/10.
    assert precision_at_recall(c, 0.50) == pytest.approx(5 / 10, abs=EXACT)
    # Recall 100 %: the 10th forged case, at rank 100 -> 10/100.
    assert precision_at_recall(c, 1.00) == pytest.approx(10 / 100, abs=EXACT)


def test_control_1_partial_and_full_area_by_hand():
    s, y = control_set()
    # Step curve: precision on (0, .1] is 1/1, (.1, .2] 2/3, (.2, .3] 3/4, (.3, .4] 4/8, (.4, .5] 5/10.
    # Over [0.05, 0.50] the first step contributes only 0.05 of its width:
    hand_partial = 0.05 * (1 / 1) + 0.10 * (2 / 3) + 0.10 * (3 / 4) + 0.10 * (4 / 8) + 0.10 * (5 / 10)
    assert hand_partial == pytest.approx(0.2916666666666667, abs=EXACT)
    area = item_area("NH", s, y)
    assert area.kind == "partial" and area.interval == (0.05, 0.50)
    assert area.value == pytest.approx(hand_partial / 0.45, abs=EXACT)  # 0.648148...
    assert (area.positives, area.negatives) == (10, 90)
    # Full area (duplicate item): every step is 0.1 wide.
    hand_full = 0.1 * (1 / 1 + 2 / 3 + 3 / 4 + 4 / 8 + 5 / 10 + 6 / 20 + 7 / 30 + 8 / 40 + 9 / 50 + 10 / 100)
    assert item_area("DUP", s, y).value == pytest.approx(hand_full, abs=EXACT)  # 0.443...


def test_control_1_partial_differs_from_full_area():
    """The check the contest rules ask for: the script must not compute the full area for NH/SPL."""
    s, y = control_set()
    assert abs(item_area("SPL", s, y).value - item_area("DUP", s, y).value) > 0.2


def test_ties_enter_together_independent_of_order():
    # 2 forged and 2 real all tied at 0.5, then one forged at 0.9: points (1/3, 1), (3/3, 3/5).
    s = np.array([0.5, 0.5, 0.9, 0.5, 0.5])
    y = np.array([1, 0, 1, 0, 1])
    hand = 1 / 3 * 1.0 + 2 / 3 * (3 / 5)
    assert step_area(pr_curve(s, y)) == pytest.approx(hand, abs=EXACT)
    perm = np.array([4, 3, 2, 1, 0])
    assert step_area(pr_curve(s[perm], y[perm])) == pytest.approx(hand, abs=EXACT)


def test_threshold_metrics_by_hand():
    s, y = control_set()
    c = pr_curve(s, y)
    # FPR <= 10 % allows at most 9 of 90 real cases called forged; rank 14 holds the 9th real case
    # (ranks 2, 5, 6, 7, 9, 11, 12, 13, 14), by then 5 forged found -> recall 0.5.
    assert recall_at_fpr(c, 0.10) == pytest.approx(0.5, abs=EXACT)
    # Precision at 15 % recall: 2nd forged case at rank 3 -> 2/3.
    assert precision_at_recall(c, 0.15) == pytest.approx(2 / 3, abs=EXACT)
    # Top-20: forged at 1, 3, 4, 8, 10, 20 -> 6/20.
    assert precision_at_top_k(c, 20) == pytest.approx(6 / 20, abs=EXACT)


def test_control_2_zero_rule():
    s, why = safety_score({"NH": 1.0, "DUP": 1.0, "SPL": 0.0})
    assert s == 0.0 and why == "SPL = 0"
    assert s != pytest.approx(2 / 3)
    assert safety_score({"NH": 1.0, "DUP": 1.0})[0] == 0.0
    assert safety_score({"NH": 1.0, "DUP": None, "SPL": 1.0}) == (0.0, "DUP not computable")


def test_control_2_tiny_positive_item_does_not_underflow():
    s, why = safety_score({"NH": 1e-300, "DUP": 1.0, "SPL": 1.0})
    assert why is None
    # 3 / (1e300 + 2) = 3e-300 to float64 precision.
    assert s == pytest.approx(3e-300, rel=1e-15)
    # Subnormal input: the naive 1/x overflows to inf and would give 0.
    s_sub, _ = safety_score({"NH": 5e-324, "DUP": 1.0, "SPL": 1.0})
    assert s_sub > 0.0


def test_control_3_monotone_weights():
    grid = [k / 10 for k in range(11)]
    ws = [safety_weight(s) for s in grid]
    wc = [clinical_weight(s) for s in grid]
    assert ws[0] == pytest.approx(0.4, abs=1e-15) and ws[-1] == pytest.approx(0.2, abs=1e-15)
    assert all(a >= b for a, b in zip(ws, ws[1:], strict=False))
    assert all(a <= b for a, b in zip(wc, wc[1:], strict=False))
    # w_c is defined as 1 - w_s; float64 addition returns 1 to within one ulp.
    assert all(abs(a + b - 1.0) <= 2**-52 for a, b in zip(ws, wc, strict=True))


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1))
def test_control_3_total_rounds_only_at_the_end(s, c):
    raw = total_unrounded(s, c)
    assert abs(total(s, c) - raw) <= 0.005 + 1e-9
    assert 0.0 <= total(s, c) <= 100.0


def test_worked_example_76_20():
    # w_s = 0.2 + 0.2 * 0.2 = 0.24; w_c = 0.76; T = 100 (0.8 * 0.24 + 0.75 * 0.76) = 19.2 + 57.0
    assert safety_weight(0.8) == pytest.approx(0.24, abs=1e-15)
    assert total(0.8, 0.75) == 76.20


def test_harmonic_example_054():
    s, _ = safety_score({"NH": 0.9, "DUP": 0.9, "SPL": 0.3})
    # 3 / (1/0.9 + 1/0.9 + 1/0.3) = 3 / (10/9 + 10/9 + 30/9) = 27/50
    assert round(s, 4) == 0.5400
    assert s < (0.9 + 0.9 + 0.3) / 3


PLACEHOLDERS = st.one_of(
    st.text(max_size=8),
    st.none(),
    st.just(0),
    st.just(0.0),
    st.floats(max_value=0.0),
    st.floats(min_value=1.0, exclude_min=True),
    st.just(float("nan")),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(PLACEHOLDERS)
def test_control_4_gate_refuses_placeholders_and_zero(value):
    doc = {"published": True, "thresholds": [{"item": "NH", "metric": "area", "min": value}]}
    with pytest.raises(ThresholdConfigError) as err:
        parse_thresholds(doc, "thr.json")
    assert err.value.file == "thr.json" and err.value.field == "thresholds[0].min"


def test_control_4_misconfiguration_is_logged_loudly(caplog):
    with caplog.at_level(logging.ERROR, logger="icl.contest"), pytest.raises(ThresholdConfigError):
        parse_thresholds({"published": True, "thresholds": [{"item": "S", "min": 0}]}, "thr.json")
    assert any(r.levelno == logging.ERROR and "threshold" in r.getMessage() for r in caplog.records)


def test_control_4_unpublished_is_not_rankable_and_guessed_value_refused():
    th = parse_thresholds({"published": False, "thresholds": [{"item": "NH", "metric": "area", "min": None}]})
    assert not th.published
    with pytest.raises(ThresholdConfigError):
        parse_thresholds({"published": False, "thresholds": [{"item": "NH", "metric": "area", "min": 0.4}]})


def test_published_thresholds_parse():
    th = parse_thresholds(
        {
            "published": True,
            "thresholds": [
                {"item": "NH", "metric": "recall_at_fpr", "at": 0.10, "min": 0.5},
                {"item": "DUP", "metric": "precision_at_top_k", "at": 20, "min": 0.25},
                {"item": "S", "min": 0.3},
            ],
        }
    )
    assert [r.describe() for r in th.rules] == [
        "NH recall_at_fpr@0.1 >= 0.5",
        "DUP precision_at_top_k@20 >= 0.25",
        "S value >= 0.3",
    ]
    assert math.isclose(th.rules[0].minimum, 0.5)

"""Contest safety score : item areas, safety score S, dynamic weights, gate and ranking."""

from icl.contest.gate import (
    NOT_RANKABLE,
    RANKABLE,
    UNPUBLISHED,
    GateResult,
    Threshold,
    ThresholdConfigError,
    Thresholds,
    gate,
    parse_thresholds,
)
from icl.contest.pr import INTERPOLATION, ItemArea, NotComputable, item_area, pr_curve, step_area
from icl.contest.rank import rank_records, refuse_safety_rank
from icl.contest.safety import (
    clinical_weight,
    harmonic_mean,
    round2,
    safety_score,
    safety_weight,
    total,
    total_unrounded,
)
from icl.contest.scoring import score_result

__all__ = [
    "INTERPOLATION",
    "NOT_RANKABLE",
    "RANKABLE",
    "UNPUBLISHED",
    "GateResult",
    "ItemArea",
    "NotComputable",
    "Threshold",
    "ThresholdConfigError",
    "Thresholds",
    "clinical_weight",
    "gate",
    "harmonic_mean",
    "item_area",
    "parse_thresholds",
    "pr_curve",
    "rank_records",
    "refuse_safety_rank",
    "round2",
    "safety_score",
    "safety_weight",
    "score_result",
    "step_area",
    "total",
    "total_unrounded",
]

"""Score predictions against patient reports (definitions and reasons: ``docs/patient.md``).

Per report ``S = 100 * [0.20 (1 - Brier) + 0.40 IoU + 0.20 C + 0.20 F]``; repeats are averaged within a
target, targets within a patient, and patients weigh equally. Eligible targets without a valid prediction
score 0 and stay in the denominator. Everything else (radius intervals, symptom grades, 8-direction
brightness, geometry errors, repeat-to-repeat agreement) is reported beside the score and never enters it.
"""

from __future__ import annotations

import math
import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from icl.errors import InputError
from icl.patient.geometry import (
    CURVE_POINTS,
    FRAME_DEG,
    RASTER_DEFAULT,
    RASTER_MAX,
    RASTER_MIN,
    CurveCache,
    band_mask,
    chamfer_distance,
    curve_samples,
    distance_to_curve,
    inside_frame,
)
from icl.patient.schema import UNCERTAIN, Predictions, Reports, point_radius

WEIGHTS = {"brier": 0.20, "iou": 0.40, "C": 0.20, "F": 0.20}
DISTANCE_SCALE_DEG = 0.25  # prototype sensitivity scale of C, not a clinical just-noticeable difference
INTERVAL_NOMINAL = 0.80
INTERVAL_PENALTY = 2.0 / (1.0 - INTERVAL_NOMINAL)  # = 10, the proper interval score factor 2/alpha
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261027
PRESENCE_THRESHOLD = 0.5
MEASURED_STIMULUS = (
    "source_luminance_cd_m2",
    "ambient_lux",
    "adaptation_min",
    "source_distance_m",
    "source_diameter_mm",
    "postop_days",
)
SYMPTOMS = ("visibility", "bother", "impact_7d")
UNMATCHED_COST = 1.0
TIE_BREAK = 1e-9
_FORBIDDEN = 1e6


_NOT_GEOMETRY = ("id", "source_id", "confirmed", "brightness8", "radius_interval_deg")


class MaskCache:
    """Band rasters keyed by the feature's geometry, so a feature met in many pairings is rasterised once."""

    def __init__(self, n: int, share: MaskCache | None = None):
        self.n = n
        self._masks: dict[str, np.ndarray] = {}
        # Curve distances do not depend on the raster: a finer cache reuses those of ``share``.
        self.curves = share.curves if share is not None else CurveCache()
        self._chamfer = share._chamfer if share is not None else {}
        # The same feature object is met in every pairing: its key is computed once (a freehand
        # contour's key is a long string). The object is kept so that its id stays its own.
        self._by_object: dict[int, tuple[Mapping[str, Any], np.ndarray]] = {}

    def __call__(self, feat: Mapping[str, Any]) -> np.ndarray:
        """Return the band raster of ``feat``."""
        hit = self._by_object.get(id(feat))
        if hit is not None and hit[0] is feat:
            return hit[1]
        prepared = self.curves.prepared(feat)  # a contour's points as an array, converted once per run
        shape = {k: v for k, v in prepared.items() if k not in _NOT_GEOMETRY}
        if "points_deg" in shape:  # a long contour: its digest, not its text, is the key
            pts = np.ascontiguousarray(shape.pop("points_deg"), dtype=np.float64)
            shape["points_sha256"] = hashlib.sha256(pts.tobytes() + repr(pts.shape).encode()).hexdigest()
        key = json.dumps(shape, sort_keys=True)
        if key not in self._masks:
            self._masks[key] = band_mask(prepared, self.n)
        self._by_object[id(feat)] = (feat, self._masks[key])
        return self._masks[key]

    def prepare_chamfers(self, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        """Compute the Chamfer distances of many pairs with one distance query per curve.

        Each curve is asked once for the distances of all the samples paired with it; every number is
        the one :func:`chamfer_distance` gives for the pair alone (each point's distance is computed on
        its own, and each pair's mean is over the same 128 values).
        """
        todo = [(a, b) for a, b in pairs if not self._cached(a, b)]
        if not todo:
            return
        queries: dict[int, tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = {}
        for a, b in todo:
            queries.setdefault(id(b), (b, []))[1].append(a)
            queries.setdefault(id(a), (a, []))[1].append(b)
        means: dict[tuple[int, int], float] = {}
        for curve, others in queries.values():
            pts = np.vstack([self.curves.samples(o, CURVE_POINTS) for o in others])
            d = distance_to_curve(curve, pts[:, 0], pts[:, 1], self.curves).reshape(len(others), -1)
            for o, row in zip(others, d, strict=True):
                means[(id(o), id(curve))] = row.mean()
        for a, b in todo:
            value = float(0.5 * (means[(id(a), id(b))] + means[(id(b), id(a))]))
            self._chamfer[self._key(a, b)] = (a, b, value)

    @staticmethod
    def _key(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[int, int]:
        return (id(a), id(b)) if id(a) <= id(b) else (id(b), id(a))

    def _cached(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        hit = self._chamfer.get(self._key(a, b))
        return hit is not None and ((hit[0] is a and hit[1] is b) or (hit[0] is b and hit[1] is a))

    def chamfer(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
        """:func:`chamfer_distance` of two features, computed once per pair (it is symmetric)."""
        if not self._cached(a, b):
            self._chamfer[self._key(a, b)] = (a, b, chamfer_distance(a, b, cache=self.curves))
        return self._chamfer[self._key(a, b)][2]


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.count_nonzero(a | b)
    return float(np.count_nonzero(a & b) / union) if union else 1.0


def match_features(
    pred: Sequence[Mapping[str, Any]], ref: Sequence[Mapping[str, Any]], masks: MaskCache
) -> list[tuple[int, int, float]]:
    """Exact minimum-cost matching of predicted to reference features.

    A pair costs ``1 - IoU`` of the two single-feature bands and exists only when both name the same source; a
    feature left unmatched costs 1. Ties in IoU are broken by the curves' mean distance (weight < 1e-9), so
    the matching does not depend on the order of the features. Solved on the usual square extension (real
    pairs, one "unmatched" slot per feature) with :func:`scipy.optimize.linear_sum_assignment`.

    Returns
    -------
    list of (pred index, ref index, single-feature IoU)

    """
    npred, nref = len(pred), len(ref)
    if npred == 0 or nref == 0:
        return []
    masks.prepare_chamfers(
        [
            (p, r)
            for p in pred
            for r in ref
            if p["source_id"] == r["source_id"] and p["source_id"] != UNCERTAIN
        ]
    )
    size = npred + nref
    cost = np.full((size, size), _FORBIDDEN)
    ious = np.zeros((npred, nref))
    for i, p in enumerate(pred):
        for j, r in enumerate(ref):
            if p["source_id"] == r["source_id"] and p["source_id"] != UNCERTAIN:
                ious[i, j] = _iou(masks(p), masks(r)) if (masks(p).any() or masks(r).any()) else 0.0
                # Pairs of equal IoU (e.g. none overlapping) go to the nearest curves, not to list order:
                # a tie-break below 1e-9, far under any IoU difference a raster can resolve.
                d = masks.chamfer(p, r)
                cost[i, j] = 1.0 - ious[i, j] + TIE_BREAK * d / (1.0 + d)
    cost[np.arange(npred), nref + np.arange(npred)] = UNMATCHED_COST
    cost[npred + np.arange(nref), np.arange(nref)] = UNMATCHED_COST
    cost[npred:, nref:] = 0.0
    rows, cols = linear_sum_assignment(cost)
    return [
        (int(i), int(j), float(ious[i, j]))
        for i, j in zip(rows, cols, strict=True)
        if i < npred and j < nref and cost[i, j] < _FORBIDDEN
    ]


def _centre(feat: Mapping[str, Any]) -> tuple[float, float] | None:
    return None if feat["kind"] == "freehand" else (feat["cx_deg"], feat["cy_deg"])


def _radii(feat: Mapping[str, Any]) -> tuple[float, float] | None:
    if feat["kind"] == "freehand":
        return None
    return feat["rx_deg"], feat.get("ry_deg", feat["rx_deg"])


def _pair_details(p: Mapping[str, Any], r: Mapping[str, Any], iou: float, masks: MaskCache) -> dict[str, Any]:
    d = masks.chamfer(p, r)
    out: dict[str, Any] = {
        "pred_id": p["id"],
        "ref_id": r["id"],
        "source_id": r["source_id"],
        "iou": iou,
        "chamfer_deg": d,
        "c": math.exp(-d / DISTANCE_SCALE_DEG),
        "width_error_deg": p["width_deg"] - r["width_deg"],
        "centre_error_deg": None,
        "rx_error_deg": None,
        "ry_error_deg": None,
    }
    cp, cr = _centre(p), _centre(r)
    if cp and cr:
        out["centre_error_deg"] = float(np.hypot(cp[0] - cr[0], cp[1] - cr[1]))
        (pxr, pyr), (rxr, ryr) = _radii(p), _radii(r)
        out["rx_error_deg"], out["ry_error_deg"] = pxr - rxr, pyr - ryr
    if "radius_interval_deg" in p and r["kind"] != "freehand":
        lo, hi = p["radius_interval_deg"]
        rad = point_radius(r)
        out["interval"] = {
            "covered": bool(lo <= rad <= hi),
            "width_deg": hi - lo,
            "interval_score": (hi - lo)
            + INTERVAL_PENALTY * max(lo - rad, 0.0)
            + INTERVAL_PENALTY * max(rad - hi, 0.0),
        }
    if r.get("brightness8") is not None:
        known = [k for k, v in enumerate(r["brightness8"]) if v is not None]
        pb = p.get("brightness8")
        both = [k for k in known if pb is not None and pb[k] is not None]
        if known:
            out["brightness8"] = {
                "coverage": len(both) / len(known),
                "normalised_mae": (
                    float(np.mean([abs(pb[k] - r["brightness8"][k]) for k in both])) / 4.0 if both else None
                ),
            }
    return out


def score_report(pred: Mapping[str, Any], rec: Mapping[str, Any], masks: MaskCache) -> dict[str, Any]:
    """Score one prediction entry against one report record whose presence is ``present`` or ``absent``.

    Returns
    -------
    dict
        ``S`` and its parts ``brier``, ``iou``, ``C``, ``F``, the match count and per-pair details.

    """
    y = 1.0 if rec["presence"] == "present" else 0.0
    prob = float(pred["presence_probability"])
    brier = (prob - y) ** 2
    pf = list(pred["features"]) if prob >= PRESENCE_THRESHOLD else []
    rf = list(rec["features"])
    n = masks.n
    up = np.zeros((n, n), dtype=bool)
    ur = np.zeros((n, n), dtype=bool)
    for f in pf:
        up |= masks(f)
    for f in rf:
        ur |= masks(f)
    iou = _iou(up, ur)
    pairs = [_pair_details(pf[i], rf[j], v, masks) for i, j, v in match_features(pf, rf, masks)]
    m, denom = len(pairs), max(len(pf), len(rf))
    c = sum(p["c"] for p in pairs) / denom if denom else 1.0
    f1 = 2 * m / (len(pf) + len(rf)) if denom else 1.0
    s = 100.0 * (WEIGHTS["brier"] * (1 - brier) + WEIGHTS["iou"] * iou + WEIGHTS["C"] * c + WEIGHTS["F"] * f1)
    return {
        "S": s,
        "brier": brier,
        "iou": iou,
        "C": c,
        "F": f1,
        "n_pred": len(pf),
        "n_ref": len(rf),
        "matched": m,
        "pairs": pairs,
    }


def record_exclusions(rec: Mapping[str, Any], masks: MaskCache) -> list[str]:
    """List the reasons that keep a record out of the main score (empty when it is eligible)."""
    why = []
    presence = rec["presence"]
    if presence in ("unsure", "no_answer"):
        why.append(f"presence_{presence}")
    st = rec["status"]
    for flag in ("draft", "recall", "range_clipped", "calibration_changed"):
        if st[flag]:
            why.append(flag)
    if rec["procedure"] != "external_source":
        why.append("screen_match")
    if not rec["consent"]["formal_consent"]:
        why.append("no_formal_consent")
    if not rec["consent"]["deidentified"]:
        why.append("not_deidentified")
    if not st["features_confirmed"] or any(not f["confirmed"] for f in rec["features"]):
        why.append("features_unconfirmed")
    if not st["geometry_checked"]:
        why.append("geometry_unchecked")
    if not st["independent_confirmation"]:
        why.append("no_independent_confirmation")
    cal = rec["calibration"]
    if cal["ruler_mm"] is None or cal["viewing_distance_mm"] is None:
        why.append("not_calibrated")
    stim = rec["stimulus"]
    if any(stim[k] is None for k in MEASURED_STIMULUS):
        why.append("unmeasured_stimulus")
    if rec["condition_id"] == "P03" and (
        stim.get("gaze_deg") is None
        or any(s.get("world_x_deg") is None or s.get("world_y_deg") is None for s in stim["sources"])
    ):
        why.append("p03_world_source_or_gaze_unknown")  # the condition is defined by them
    if rec["condition_id"] == "P05" and stim.get("held_constant") is None:
        why.append("p05_held_constant_unknown")  # luminance or total flux: the prediction depends on which
    if presence == "present" and not rec["features"]:
        why.append("present_without_features")
    if any(f["source_id"] == UNCERTAIN for f in rec["features"]):
        why.append("source_uncertain")
    limit = min(rec["frame"]["limit_deg"], FRAME_DEG)
    if any(abs(s["x_deg"]) > limit or abs(s["y_deg"]) > limit for s in stim["sources"]):
        why.append("source_outside_frame")
    if not all(inside_frame(masks.curves.prepared(f), limit) for f in rec["features"]):
        why.append("feature_outside_frame")
    elif any(not masks(f).any() for f in rec["features"]):
        why.append("reference_without_pixels")
    return why


def _target_signature(rec: Mapping[str, Any]) -> str:
    return json.dumps({"frame": rec["frame"], "stimulus": rec["stimulus"]}, sort_keys=True)


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _hierarchical(values: Mapping[str, Mapping[str, Sequence[float]]]) -> float | None:
    """Mean over patients of the mean over targets of the mean over repeats (empty levels are skipped)."""
    per_patient = []
    for targets in values.values():
        t = [float(np.mean(v)) for v in targets.values() if len(v)]
        if t:
            per_patient.append(float(np.mean(t)))
    return _mean(per_patient)


def bootstrap_ci(
    patient_scores: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> list[float] | None:
    """Percentile 95 % interval of the patient macro mean, resampling patients; None under 2 patients."""
    s = np.asarray(patient_scores, dtype=float)
    if s.size < 2:
        return None
    rng = np.random.default_rng(seed)
    means = s[rng.integers(0, s.size, size=(resamples, s.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return [float(lo), float(hi)]


def _as_prediction(rec: Mapping[str, Any]) -> dict[str, Any]:
    return {"presence_probability": 1.0 if rec["presence"] == "present" else 0.0, "features": rec["features"]}


def score(reports: Reports, predictions: Predictions, raster_n: int = RASTER_DEFAULT) -> dict[str, Any]:
    """Score a prediction set against a report set.

    Parameters
    ----------
    reports : Reports
        Validated reference reports (one ``data_kind``).
    predictions : Predictions
        Validated predictions; invalid entries carry their reason.
    raster_n : int
        Raster size per axis of the fixed +/-15 deg frame, 64 to 512.

    Returns
    -------
    dict
        The score document (see ``docs/patient.md``).

    """
    if not RASTER_MIN <= raster_n <= RASTER_MAX:
        raise InputError(f"raster size {raster_n} outside {RASTER_MIN}-{RASTER_MAX}", None, "raster_n")
    masks = MaskCache(raster_n)
    fine = MaskCache(min(2 * raster_n, RASTER_MAX), share=masks) if raster_n < RASTER_MAX else None
    excluded_records, excluded_targets = [], []
    reasons: Counter[str] = Counter()
    eligible: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for tid, recs in sorted(reports.targets.items()):
        if len({_target_signature(r) for r in recs}) > 1:
            excluded_targets.append({"target_id": tid, "reason": "inconsistent_metadata"})
            reasons["inconsistent_metadata"] += len(recs)
            continue
        good = []
        for rec in recs:
            why = record_exclusions(rec, masks)
            if why:
                excluded_records.append({"target_id": tid, "repeat_id": rec["repeat_id"], "reasons": why})
                reasons.update(why)
            else:
                good.append(rec)
        if len(good) < 2:
            excluded_targets.append(
                {"target_id": tid, "reason": "fewer_than_2_repeats", "eligible_repeats": len(good)}
            )
            reasons["fewer_than_2_repeats"] += len(good)
            continue
        eligible[recs[0]["patient_id"]][tid] = good

    missing = []
    s_vals: dict[str, dict[str, list[float]]] = defaultdict(dict)
    comp: dict[str, dict[str, dict[str, list[float]]]] = {
        k: defaultdict(dict) for k in ("brier", "iou", "C", "F")
    }
    sym: dict[str, dict[str, dict[str, list[float]]]] = {k: defaultdict(dict) for k in SYMPTOMS}
    agree: dict[str, dict[str, list[float]]] = defaultdict(dict)
    targets_out: dict[str, Any] = {}
    pairs_all: list[dict[str, Any]] = []
    thin_checks: list[float] = []
    fine_reasons: Counter[str] = Counter()
    for pid, tgts in sorted(eligible.items()):
        for tid, recs in sorted(tgts.items()):
            agree[pid][tid] = [
                score_report(_as_prediction(a), b, masks)["S"] for a in recs for b in recs if a is not b
            ]
            pred = predictions.valid.get(tid)
            if pred is None:
                reason = predictions.fatal or predictions.invalid.get(tid, "no prediction for this target")
                missing.append({"target_id": tid, "reason": reason})
                s_vals[pid][tid] = [0.0]
                targets_out[tid] = {"score": 0.0, "reason": reason}
                continue
            reps = {}
            for rec in recs:
                r = score_report(pred, rec, masks)
                reps[rec["repeat_id"]] = r
                pairs_all.extend(r["pairs"])
                for k in comp:
                    comp[k][pid].setdefault(tid, []).append(r[k])
                for k in SYMPTOMS:
                    pv, rv = (pred.get("symptoms") or {}).get(k), rec["symptoms"][k]
                    if pv is not None and rv is not None:
                        sym[k][pid].setdefault(tid, []).append(abs(pv - rv))
                why_fine = fine_check_reasons(pred, rec, raster_n, masks.curves) if fine is not None else []
                if why_fine:
                    fine_reasons.update(why_fine)
                    thin_checks.append(abs(score_report(pred, rec, fine)["iou"] - r["iou"]))
            s_vals[pid][tid] = [r["S"] for r in reps.values()]
            targets_out[tid] = {"score": float(np.mean(s_vals[pid][tid])), "repeats": reps}

    patient_scores = {
        pid: float(np.mean([np.mean(v) for v in t.values()])) for pid, t in sorted(s_vals.items())
    }
    overall = _mean(list(patient_scores.values()))
    n_records = sum(len(v) for v in reports.targets.values())
    return {
        "schema_version": "0.4.0-patient-draft",
        "data_kind": reports.data_kind,
        "fictional": reports.fictional,
        "patient_perception_score": overall,
        "ci95_patient_bootstrap": bootstrap_ci(list(patient_scores.values())),
        "clinical_score": None,
        "mechanistic_understanding_score": None,
        "validated_instrument": False,
        "components": {k: _hierarchical(v) for k, v in comp.items()},
        "counts": {
            "records": n_records,
            "targets": len(reports.targets),
            "eligible_patients": len(eligible),
            "eligible_targets": sum(len(t) for t in eligible.values()),
            "eligible_repeats": sum(len(r) for t in eligible.values() for r in t.values()),
            "excluded_records": n_records - sum(len(r) for t in eligible.values() for r in t.values()),
            "missing_or_invalid_targets": len(missing),
            "matched_pairs": len(pairs_all),
        },
        "exclusions": {
            "by_reason": dict(sorted(reasons.items())),
            "targets": excluded_targets,
            "records": excluded_records,
        },
        "missing_or_invalid": missing,
        "invalid_predictions_for_unknown_targets": {
            k: v for k, v in sorted(predictions.invalid.items()) if k not in targets_out
        },
        "patients": patient_scores,
        "targets": targets_out,
        "radius_interval": _interval_summary(pairs_all),
        "symptoms_mae": {
            k: {"mae": _hierarchical(v), "n": sum(len(x) for t in v.values() for x in t.values())}
            for k, v in sym.items()
        },
        "brightness8": _brightness_summary(pairs_all),
        "geometry": _geometry_summary(pairs_all),
        "repeat_agreement": {
            "mean_S": _hierarchical(agree),
            "note": "context only: ordered pairs of eligible repeats scored against each other",
        },
        "raster_check": {
            "raster_n": raster_n,
            "fine_n": fine.n if fine else None,
            "reports_rechecked": len(thin_checks),
            "reasons": dict(sorted(fine_reasons.items())),
            "max_abs_iou_difference": max(thin_checks) if thin_checks else None,
        },
        "selection_bias": selection_bias(reports, eligible),
        "parameters": {
            "raster_n": raster_n,
            "frame_deg": FRAME_DEG,
            "weights": WEIGHTS,
            "distance_scale_deg": DISTANCE_SCALE_DEG,
            "curve_points": CURVE_POINTS,
            "presence_threshold": PRESENCE_THRESHOLD,
            "interval_nominal": INTERVAL_NOMINAL,
            "interval_penalty": INTERVAL_PENALTY,
            "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
            "bootstrap_seed": BOOTSTRAP_SEED,
        },
    }


FINE_WIDTH_PX = 2.0  # a band narrower than this many pixels
FINE_EXTENT_PX = 4.0  # a structure whose curve spans fewer pixels than this
FINE_AXIS_RATIO = 3.0  # an ellipse this elongated (eccentricity >= 0.94)


def fine_check_reasons(
    pred: Mapping[str, Any], rec: Mapping[str, Any], n: int, curves: CurveCache | None = None
) -> list[str]:
    """Why a report is re-scored on the finer raster: where the raster size matters most.

    Thin bands (narrower than ``FINE_WIDTH_PX`` pixels), tiny structures (a curve spanning fewer than
    ``FINE_EXTENT_PX`` pixels) and very eccentric ellipses (axis ratio at least ``FINE_AXIS_RATIO``,
    or a minor semi-axis under ``FINE_WIDTH_PX`` pixels), in the prediction or the report. ``curves``
    keeps the contours' point arrays of a scoring run; the answer does not depend on it.
    """
    pitch = 2 * FRAME_DEG / n
    why = set()
    for f in list(pred["features"]) + list(rec["features"]):
        f = curves.prepared(f) if curves is not None else f
        if f["width_deg"] < FINE_WIDTH_PX * pitch:
            why.add("thin_band")
        pts = curve_samples(f) if f["kind"] != "freehand" else np.asarray(f["points_deg"], dtype=float)
        if np.ptp(pts, axis=0).max() < FINE_EXTENT_PX * pitch:
            why.add("tiny_structure")
        if f["kind"] == "ellipse":
            lo, hi = sorted((f["rx_deg"], f["ry_deg"]))
            if hi >= FINE_AXIS_RATIO * lo or lo < FINE_WIDTH_PX * pitch:
                why.add("eccentric_ellipse")
    return sorted(why)


def selection_bias(
    reports: Reports, eligible: Mapping[str, Mapping[str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    """Compare the records the exclusions keep with those they drop.

    Excluded reports are not "no halo": if exclusions fall mostly on one kind of report (those that saw
    something, one condition, one patient), the score describes a selected subset. Reported: the
    share of ``present`` reports in each group with Fisher's exact test, mean symptom grades, the
    excluded share per condition and per patient, and warnings when a difference is large.
    """
    from scipy.stats import fisher_exact

    kept = {(r["target_id"], r["repeat_id"]) for t in eligible.values() for recs in t.values() for r in recs}
    groups: dict[str, list[dict[str, Any]]] = {"eligible": [], "excluded": []}
    for rec in reports.records:
        groups["eligible" if (rec["target_id"], rec["repeat_id"]) in kept else "excluded"].append(rec)

    def present_share(recs: list[dict[str, Any]]) -> tuple[int, int]:
        known = [r for r in recs if r["presence"] in ("present", "absent")]
        return sum(r["presence"] == "present" for r in known), len(known)

    (pe, ne), (px, nx) = present_share(groups["eligible"]), present_share(groups["excluded"])
    fisher_p = None
    if ne and nx:
        fisher_p = float(fisher_exact([[pe, ne - pe], [px, nx - px]])[1])
    warnings = []
    if fisher_p is not None and fisher_p < 0.05:
        warnings.append(
            f"presence differs between eligible ({pe}/{ne}) and excluded ({px}/{nx}) reports (Fisher p = "
            f"{fisher_p:.3g}): the score describes a selected subset"
        )

    def share_by(key: str) -> dict[str, float]:
        out = {}
        for value in sorted({r[key] for r in reports.records}):
            recs = [r for r in reports.records if r[key] == value]
            out[value] = sum((r["target_id"], r["repeat_id"]) not in kept for r in recs) / len(recs)
        return out

    by_condition, by_patient = share_by("condition_id"), share_by("patient_id")
    overall = len(groups["excluded"]) / len(reports.records) if reports.records else 0.0
    for name, shares in (("condition", by_condition), ("patient", by_patient)):
        for value, share in shares.items():
            if share == 1.0:
                warnings.append(f"{name} {value}: every record excluded, it is absent from the score")
            elif share >= 0.5 and share > 2 * overall:
                warnings.append(f"{name} {value}: {share:.0%} of records excluded (overall {overall:.0%})")
    symptoms = {
        k: {
            g: _mean([r["symptoms"][k] for r in recs if r["symptoms"].get(k) is not None])
            for g, recs in groups.items()
        }
        for k in SYMPTOMS
    }
    return {
        "records": {g: len(recs) for g, recs in groups.items()},
        "present_share": {
            "eligible": pe / ne if ne else None,
            "excluded": px / nx if nx else None,
            "fisher_exact_p": fisher_p,
        },
        "symptom_means": symptoms,
        "excluded_share_by_condition": by_condition,
        "excluded_share_by_patient": by_patient,
        "warnings": warnings,
    }


def _interval_summary(pairs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    iv = [p["interval"] for p in pairs if "interval" in p]
    return {
        "n": len(iv),
        "nominal": INTERVAL_NOMINAL,
        "coverage": _mean([float(x["covered"]) for x in iv]),
        "mean_width_deg": _mean([x["width_deg"] for x in iv]),
        "mean_interval_score": _mean([x["interval_score"] for x in iv]),
        "matched_pairs_without_interval": sum(1 for p in pairs if "interval" not in p),
    }


def _brightness_summary(pairs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    b = [p["brightness8"] for p in pairs if "brightness8" in p]
    return {
        "n_pairs": len(b),
        "coverage": _mean([x["coverage"] for x in b]),
        "normalised_mae": _mean([x["normalised_mae"] for x in b if x["normalised_mae"] is not None]),
    }


def _geometry_summary(pairs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    def mean_abs(key: str) -> float | None:
        return _mean([abs(p[key]) for p in pairs if p[key] is not None])

    return {
        "n_pairs": len(pairs),
        "mean_centre_error_deg": mean_abs("centre_error_deg"),
        "mean_abs_rx_error_deg": mean_abs("rx_error_deg"),
        "mean_abs_ry_error_deg": mean_abs("ry_error_deg"),
        "mean_abs_width_error_deg": mean_abs("width_error_deg"),
        "mean_chamfer_deg": mean_abs("chamfer_deg"),
    }

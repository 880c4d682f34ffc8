"""Report and prediction objects built in memory for the patient-layer tests (no files needed)."""

from __future__ import annotations

import copy

import numpy as np

TARGET = "SYN-900|V1|OD|P01"


def base_record(repeat: str = "R1", condition: str = "P01") -> dict:
    """One eligible, fully measured record of patient SYN-900 (no features yet)."""
    return {
        "answers": {f"{condition}.presence": {"code": "answered", "value": "yes"}},
        "calibration": {
            "area_css_px": [760, 600],
            "ruler_css_px": 200,
            "ruler_mm": 52.9,
            "viewing_distance_mm": 500.0,
        },
        "condition_id": condition,
        "consent": {"deidentified": True, "formal_consent": True},
        "data_kind": "synthetic",
        "eye": "OD",
        "features": [],
        "frame": {"limit_deg": 15, "origin": "fixation", "unit": "deg", "x_axis": "right", "y_axis": "up"},
        "free_text": "FICTIONAL",
        "patient_id": "SYN-900",
        "presence": "present",
        "procedure": "external_source",
        "repeat_id": repeat,
        "status": {
            "calibration_changed": False,
            "draft": False,
            "features_confirmed": True,
            "geometry_checked": True,
            "independent_confirmation": True,
            "range_clipped": False,
            "recall": False,
        },
        "stimulus": {
            "adaptation_min": 10.0,
            "ambient_lux": 1.0,
            "gaze_deg": None,
            "held_constant": None,
            "optical_state_id": "FICTIONAL-SYN-900-OD",
            "postop_days": 90,
            "protocol_id": "T",
            "source_diameter_mm": 8.727,
            "source_distance_m": 5.0,
            "source_luminance_cd_m2": 20000.0,
            "sources": [{"angular_diameter_deg": 0.1, "id": "L1", "x_deg": 0.0, "y_deg": 0.0}],
            "viewing_eye": "OD",
        },
        "symptoms": {"bother": 1, "impact_7d": 0, "visibility": 4},
        "target_id": f"SYN-900|V1|OD|{condition}",
        "visit_id": "V1",
    }


def freehand(rng: np.random.Generator, k: int, n_points: int, confirmed: bool = True) -> dict:
    """An open, wobbly ring of ``n_points`` around fixation, radius 1 + 1.2 k deg."""
    t = np.linspace(0.0, 2 * np.pi * 0.95, n_points)
    r = 1.0 + 1.2 * k + 0.15 * np.sin(3 * t + rng.uniform(0, 6)) + rng.normal(0, 0.01, n_points)
    pts = np.round(np.column_stack([r * np.cos(t), r * np.sin(t)]), 4).tolist()
    feat = {
        "id": f"F{k + 1}",
        "source_id": "L1",
        "kind": "freehand",
        "points_deg": pts,
        "width_deg": round(float(rng.uniform(0.1, 0.4)), 3),
    }
    if confirmed:
        feat["confirmed"] = True
    return feat


def freehand_target(
    repeats: int = 3, features: int = 8, n_points: int = 2000, seed: int = 9
) -> tuple[dict, dict]:
    """Report and prediction objects: one target, ``repeats`` x ``features`` freehand contours."""
    rng = np.random.default_rng(seed)
    records = []
    for rep in range(repeats):
        rec = base_record(f"R{rep + 1}")
        rec["features"] = [freehand(rng, k, n_points) for k in range(features)]
        records.append(rec)
    reports = {"schema_version": "0.4.0-patient-draft", "fictional": True, "records": records}
    pred_feats = [freehand(rng, k, n_points, confirmed=False) for k in range(features)]
    predictions = {
        "schema_version": "0.4.0-patient-draft",
        "predictions": [{"target_id": TARGET, "presence_probability": 0.9, "features": pred_feats}],
    }
    return reports, predictions


def with_record(reports: dict, change) -> dict:
    """A deep copy of ``reports`` with ``change(record)`` applied to every record."""
    out = copy.deepcopy(reports)
    for rec in out["records"]:
        change(rec)
    return out

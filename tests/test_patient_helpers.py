"""Builders of small, valid patient-layer documents shared by the patient tests, and their check."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
from icl.patient.schema import report_schema

BASE_RECORD: dict[str, Any] = {
    "target_id": "P1|V1|OD|P01",
    "patient_id": "P1",
    "visit_id": "V1",
    "eye": "OD",
    "condition_id": "P01",
    "repeat_id": "R1",
    "data_kind": "synthetic",
    "procedure": "external_source",
    "consent": {"formal_consent": True, "deidentified": True},
    "stimulus": {
        "protocol_id": "T",
        "source_luminance_cd_m2": 1000.0,
        "ambient_lux": 1.0,
        "adaptation_min": 10.0,
        "source_distance_m": 5.0,
        "source_diameter_mm": 5.0,
        "viewing_eye": "OD",
        "postop_days": 30,
        "optical_state_id": None,
        "sources": [{"id": "L1", "x_deg": 0.0, "y_deg": 0.0}, {"id": "L2", "x_deg": 4.0, "y_deg": 0.0}],
    },
    "frame": {"origin": "fixation", "x_axis": "right", "y_axis": "up", "unit": "deg", "limit_deg": 15},
    "calibration": {
        "ruler_css_px": 200,
        "ruler_mm": 52.9,
        "viewing_distance_mm": 500.0,
        "area_css_px": [700, 600],
    },
    "status": {
        "draft": False,
        "recall": False,
        "features_confirmed": True,
        "geometry_checked": True,
        "independent_confirmation": True,
        "range_clipped": False,
        "calibration_changed": False,
    },
    "presence": "present",
    "features": [],
    "symptoms": {"visibility": 5, "bother": 2, "impact_7d": 1},
}


def circle(
    fid: str = "F1",
    src: str = "L1",
    cx: float = 0.0,
    cy: float = 0.0,
    r: float = 1.2,
    w: float = 0.2,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": fid,
        "source_id": src,
        "kind": "circle",
        "cx_deg": cx,
        "cy_deg": cy,
        "rx_deg": r,
        "width_deg": w,
        **extra,
    }


def record(
    features: list[dict[str, Any]] | None = None,
    patient: str = "P1",
    cond: str = "P01",
    repeat: str = "R1",
    presence: str = "present",
    **changes: Any,
) -> dict[str, Any]:
    rec = copy.deepcopy(BASE_RECORD)
    rec.update(
        patient_id=patient,
        condition_id=cond,
        repeat_id=repeat,
        presence=presence,
        target_id=f"{patient}|V1|OD|{cond}",
    )
    rec["features"] = [{**f, "confirmed": True} for f in (features or [])]
    rec.update(changes)
    return rec


def doc(*records: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": "0.4.0-patient-draft", "records": list(records)}


def prediction(target: str, features: list[dict[str, Any]], p: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {"target_id": target, "presence_probability": p, "features": features, **extra}


def test_builders_make_schema_valid_records():
    jsonschema.validate(doc(record([circle()]), record([], repeat="R2", presence="absent")), report_schema())

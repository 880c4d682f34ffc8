"""Seed 002 rules: schema version, P03/P05 stimulus, questionnaire answers, fine raster, selection bias."""

import copy
import json

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.errors import InputError
from icl.patient.schema import Predictions, load_predictions, validate_reports
from icl.patient.scoring import MaskCache, fine_check_reasons, record_exclusions, score
from patient_fixtures import base_record


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("patient") / "demo"
    assert CliRunner().invoke(main, ["patient-demo", "--output", str(out)]).exit_code == 0
    return out


def circle(fid="F1", r=1.0, width=0.3, **kw):
    return {
        "id": fid,
        "source_id": "L1",
        "kind": "circle",
        "cx_deg": 0.0,
        "cy_deg": 0.0,
        "rx_deg": r,
        "width_deg": width,
        "confirmed": True,
        **kw,
    }


def reports_of(*records):
    return validate_reports({"schema_version": "0.4.0-patient-draft", "records": list(records)}, "ref.json")


# --------------------------------------------------------------------------- schema_version


def test_a_prediction_file_of_another_schema_scores_nothing(demo, tmp_path):
    oracle = json.loads((demo / "private" / "oracle_prediction.json").read_text())
    oracle["schema_version"] = "9"
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(oracle))
    preds = load_predictions(path)
    assert preds.fatal is not None and "schema_version" in preds.fatal and not preds.valid
    out = tmp_path / "score.json"
    res = CliRunner().invoke(
        main,
        [
            "patient-score",
            "--reference",
            str(demo / "private" / "reference.json"),
            "--predictions",
            str(path),
            "--output",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["patient_perception_score"] == 0.0
    assert all("schema_version" in m["reason"] for m in doc["missing_or_invalid"])


# ------------------------------------------------------------------------ P03 and P05 stimulus


def test_p03_needs_the_world_source_position_and_gaze():
    rec = base_record(condition="P03")
    rec["answers"] = {}
    rec["features"] = [circle()]
    rec["stimulus"]["gaze_deg"] = [4.0, 0.0]
    masks = MaskCache(64)
    assert "p03_world_source_or_gaze_unknown" in record_exclusions(rec, masks)  # no world_x_deg
    rec["stimulus"]["sources"][0].update(world_x_deg=0.0, world_y_deg=0.0)
    assert record_exclusions(rec, masks) == []
    rec["stimulus"]["gaze_deg"] = None
    assert "p03_world_source_or_gaze_unknown" in record_exclusions(rec, masks)


def test_p05_needs_the_held_constant_quantity():
    rec = base_record(condition="P05")
    rec["answers"] = {}
    rec["features"] = [circle()]
    masks = MaskCache(64)
    assert "p05_held_constant_unknown" in record_exclusions(rec, masks)
    rec["stimulus"]["held_constant"] = "source_total_flux"
    assert record_exclusions(rec, masks) == []


# --------------------------------------------------------------------- questionnaire answers


@pytest.mark.parametrize(
    "answers,field,needle",
    [
        ({"P01.colours": {"code": "answered", "value": "red"}}, "answers['P01.colours']", "not an item"),
        ({"P02.presence": {"code": "answered", "value": "yes"}}, "answers['P02.presence']", "keyed by"),
        ({"P01.shape": {"code": "answered", "value": "square"}}, "answers['P01.shape'].value", "options"),
        ({"P01.bother": {"code": "answered", "value": 11}}, "answers['P01.bother'].value", "0-10"),
        ({"P01.bother": {"code": "answered", "value": 2.5}}, "answers['P01.bother'].value", "integer"),
        ({"P01.presence": {"code": "answered", "value": "no"}}, "presence", "contradicts"),
        ({"P01.visibility": {"code": "answered", "value": 9}}, "symptoms.visibility", "contradicts"),
    ],
)
def test_answers_are_checked_against_the_questionnaire(answers, field, needle):
    rec = base_record()
    rec["features"] = [circle()]
    rec["answers"] = answers
    with pytest.raises(InputError) as err:
        reports_of(rec)
    assert err.value.field == f"records[0].{field}" and needle in str(err.value)


def test_the_demo_answers_pass(demo):
    from icl.patient.schema import load_reports

    assert len(load_reports(demo / "private" / "reference.json").records) == 48


# ---------------------------------------------------------------------------- fine raster


def test_fine_raster_covers_tiny_structures_and_eccentric_ellipses():
    rec = base_record()
    pred = {"features": [circle(r=2.0, width=0.5)]}
    assert fine_check_reasons(pred, {"features": [circle(r=2.0, width=0.5)]}, 256) == []
    assert fine_check_reasons(pred, {"features": [circle(r=0.1, width=0.3)]}, 256) == ["tiny_structure"]
    ellipse = {
        "id": "E",
        "source_id": "L1",
        "kind": "ellipse",
        "cx_deg": 0.0,
        "cy_deg": 0.0,
        "rx_deg": 6.0,
        "ry_deg": 1.5,
        "width_deg": 0.5,
        "confirmed": True,
    }
    assert fine_check_reasons(pred, {"features": [ellipse]}, 256) == ["eccentric_ellipse"]
    assert fine_check_reasons(pred, {"features": [circle(width=0.1)]}, 256) == ["thin_band"]
    # and the score document counts them by reason
    recs = []
    for k in (1, 2):
        r = copy.deepcopy(rec)
        r["repeat_id"] = f"R{k}"
        r["features"] = [ellipse]
        recs.append(r)
    preds = Predictions(
        "p.json",
        valid={
            rec["target_id"]: {
                "target_id": rec["target_id"],
                "presence_probability": 0.9,
                "features": [ellipse],
            }
        },
    )
    doc = score(reports_of(*recs), preds)
    assert doc["raster_check"]["reasons"] == {"eccentric_ellipse": 2}
    assert doc["raster_check"]["max_abs_iou_difference"] == 0.0


# -------------------------------------------------------------------------- selection bias


def test_exclusions_get_a_selection_bias_check():
    recs = []
    for p in range(6):
        for k in (1, 2):
            r = base_record(f"R{k}")
            r["patient_id"] = f"SYN-{p:03d}"
            r["target_id"] = f"SYN-{p:03d}|V1|OD|P01"
            if p < 3:  # three patients see rings; all their reports are drafts
                r["features"] = [circle()]
                r["status"]["draft"] = True
            else:
                r["presence"] = "absent"
                r["answers"] = {"P01.presence": {"code": "answered", "value": "no"}}
            recs.append(r)
    doc = score(reports_of(*recs), Predictions("p.json"))
    sb = doc["selection_bias"]
    assert sb["records"] == {"eligible": 6, "excluded": 6}
    assert sb["present_share"] == {
        "eligible": 0.0,
        "excluded": 1.0,
        "fisher_exact_p": pytest.approx(0.002164502),
    }
    assert any("presence differs" in w for w in sb["warnings"])
    assert any("patient SYN-000: every record excluded" in w for w in sb["warnings"])

import copy
import json

import jsonschema
import pytest
from icl._paths import cases_dir
from icl.errors import InputError
from icl.patient.annotate import page_bytes
from icl.patient.schema import load_predictions, load_reports, prediction_schema, report_schema
from test_patient_helpers import circle, doc, record

SEED_EXAMPLE = {
    "predictions": [
        {
            "target_id": "SYN-001|V1|OD|P01",
            "presence_probability": 0.9,
            "features": [
                {
                    "id": "F1",
                    "source_id": "L1",
                    "kind": "circle",
                    "cx_deg": 0.1,
                    "cy_deg": 0.0,
                    "rx_deg": 1.2,
                    "ry_deg": 1.2,
                    "rotation_deg": 0,
                    "width_deg": 0.2,
                    "radius_interval_deg": [1.1, 1.3],
                    "brightness8": [4, 3, 2, 1, 1, 2, 3, 4],
                }
            ],
            "symptoms": {"visibility": 6, "bother": 3},
        }
    ]
}


def write(tmp_path, obj, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def test_schemas_are_valid_draft_2020_12():
    for schema in (report_schema(), prediction_schema()):
        jsonschema.Draft202012Validator.check_schema(schema)


def test_seed_prediction_example_validates_exactly(tmp_path):
    jsonschema.validate(SEED_EXAMPLE, prediction_schema())
    preds = load_predictions(write(tmp_path, SEED_EXAMPLE), {"SYN-001|V1|OD|P01": ["L1"]})
    assert list(preds.valid) == ["SYN-001|V1|OD|P01"] and not preds.invalid and preds.fatal is None


@pytest.mark.parametrize(
    "kind,fields",
    [
        ("ellipse", {"cx_deg": 0, "cy_deg": 0, "rx_deg": 1, "ry_deg": 0.5, "rotation_deg": 30}),
        ("arc", {"cx_deg": 0, "cy_deg": 0, "rx_deg": 1, "start_deg": 90, "sweep_deg": 120}),
        ("freehand", {"points_deg": [[0, 0], [1, 0.5], [2, 0]]}),
    ],
    ids=["ellipse", "arc", "freehand"],
)
def test_every_feature_kind_validates(tmp_path, kind, fields):
    feat = {"id": "F1", "source_id": "L1", "kind": kind, "width_deg": 0.2, **fields}
    reports = load_reports(write(tmp_path, doc(record([feat]))))
    assert reports.records[0]["features"][0]["kind"] == kind


def test_duplicate_target_and_repeat_is_rejected(tmp_path):
    path = write(tmp_path, doc(record([circle()]), record([circle()])))
    with pytest.raises(InputError) as exc:
        load_reports(path)
    assert exc.value.file == str(path) and exc.value.field == "records[1].repeat_id"
    assert "appears twice" in exc.value.reason


def test_pipe_in_an_id_part_is_rejected(tmp_path):
    rec = record([circle()])
    rec["patient_id"], rec["target_id"] = "A|B", "A|B|V1|OD|P01"
    path = write(tmp_path, doc(rec))
    with pytest.raises(InputError) as exc:
        load_reports(path)
    assert exc.value.file == str(path) and exc.value.field == "records[0].patient_id"


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda r: r.update(target_id="P1|V1|OS|P01"), "records[0].target_id"),
        (lambda r: r["features"][0].update(width_deg=-0.1), "records[0].features[0].width_deg"),
        (lambda r: r["features"][0].update(source_id="L9"), "records[0].features[0].source_id"),
        (lambda r: r["features"][0].update(ry_deg=2.0), "records[0].features[0].ry_deg"),
        (lambda r: r["features"][0].pop("rx_deg"), "records[0].features[0]"),
        (lambda r: r["features"][0].update(brightness8=[1, 2, 3]), "records[0].features[0].brightness8"),
        (lambda r: r.update(presence="absent"), "records[0].features"),
        (lambda r: r["stimulus"].update(ambient_lux="dark"), "records[0].stimulus.ambient_lux"),
        (lambda r: r.update(features=[circle(f"F{k}") for k in range(9)]), "records[0].features"),
    ],
    ids=["target", "width", "source", "round", "missing", "brightness", "absent", "lux", "nine"],
)
def test_bad_report_names_file_and_field(tmp_path, mutate, field):
    rec = record([circle()])
    mutate(rec)
    path = write(tmp_path, doc(rec))
    with pytest.raises(InputError) as exc:
        load_reports(path)
    assert exc.value.file == str(path)
    assert exc.value.field == field, exc.value


def test_synthetic_and_research_are_refused_together(tmp_path):
    other = record([circle()], repeat="R2", data_kind="research")
    path = write(tmp_path, doc(record([circle()]), other))
    with pytest.raises(InputError, match="separate runs") as exc:
        load_reports(path)
    assert exc.value.field == "records[1].data_kind"


def test_bad_prediction_entries_lose_only_their_target(tmp_path):
    bad_src = copy.deepcopy(SEED_EXAMPLE["predictions"][0])
    bad_src["target_id"] = "T2"
    bad_src["features"][0]["source_id"] = "L7"
    outside = copy.deepcopy(SEED_EXAMPLE["predictions"][0])
    outside["target_id"] = "T3"
    outside["features"][0]["radius_interval_deg"] = [1.3, 1.5]
    no_p = {"target_id": "T4", "features": []}
    obj = {"predictions": [SEED_EXAMPLE["predictions"][0], bad_src, outside, no_p]}
    path = write(tmp_path, obj, "p.json")
    preds = load_predictions(path, {"SYN-001|V1|OD|P01": ["L1"], "T2": ["L1"], "T3": ["L1"], "T4": ["L1"]})
    assert list(preds.valid) == ["SYN-001|V1|OD|P01"]
    assert "predictions[1].features[0].source_id" in preds.invalid["T2"]
    assert "predictions[2].features[0].radius_interval_deg" in preds.invalid["T3"]
    assert "outside" in preds.invalid["T3"]  # the point estimate must lie in its interval
    assert str(path) in preds.invalid["T4"] and "presence_probability" in preds.invalid["T4"]


def test_unreadable_prediction_file_is_fatal_not_a_crash(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{not json")
    preds = load_predictions(path)
    assert preds.fatal and str(path) in preds.fatal and not preds.valid


def test_page_embeds_the_questionnaire_verbatim():
    html = page_bytes().decode()
    start = html.index('<script type="application/json" id="questionnaire">') + len(
        '<script type="application/json" id="questionnaire">'
    )
    embedded = json.loads(html[start : html.index("</script>", start)])
    assert embedded == json.loads((cases_dir() / "patient" / "questionnaire.json").read_text())
    assert [c["id"] for c in embedded["conditions"]] == [f"P0{k}" for k in range(1, 8)]

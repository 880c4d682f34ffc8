"""``icl patient-score`` against hostile report and prediction files, in-process through the CLI.

A bad reference file is a clear error (exit 2, file and field named, no score file). A bad prediction
entry loses only its target (score 0 with the reason); an unreadable prediction file scores every target
0 with the reason, and the score file is still written whole.
"""

import json

import pytest
from click.testing import CliRunner
from hostile import corpus
from icl.cli import main
from icl.io import load_json
from test_patient_helpers import circle, doc, prediction, record

T1, T2 = "P1|V1|OD|P01", "P2|V1|OD|P01"
FEATS = [circle("F1", r=1.2), circle("F2", src="L2", cx=4.0, r=0.8, w=0.3)]


def reports():
    return doc(*(record(FEATS, patient=p, repeat=r) for p in ("P1", "P2") for r in ("R1", "R2")))


def run(tmp_path, ref, preds):
    """Write (or keep, when given a path) both files, run patient-score at the coarsest raster."""
    paths = []
    for name, obj in (("ref.json", ref), ("pred.json", preds)):
        if isinstance(obj, type(tmp_path)):
            paths.append(obj)
            continue
        p = tmp_path / name
        text = obj if isinstance(obj, (str, bytes)) else json.dumps(obj)
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        paths.append(p)
    out = tmp_path / "out" / "score.json"
    res = CliRunner().invoke(main, ["patient-score", "--reference", str(paths[0]), "--predictions",
                                    str(paths[1]), "--output", str(out), "--raster", "64"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    if out.parent.exists():  # atomic write: no temporary file left beside it
        assert [p.name for p in out.parent.iterdir()] == ["score.json"]
    return res, out


def good_predictions():
    return {"predictions": [prediction(T1, FEATS), prediction(T2, FEATS)]}


def test_clean_run_scores_100(tmp_path):
    res, out = run(tmp_path, reports(), good_predictions())
    assert res.exit_code == 0, res.output
    assert load_json(out)["patient_perception_score"] == pytest.approx(100.0, abs=1e-9)


@pytest.mark.parametrize("mutate, field, needle", [
    (lambda d: d["records"][0].update(patient_id="../../etc", target_id="../../etc|V1|OD|P01"),
     "records[0].patient_id", "does not match"),
    (lambda d: d["records"][0].update(visit_id="V1|x", target_id="P1|V1|x|OD|P01"), "records[0].visit_id",
     "does not match"),
    (lambda d: d["records"][0].update(patient_id="P1\n", target_id="P1\n|V1|OD|P01"), "records[0].patient_id",
     "does not match"),
    (lambda d: d["records"][0].update(repeat_id="../R1"), "records[0].repeat_id", "does not match"),
    (lambda d: d["records"][1].update(repeat_id="R1"), "records[1].repeat_id", "appears twice"),
    (lambda d: d["records"].append(dict(d["records"][0])), "records[4].repeat_id", "appears twice"),
    (lambda d: d["records"][0].update(target_id="P1|V1|OD|P02"), "records[0].target_id", "target_id must be"),
    (lambda d: d["records"][0]["features"][0].update(rx_deg=1e300), "records[0].features[0].rx_deg",
     "greater than the maximum"),
    (lambda d: d.update(extra=1), "(top level)", "Additional properties"),
], ids=["traversal-id", "pipe-id", "newline-id", "traversal-repeat", "duplicate-repeat", "duplicate-record",
        "target-mismatch", "absurd-radius", "extra-key"])
def test_bad_reference_is_a_clear_error(tmp_path, mutate, field, needle):
    ref = reports()
    mutate(ref)
    res, out = run(tmp_path, ref, good_predictions())
    assert res.exit_code == 2 and f"ref.json: {field}" in res.output and needle in res.output, res.output
    assert not out.exists()


@pytest.mark.parametrize("text, needle", [
    (corpus.DEEP_JSON, "nested"), (corpus.HUGE_NUMBER_JSON, "invalid JSON"),
    (corpus.HUGE_INT_JSON, "overflows"),
    (corpus.NAN_JSON, "non-finite"), (corpus.NON_UTF8, "not UTF-8"), (corpus.MALFORMED_JSON, "invalid JSON"),
], ids=["deep", "huge-int-digits", "huge-int", "nan", "non-utf8", "malformed"])
def test_unreadable_reference_exits_2(tmp_path, text, needle):
    res, out = run(tmp_path, text, good_predictions())
    assert res.exit_code == 2 and "ref.json" in res.output and needle in res.output, res.output
    assert not out.exists()


@pytest.mark.parametrize("text, needle", [
    (corpus.DEEP_JSON, "nested"), (corpus.HUGE_NUMBER_JSON, "invalid JSON"),
    (corpus.HUGE_INT_JSON, "overflows"),
    (corpus.NAN_JSON, "non-finite"), (corpus.NON_UTF8, "not UTF-8"), (corpus.MALFORMED_JSON, "invalid JSON"),
    ('{"predictions": 3}', "'predictions' list"), ('{"predictions": [], "x": 1}', "unknown top-level field"),
], ids=["deep", "huge-int-digits", "huge-int", "nan", "non-utf8", "malformed", "not-a-list", "extra-field"])
def test_unreadable_predictions_score_zero_with_reason(tmp_path, text, needle):
    res, out = run(tmp_path, reports(), text)
    assert res.exit_code == 0, res.output
    s = load_json(out)
    assert s["patient_perception_score"] == 0.0 and s["counts"]["eligible_targets"] == 2
    assert [m["target_id"] for m in s["missing_or_invalid"]] == [T1, T2]
    assert all(needle in m["reason"] and "pred.json" in m["reason"] for m in s["missing_or_invalid"])


@pytest.mark.parametrize("make", [lambda d: corpus.fifo(d, "pred.json"),
                                  lambda d: corpus.device_link(d, "pred.json")], ids=["fifo", "dev-zero"])
def test_special_prediction_file_is_refused_unread(tmp_path, make):
    # A FIFO would block the scorer forever and /dev/zero would fill its memory: neither is opened.
    res, out = run(tmp_path, reports(), make(tmp_path))
    assert res.exit_code == 0, res.output
    s = load_json(out)
    assert s["patient_perception_score"] == 0.0
    # the FIFO is refused as not a regular file, the link to /dev/zero as a link (neither is opened)
    assert all(
        "not a regular file" in m["reason"] or "symbolic links are not followed" in m["reason"]
        for m in s["missing_or_invalid"]
    )
    assert s["inputs"]["predictions"]["sha256"] is None


def test_special_reference_file_exits_2(tmp_path):
    res, out = run(tmp_path, corpus.fifo(tmp_path, "ref.json"), good_predictions())
    assert res.exit_code == 2 and "not a regular file" in res.output and not out.exists()


@pytest.mark.parametrize("bad, needle", [
    (prediction("../../P1|V1|OD|P01", FEATS), "unknown target"),
    (prediction("P1|V1|OD|P01\n", FEATS), "unknown target"),
    ({**prediction(T1, FEATS), "presence_probability": 1e308}, "maximum"),
    ({**prediction(T1, FEATS), "presence_probability": "NaN"}, "is not of type"),
    (prediction(T1, [circle("F1", src="L9")]), "not a source of this target"),
    (prediction(T1, [circle("F1"), circle("F1", r=2.0)]), "repeats"),
    (prediction(T1, [{**circle(), "points_deg": [[0, 0]] * 3000}]), "features[0]"),
    ([1, [2, [3]]], "predictions[0]"),
], ids=["traversal", "newline", "huge-probability", "nan-string", "unknown-source", "duplicate-feature",
        "too-many-points", "not-an-object"])
def test_bad_prediction_entry_loses_only_its_target(tmp_path, bad, needle):
    res, out = run(tmp_path, reports(), {"predictions": [bad, prediction(T2, FEATS)]})
    assert res.exit_code == 0, res.output
    s = load_json(out)
    assert s["targets"][T2]["score"] == pytest.approx(100.0, abs=1e-9)  # the valid target is kept
    assert s["targets"][T1] == {"score": 0.0, "reason": s["targets"][T1]["reason"]}
    reasons = [s["targets"][T1]["reason"], *s["invalid_predictions_for_unknown_targets"].values()]
    assert any(needle in r for r in reasons), reasons
    assert s["patient_perception_score"] == pytest.approx(50.0, abs=1e-9)


def test_duplicate_predictions_for_a_target_score_zero(tmp_path):
    preds = {"predictions": [prediction(T1, FEATS), prediction(T1, FEATS), prediction(T2, FEATS)]}
    res, out = run(tmp_path, reports(), preds)
    s = load_json(out)
    assert "more than one prediction" in s["targets"][T1]["reason"] and s["targets"][T1]["score"] == 0.0
    assert s["targets"][T2]["score"] == pytest.approx(100.0, abs=1e-9)

"""``icl contest-score`` against hostile evaluation and threshold files, in-process through the CLI.

A broken part of a team's file scores 0 (items) or is left out (side reports) with the reason in
``problems`` while every valid part is kept; a file that is not a JSON object, or a misconfigured
threshold file, is a clear error naming the file (and field) with exit status 2 and no score file.
"""

import copy
import json

import pytest
from click.testing import CliRunner
from hostile import corpus
from icl._paths import cases_dir
from icl.cli import main
from icl.contest import score_result
from icl.io import load_json

EXAMPLE = json.loads((cases_dir() / "contest" / "example_team.json").read_text())
REFERENCE = score_result(EXAMPLE)
PUBLISHED = {"published": True, "thresholds": [{"item": "NH", "metric": "area", "min": 0.5}]}


def run(tmp_path, doc, thresholds=None):
    """Write the input (dict or raw text), run contest-score, return (result, output path)."""
    src = tmp_path / "team.json"
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    src.write_bytes(text if isinstance(text, bytes) else text.encode())
    args = ["contest-score", str(src), "--output", str(tmp_path / "out" / "score.json")]
    if thresholds is not None:
        th = tmp_path / "th.json"
        th.write_text(thresholds if isinstance(thresholds, str) else json.dumps(thresholds))
        args += ["--thresholds", str(th)]
    res = CliRunner().invoke(main, args)
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit), res.output
    out = tmp_path / "out" / "score.json"
    if out.parent.exists():  # atomic writes leave no temporary file behind
        assert [p.name for p in out.parent.iterdir()] in ([], ["score.json"])
    return res, out


@pytest.fixture
def doc():
    return copy.deepcopy(EXAMPLE)


@pytest.mark.parametrize("mutate, problem, zeroed", [
    (lambda d: d["items"].pop("SPL"), "items.SPL: missing key, item scores 0", "SPL"),
    (lambda d: d.pop("items"), "items: missing or not an object", "NH"),
    (lambda d: d["items"]["NH"]["scores"].__setitem__(2, "NaN"),
     "items.NH.scores[2]: expected a finite number", "NH"),
    (lambda d: d["items"]["NH"]["scores"].__setitem__(0, None), "items.NH.scores[0]", "NH"),
    (lambda d: d["items"]["DUP"]["labels"].__setitem__(1, 2), "items.DUP.labels[1]: expected 0 or 1", "DUP"),
    (lambda d: d["items"]["DUP"]["labels"].pop(), "scores but", "DUP"),
    (lambda d: d["items"]["SPL"].update(labels=[0] * len(d["items"]["SPL"]["labels"])), "items.SPL:", "SPL"),
    (lambda d: d["items"].update(NH=[1, 2, 3]), "items.NH: expected an object", "NH"),
], ids=["missing-item", "missing-items", "nan-string", "null-score", "label-2", "length-mismatch",
        "no-positives", "item-not-object"])
def test_broken_item_scores_zero_and_keeps_the_rest(tmp_path, doc, mutate, problem, zeroed):
    mutate(doc)
    res, out = run(tmp_path, doc)
    assert res.exit_code == 0, res.output
    rec = load_json(out)
    assert any(problem in p for p in rec["problems"]), rec["problems"]
    assert rec["items"][zeroed]["value"] == 0.0 and rec["S"] == 0.0  # the zero rule
    assert rec["C"] == 0.75 and rec["T"] == round(100 * 0.75 * 0.6, 2)  # w_s = 0.4 at S = 0
    items = doc.get("items") if isinstance(doc.get("items"), dict) else {}
    intact = [k for k in ("NH", "DUP", "SPL") if items.get(k) == EXAMPLE["items"][k]]
    assert len(intact) == (0 if not items else 2)
    for k in intact:  # untouched items keep their exact areas
        assert rec["items"][k]["value"] == REFERENCE["items"][k]["value"], k


def test_side_fields_left_out_with_reason(tmp_path, doc):
    doc.update(track="3", team="../../etc", group="G1|x", compute_class=None, clinical_score=1.5, extra=1,
               efficiency={"latency_s": -1}, robustness={"metric": "C"}, generalisation=[])
    res, out = run(tmp_path, doc, PUBLISHED)
    assert res.exit_code == 0, res.output
    rec = load_json(out)
    assert [rec[k] for k in ("team", "track", "group", "compute_class")] == [None] * 4
    assert rec["C"] is None and rec["T"] is None and rec["rankable"] is False
    assert rec["efficiency"] is None and rec["robustness"] is None and rec["generalisation"] is None
    assert rec["S"] == REFERENCE["S"]  # the items are all still scored
    fields = {p.split(":")[0] for p in rec["problems"]}
    assert {"extra", "team", "track", "group", "compute_class", "clinical_score", "efficiency", "robustness",
            "generalisation"} <= fields


def test_float_track_is_not_an_integer(tmp_path, doc):
    doc["track"] = 3.0
    rec = load_json(run(tmp_path, doc)[1])
    assert rec["track"] is None and any(p.startswith("track: expected an integer") for p in rec["problems"])


@pytest.mark.parametrize("text, needle", [
    ('{"team": "A", "clinical_score": NaN}', "non-finite"),
    ('{"team": "A", "clinical_score": 1' + "0" * 400 + "}", "overflows a double"),
    (corpus.HUGE_NUMBER_JSON, "invalid JSON"),
    (corpus.DEEP_JSON, "nested"),
    (corpus.NON_UTF8, "not UTF-8"),
    (corpus.MALFORMED_JSON, "invalid JSON"),
    ("[1, 2, 3]", "expected an object"),
], ids=["nan-literal", "huge-int", "huge-int-digits", "deep", "non-utf8", "malformed", "not-object"])
def test_unreadable_file_is_a_clear_error_without_output(tmp_path, text, needle):
    res, out = run(tmp_path, text)
    assert res.exit_code == 2 and needle in res.output and "team.json" in res.output, res.output
    assert not out.exists()


@pytest.mark.parametrize("thresholds, field, needle", [
    ({"published": True, "thresholds": [{"item": "NH", "metric": "area", "min": "TBD"}]}, "thresholds[0].min",
     "placeholder"),
    ({"published": True, "thresholds": [{"item": "NH", "metric": "area", "min": 0}]}, "thresholds[0].min",
     "lets every result pass"),
    ({"published": True, "thresholds": [{"item": "S", "min": 1.5}]}, "thresholds[0].min", "nobody can pass"),
    ({"published": True, "thresholds": [{"item": "NH", "metric": "area", "min": None}]}, "thresholds[0].min",
     "null"),
    ({"published": False, "thresholds": [{"item": "NH", "metric": "area", "min": 0.5}]}, "thresholds[0].min",
     "a guess"),
    ({"published": True, "thresholds": [{"item": "NH", "metric": "recall_at_fpr", "min": 0.5}]},
     "thresholds[0].at", "placeholder"),
    ({"published": "yes"}, "published", "true or false"),
    ({"published": True, "thresholds": []}, "thresholds", "at least one rule"),
], ids=["placeholder", "zero", "above-one", "null-published", "guess-unpublished", "missing-at", "bool",
        "empty"])
def test_placeholder_thresholds_are_refused(tmp_path, doc, thresholds, field, needle):
    res, out = run(tmp_path, doc, thresholds)
    assert res.exit_code == 2 and f"th.json: {field}: " in res.output and needle in res.output, res.output
    assert not out.exists()


def test_failed_run_keeps_the_previous_score_file(tmp_path, doc):
    res, out = run(tmp_path, doc)
    before = out.read_bytes()
    res, out = run(tmp_path, corpus.MALFORMED_JSON)
    assert res.exit_code == 2 and out.read_bytes() == before

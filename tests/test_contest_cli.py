"""Score records and rankings end to end: CLI in-process, hostile records, ties, track 7."""

import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.contest import parse_thresholds, refuse_safety_rank, score_result
from icl.contest.cli import contest_rank, contest_score
from icl.contest.rank import rank_records

EXAMPLE = cases_dir() / "contest" / "example_team.json"
PUBLISHED = {
    "published": True,
    "thresholds": [{"item": "NH", "metric": "area", "min": 0.5}, {"item": "S", "min": 0.3}],
}


@pytest.fixture
def doc():
    return json.loads(EXAMPLE.read_text())


def test_example_record_matches_hand_values(doc):
    r = score_result(doc)
    # NH and SPL: (0.05 + 0.1 (2/3 + 3/4 + 1/2 + 1/2)) / 0.45; DUP: average precision 0.443.
    nh = (0.05 + 0.1 * (2 / 3 + 3 / 4 + 0.5 + 0.5)) / 0.45
    dup = 0.1 * (1 + 2 / 3 + 3 / 4 + 4 / 8 + 5 / 10 + 6 / 20 + 7 / 30 + 8 / 40 + 9 / 50 + 10 / 100)
    s = 3 / (2 / nh + 1 / dup)
    assert r["S"] == pytest.approx(s, rel=1e-14)
    assert r["weakest"]["item"] == "DUP" and r["weakest"]["positives"] == 10
    ws = 0.2 + 0.2 * (1 - s)
    assert r["T"] == round(100 * (s * ws + 0.75 * (1 - ws)), 2) == 69.58
    assert r["rankable"] is False and r["gate"]["reasons"] == ["thresholds not yet published"]
    assert r["robustness"]["drop_rate"] == pytest.approx((0.8 - 0.7) / 0.8, rel=1e-14)
    assert r["robustness"]["in_total"] is False


def test_missing_item_key_gives_zero_and_keeps_the_rest(doc):
    del doc["items"]["SPL"]
    doc["items"]["DUP"]["scores"][3] = "0.9"
    r = score_result(doc, parse_thresholds(PUBLISHED))
    assert r["S"] == 0.0 and r["zero_rule"] == "DUP not computable"
    assert r["items"]["NH"]["value"] > 0.6
    assert any("SPL: missing key" in p for p in r["problems"])
    assert any("DUP.scores[3]" in p for p in r["problems"])
    assert r["rankable"] is False


def test_published_gate_passes_and_fails(doc):
    th = parse_thresholds(PUBLISHED)
    assert score_result(doc, th)["rankable"] is True
    strict = parse_thresholds(
        {"published": True, "thresholds": [{"item": "DUP", "metric": "area", "min": 0.5}]}
    )
    r = score_result(doc, strict)
    assert r["rankable"] is False and "DUP area >= 0.5: got 0.4430" in r["gate"]["reasons"]


def test_track7_has_no_safety_score(doc):
    doc["track"] = 7
    r = score_result(doc, parse_thresholds(PUBLISHED))
    assert r["S"] is None and r["T"] == 75.0 and r["rankable"] is True
    assert any("track 7 has no safety score" in p for p in r["problems"])
    with pytest.raises(ValueError, match="track 7"):
        refuse_safety_rank(r)


def _team(doc, name, c, cls="domestic", latency=1.0, mem=10.0):
    d = copy.deepcopy(doc)
    d.update(team=name, clinical_score=c, compute_class=cls)
    d["efficiency"].update(latency_s=latency, peak_memory_gib=mem)
    return score_result(d, parse_thresholds(PUBLISHED))


def test_ties_broken_by_efficiency_only_within_one_compute_class(doc):
    a = _team(doc, "A", 0.75, latency=0.5, mem=8.0)
    b = _team(doc, "B", 0.75, latency=1.0, mem=12.0)
    c = _team(doc, "C", 0.70)
    rows = rank_records([("a", a), ("b", b), ("c", c)])["groups"][0]["rows"]
    assert [(r["team"], r["place"]) for r in rows] == [("A", 1), ("B", 2), ("C", 3)]
    assert rows[0]["efficiency"] == 1.0 and rows[1]["efficiency"] == 0.0
    b_foreign = _team(doc, "B", 0.75, cls="foreign", latency=1.0, mem=12.0)
    rows = rank_records([("a", a), ("b", b_foreign), ("c", c)])["groups"][0]["rows"]
    assert [(r["team"], r["place"]) for r in rows] == [("A", 1), ("B", 1), ("C", 3)]
    assert "tie stands" in rows[0]["note"]


def test_not_rankable_records_get_no_place(doc):
    a = _team(doc, "A", 0.75)
    unpublished = score_result(dict(doc, team="U"))
    rows = rank_records([("a", a), ("u", unpublished)])["groups"][0]["rows"]
    assert rows[1]["team"] == "U" and rows[1]["place"] is None
    assert "thresholds not yet published" in rows[1]["note"]


def test_cli_score_and_rank_write_deterministic_json(tmp_path):
    thr = tmp_path / "thr.json"
    thr.write_text(json.dumps(PUBLISHED))
    runner = CliRunner()
    outs = []
    for k in range(2):
        out = tmp_path / f"out{k}.json"
        res = runner.invoke(contest_score, [str(EXAMPLE), "--thresholds", str(thr), "--output", str(out)])
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert "1 rankable?" in res.output and "69.58" in res.output
    rank = tmp_path / "rank.json"
    res = runner.invoke(contest_rank, [str(tmp_path / "out0.json"), "--output", str(rank)])
    assert res.exit_code == 0, res.output
    assert json.loads(rank.read_text())["groups"][0]["rows"][0]["place"] == 1


def test_cli_zero_threshold_exits_loudly(tmp_path):
    thr = tmp_path / "thr.json"
    thr.write_text(json.dumps({"published": True, "thresholds": [{"item": "S", "min": 0}]}))
    res = CliRunner().invoke(
        contest_score, [str(EXAMPLE), "--thresholds", str(thr), "--output", str(tmp_path / "o.json")]
    )
    assert res.exit_code != 0 and not (tmp_path / "o.json").exists()


def test_rank_refuses_foreign_documents(doc):
    from icl.contest.scoring import record_digest
    from icl.errors import InputError

    with pytest.raises(InputError, match="missing"):
        rank_records([("x.json", {"team": "A"})])
    record = score_result(doc, parse_thresholds(PUBLISHED))
    record["efficiency"] = {"latency_s": -1}
    record["record_sha256"] = record_digest(record)  # consistent digest: the field check must catch it
    with pytest.raises(InputError, match="efficiency"):
        rank_records([("x.json", record)])


def test_labels_must_be_binary(doc):
    doc["items"]["NH"]["labels"][0] = 2
    r = score_result(doc)
    assert r["items"]["NH"]["value"] == 0.0 and "labels[0]" in r["items"]["NH"]["reason"]
    assert np.isfinite(r["items"]["DUP"]["value"])

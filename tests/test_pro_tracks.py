"""The professional scores are kept per track: a from-scratch run found to carry reference code scores 0 on
the from-scratch board (with the reason) and is listed with its score on the reference-assisted board."""

import json

import pytest
from icl.pro.generate import generate
from icl.pro.score import leaderboard, score_submission
from icl.sandbox.signing import sign


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("rel")
    generate(out, per_template=4, only=["A01"], progress=False)  # secret key: rankable
    return out


def _run(tmp_path, name, track, effective, evidence=None):
    run = tmp_path / name
    (run / "set-0").mkdir(parents=True)
    record = sign({"ok": True, "violations": [], "track": track, "effective_track": effective,
                   "track_evidence": evidence or {}})
    (run / "sets.json").write_text(json.dumps(sign({"sets": [{"set": 0, "instances": [], "output": "set-0",
                                                               "record": record}]})))
    return run


def test_reclassified_run_scores_zero_on_the_from_scratch_board(release, tmp_path):
    honest = score_submission(release, [_run(tmp_path, "h", "from-scratch", "from-scratch")], "honest",
                              bootstrap_n=10)
    vendored = score_submission(release, [_run(tmp_path, "v", "from-scratch", "reference-assisted",
                                               {"summary": "icl/optics/render.py copied (0.93)"})], "vendored",
                                bootstrap_n=10)
    assisted = score_submission(release, [_run(tmp_path, "a", "reference-assisted", "reference-assisted")],
                                "assisted", bootstrap_n=10)
    vendored["professional_score"] = 99.0  # whatever it scored, the from-scratch board gives it 0
    vendored["boards"]["reference-assisted"]["score"] = 99.0
    scores = [honest, vendored, assisted]
    assert honest["boards"].keys() == {"from-scratch"} and assisted["boards"].keys() == {"reference-assisted"}
    fs = {r["name"]: r for r in leaderboard(scores, "from-scratch")}
    assert set(fs) == {"honest", "vendored"}
    assert fs["vendored"]["professional_score"] == 0.0 and "render.py" in fs["vendored"]["board_reason"]
    ra = {r["name"]: r for r in leaderboard(scores, "reference-assisted")}
    assert set(ra) == {"vendored", "assisted"} and ra["vendored"]["place"] == 1


def test_runs_without_records_are_on_no_board(release, tmp_path):
    (tmp_path / "plain").mkdir()
    s = score_submission(release, [tmp_path / "plain"], "plain", bootstrap_n=10)
    assert s["track"] is None and s["boards"] == {}
    assert leaderboard([s], "from-scratch") == []

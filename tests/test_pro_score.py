import shutil

import numpy as np
import pytest
from icl.io import load_npz, write_json, write_npz
from icl.pro.generate import DET_PITCH, generate
from icl.pro.results_schema import write_psf
from icl.pro.score import score_run, score_submission


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("rel")
    generate(d, per_template=4, seed=11, progress=False, only=["C01", "C05", "F06"])
    return d


def _perfect(release, out, iid):
    for p in (release / "private" / "psf" / iid).glob("*.npz"):
        a = load_npz(p, required=("psf", "x_arcmin", "y_arcmin"))
        for stem in ("psf_linear", "psf_repeat"):
            write_psf(out / "results" / iid / p.stem / f"{stem}.npz", a["psf"], a["x_arcmin"], a["y_arcmin"],
                      DET_PITCH, [550.0])


def test_reference_psf_scores_full_and_garbage_scores_zero(release, tmp_path):
    iid = "C05-02"
    good = tmp_path / "good"
    _perfect(release, good, iid)
    r = score_run(release, good, "test", instances=[iid])
    by = {c["check"]: c for c in r["checks"]}
    assert by["C05.1"]["score"] == 1.0 and by["C05.3"]["score"] == 1.0
    assert by["C05.4"]["score"] is None and r["pending_expert_checks"] == 1
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    (bad / "results" / iid / "clear_on" / "psf_linear.npz").write_bytes(b"not a zip")
    write_npz(bad / "results" / iid / "black_on" / "psf_linear.npz", psf=np.full((3, 3), np.nan))
    write_json(bad / "results" / iid / "black_on" / "energy.json", {"incident": 1.0, "recorded": 2.0})
    r = score_run(release, bad, "test", instances=[iid])
    by = {c["check"]: c for c in r["checks"]}
    # Two of eight cases broken: the rubric's half mark ("within tolerance on at least half").
    assert by["C05.1"]["score"] == 0.5 and "clear_on: " in by["C05.1"]["reason"]
    assert by["C05.2"]["score"] == 0.0


def test_a_hard_linked_result_file_is_not_the_run_s_own(release, tmp_path):
    import os

    iid = "C05-02"
    good = tmp_path / "good"
    _perfect(release, good, iid)
    by = {c["check"]: c for c in score_run(release, good, "test", instances=[iid])["checks"]}
    assert by["C05.1"]["score"] == 1.0
    # every psf_linear.npz becomes a second name of a file kept elsewhere (a planted answer, say)
    for k, p in enumerate(sorted((good / "results" / iid).glob("*/psf_linear.npz"))):
        kept = tmp_path / f"kept{k}.npz"
        p.rename(kept)
        os.link(kept, p)
    by = {c["check"]: c for c in score_run(release, good, "test", instances=[iid])["checks"]}
    assert by["C05.1"]["score"] == 0.0 and "hard link" in by["C05.1"]["reason"], by["C05.1"]


def test_missing_task_is_zero_and_gates_reported(release, tmp_path):
    s = score_submission(release, [tmp_path], "empty", bootstrap_n=50)
    assert s["professional_score"] == 0.0 and s["completion_rate"] == 0.0
    # Without evidence no gate passes: G1 (no A01 in this release), G2 (no ledger read), G4 (no F02) and G5
    # (no eye model) are not assessed, G3 has no harness record; none of them counts as passed.
    for g in ("G1", "G2", "G3", "G4", "G5"):
        assert s["gates"][g]["pass"] is None, (g, s["gates"][g])
    assert s["gates"]["G1"]["reason"].startswith("not assessed") and not s["gates_passed"]
    assert "development" in s["professional_score_status"]


def test_reviews_count_and_bootstrap_seeded(release, tmp_path):
    out = tmp_path / "run"
    for iid in ("C05-02", "F06-02"):
        _perfect(release, out, iid)
    rev = tmp_path / "rev.json"
    write_json(rev, {"reviews": [{"instance": "C05-02", "check": "C05.4", "score": 1}]})
    a = score_submission(release, [out, out], "x", reviews=rev, bootstrap_n=200, seed=1)
    b = score_submission(release, [out, out], "x", reviews=rev, bootstrap_n=200, seed=1)
    assert a["bootstrap_95"] == b["bootstrap_95"]
    lo, hi = a["bootstrap_95"]
    assert lo <= a["professional_score"] <= hi
    c05 = a["run_details"][0]["templates"]["C05"]
    assert 0 < c05 < 1  # one of two test instances answered; C05-02 has its expert check reviewed


def test_references_record_their_crosscheck_and_pro_score_skips_a_not_ranked_one(release, tmp_path):
    import json

    from icl.crosscheck import not_ranked_reason

    for iid in ("C01-00", "C01-02", "F06-02"):  # train and noisy test instances: true values are checked
        doc = json.loads((release / "private" / "references" / f"{iid}.json").read_text())
        case = doc["crosscheck"]["cases"]["base"]
        assert doc["crosscheck"]["ranked"] and not_ranked_reason(doc) is None
        assert case["metrics"]["full_l1"]["value"] < 1e-3 and case["metrics"]["full_l1"]["limit"] <= 0.02 / 3
    c05 = json.loads((release / "private" / "references" / "C05-02.json").read_text())
    # The thick-eye cases go through the thick second path (icl.eye.far_field) and rank when they agree.
    assert len(c05["crosscheck"]["cases"]) == 8 and c05["crosscheck"]["ranked"] and not_ranked_reason(c05) is None
    for c in c05["crosscheck"]["cases"].values():
        assert c["methods"][1]["name"] == "icl.eye.far_field + icl.optics.mft"
        assert c["metrics"]["full_l1"]["ok"] and c["metrics"]["full_l1"]["limit"] == pytest.approx(0.002 / 3)
    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    ref = copy / "private" / "references" / "C01-02.json"
    doc = json.loads(ref.read_text())
    doc["not_ranked"] = "the two solvers disagree: full_l1 0.05 > 0.00667"
    ref.write_text(json.dumps(doc))
    r = score_run(copy, tmp_path / "empty", "test")
    assert r["not_ranked"] == {"C01-02": doc["not_ranked"]}
    assert "C01-02" not in r["instances"] and all(c["instance"] != "C01-02" for c in r["checks"])


def test_a_template_with_every_reference_not_ranked_is_frozen_out_not_zero(release, tmp_path):
    import json

    copy = tmp_path / "rel"
    shutil.copytree(release, copy)
    split = json.loads((copy / "private" / "splits.json").read_text())["instances"]
    for row in split:
        if row["template"] == "C01" and row["split"] == "test":
            ref = copy / "private" / "references" / f"{row['id']}.json"
            ref.write_text(json.dumps(dict(json.loads(ref.read_text()), not_ranked="solvers disagree")))
    good = tmp_path / "good"
    for row in split:
        if row["template"] == "C05" and row["split"] == "test":
            _perfect(copy, good, row["id"])
    r = score_run(copy, good, "test")
    assert r["frozen_templates"] == ["C01"] and "C01" not in r["missing_templates"]
    # Group C is the mean of the templates still in play (C05 here; C02-C04, C06 score 0 as missing).
    in_play = [v for k, v in r["templates"].items() if k[0] == "C" and k != "C01"]
    assert r["groups"]["C"] == pytest.approx(np.mean(in_play)) and r["templates"]["C05"] > 0

"""Answers that follow the public task texts pass (issue 31's contract gaps): E03's fixation uncertainty read as
the stated bound, F05.2 normalised by the raw candidate's total, on every split of a small release (held-out
inputs carry measurement error). full-model (icl.pro.baselines.full) answers from the inputs and the texts."""

from __future__ import annotations

import pytest

from icl.pro.baselines import full
from icl.pro.evaluate import build_inputs
from icl.pro.generate import generate
from icl.pro.score import score_run


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    rel = tmp_path_factory.mktemp("public-text") / "rel"
    generate(rel, per_template=4, seed=5, progress=False, only=["E03", "F05"])
    return rel


@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_answers_from_the_public_text_pass(release, tmp_path, split):
    ids = sorted(p.name for p in (release / "inputs" / split).iterdir())
    build_inputs(release, {"all": ids}, tmp_path / "in", split=split)
    full.run("full-model", tmp_path / "in" / "all", tmp_path / "out")
    r = score_run(release, tmp_path / "out", split=split, instances=ids)
    got = {(c["instance"], c["check"]): c["score"] for c in r["checks"]
           if c["check"] in ("E03.1", "E03.2", "F05.1", "F05.2")}
    assert len(got) == 2 * len(ids) and all(v == 1.0 for v in got.values()), got


def test_e03_states_a_bound_and_f05_the_raw_candidate(release):
    from icl.io import load_json

    task = load_json(next(release.glob("inputs/test/E03-*/task.json")))
    assert "a bound, not a standard deviation" in task["fixation_uncertainty"]
    f05 = load_json(next(release.glob("inputs/test/F05-*/task.json")))
    assert "raw PSF" in next(c["text"] for c in f05["checks"] if c["id"] == "F05.2")

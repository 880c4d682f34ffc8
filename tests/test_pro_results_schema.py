"""One results schema: the contract validator and the scorer read energy.json and the PSF files alike.

Before, the validator wanted ``transmitted``/``clipped`` and the scorer ``recorded``/``cropped``: a ledger
the validator accepted scored 0 and the scorer's own format failed the validator. Now both use
:mod:`icl.pro.results_schema`; a check fed by an invalid file scores 0 with the file, field and problem,
and the run's ``result_issues`` list every problem.
"""

import numpy as np
import pytest
from icl.io import load_json, load_npz, write_json
from icl.pro.contract import validate_results
from icl.pro.generate import DET_PITCH, generate
from icl.pro.results_schema import validate_file, validate_output, write_psf
from icl.pro.score import score_run

IID = "C01-02"  # a test instance: C01.1 (PSF) and C01.3 (energy ledger) read result files


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema") / "rel"
    generate(d, per_template=4, seed=2, progress=False, only=["C01"])
    return d


def _ledger(release):
    """The reference ledger of C01-02 written in the results schema."""
    want = load_json(release / "private" / "references" / f"{IID}.json")["checks"]["C01.3"]["cases"]["base"]
    transmitted = want["incident"] - want["blocked"]
    return {
        "units": "source_flux",
        "incident": want["incident"],
        "reflected": 0.0,
        "absorbed": 0.0,
        "blocked": want["blocked"],
        "transmitted": transmitted,
        "clipped": transmitted - want["recorded"],
        "numerical_residual": 0.0,
    }


def _answer(release, out):
    case = out / "results" / IID / "base"
    a = load_npz(release / "private" / "psf" / IID / "base.npz", required=("psf", "x_arcmin", "y_arcmin"))
    write_psf(case / "psf_linear.npz", a["psf"], a["x_arcmin"], a["y_arcmin"], DET_PITCH, [550.0])
    write_json(case / "energy.json", _ledger(release))
    return case


def _by_check(r):
    return {c["check"]: c for c in r["checks"] if c["instance"] == IID}


def test_a_ledger_the_validator_accepts_scores_full(release, tmp_path):
    case = _answer(release, tmp_path / "run")
    assert validate_file(case, "energy.json") == [] and validate_file(case, "psf_linear.npz") == []
    r = score_run(release, tmp_path / "run", instances=[IID])
    by = _by_check(r)
    assert by["C01.3"]["score"] == 1.0 and by["C01.1"]["score"] == 1.0
    assert r["result_issues"] == []


def test_the_old_scorer_ledger_fails_both_with_file_and_field(release, tmp_path):
    case = _answer(release, tmp_path / "run")
    good = _ledger(release)
    old = {
        "incident": good["incident"],
        "reflected": 0.0,
        "absorbed": 0.0,
        "blocked": good["blocked"],
        "recorded": good["transmitted"] - good["clipped"],
        "cropped": good["clipped"],
        "numerical_residual": 0.0,
    }
    write_json(case / "energy.json", old)
    # The contract validator (a folder of cases) and the scorer name the same fields.
    fields = {i.field for i in validate_results(case.parent).issues if i.file == "base/energy.json"}
    assert {"recorded", "cropped", "transmitted", "clipped", "units"} <= fields
    r = score_run(release, tmp_path / "run", instances=[IID])
    c = _by_check(r)["C01.3"]
    assert c["score"] == 0.0
    assert (
        f"invalid results/{IID}/base/energy.json" in c["reason"] and "recorded: unknown field" in c["reason"]
    )
    listed = {(i["file"], i["field"]) for i in r["result_issues"]}
    assert (f"results/{IID}/base/energy.json", "transmitted") in listed
    # The PSF check, fed by a valid file, keeps its mark.
    assert _by_check(r)["C01.1"]["score"] == 1.0


def test_an_invalid_psf_scores_zero_with_the_field(release, tmp_path):
    case = _answer(release, tmp_path / "run")
    a = dict(np.load(case / "psf_linear.npz"))
    a["units"] = np.array("counts")  # display units: not linear flux per pixel
    np.savez(case / "psf_linear.npz", **a)
    r = score_run(release, tmp_path / "run", instances=[IID])
    c = _by_check(r)["C01.1"]
    assert c["score"] == 0.0 and "psf_linear.npz: units: must be one of" in c["reason"]
    assert {(i["file"], i["field"]) for i in r["result_issues"]} == {
        (f"results/{IID}/base/psf_linear.npz", "units")
    }
    assert _by_check(r)["C01.3"]["score"] == 1.0


def test_unbalanced_or_gaining_ledgers(release, tmp_path):
    case = _answer(release, tmp_path / "run")
    led = _ledger(release)
    write_json(case / "energy.json", dict(led, transmitted=led["transmitted"] + 0.1))  # does not close
    r = score_run(release, tmp_path / "run", instances=[IID])
    assert _by_check(r)["C01.3"]["score"] == 0.0 and "numerical_residual" in _by_check(r)["C01.3"]["reason"]
    # Closed by a declared negative residual: valid, but an unexplained gain (gate G2).
    write_json(case / "energy.json", dict(led, transmitted=led["transmitted"] + 0.1, numerical_residual=-0.1))
    assert validate_file(case, "energy.json") == []
    r = score_run(release, tmp_path / "run", instances=[IID])
    assert _by_check(r)["C01.3"]["score"] == 0.0 and "energy gain" in _by_check(r)["C01.3"]["reason"]
    assert r["gates"]["G2"]["pass"] is False


def test_validate_output_is_bounded_and_never_follows_links(tmp_path):
    out = tmp_path / "out"
    deep = out / "results" / "X-01" / "base"
    deep.mkdir(parents=True)
    (deep / "energy.json").write_text('{"incident": 1' + "0" * 400 + "}")  # beyond a double: reported
    (deep / "metrics.json").symlink_to("/etc/passwd")
    nest = deep / "a"
    for _ in range(200):
        nest = nest / "a"
    nest.mkdir(parents=True)
    (nest / "energy.json").write_text("not json")  # below the results layout: not read
    issues = validate_output(out)
    files = {(i["file"], i["field"]) for i in issues}
    assert ("results/X-01/base/energy.json", "") in files  # the loader refuses the number (overflow)
    assert ("results/X-01/base/metrics.json", "") in files
    assert all("/a/" not in f for f, _ in files)

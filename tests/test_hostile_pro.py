"""``icl pro-score`` and ``icl pro-validate`` against hostile artifacts, in-process through the CLI.

Scoring: each broken artifact scores 0 for its case with the reason, the other instance of the split
keeps full marks, no pickle payload runs and the score file is written whole. Validation: every hostile
file is reported by file and field with exit status 1, never a crash and never a hang.
"""

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from hostile import corpus
from icl.cli import main
from icl.io import load_json, load_npz
from icl.pro.generate import DET_PITCH, generate
from icl.pro.results_schema import PSF_KEYS, write_psf
from test_pro_contract import make_submission

BROKEN, CLEAN = "C05-02", "C05-03"  # the two test-split instances of template C05


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_pro") / "rel"
    generate(d, per_template=4, seed=11, progress=False, only=["C05"])
    return d


def _perfect(release, out, iid):
    for p in (release / "private" / "psf" / iid).glob("*.npz"):
        a = load_npz(p, required=("psf", "x_arcmin", "y_arcmin"))
        for stem in ("psf_linear", "psf_repeat"):
            write_psf(out / "results" / iid / p.stem / f"{stem}.npz", a["psf"], a["x_arcmin"], a["y_arcmin"],
                      DET_PITCH, [550.0])


# case folder -> (artifact, how it is broken, text the PSF check's reason must hold for that case)
PSF_HOSTILE = {
    "black_off": ("pickle-payload", "object arrays are refused"),
    "black_on": ("bad-crc", "corrupt npz archive: BadZipFile"),
    "clear_off": ("zip-bomb", "more than the stored data"),
    "clear_on": ("fifo", "missing clear_on/psf_linear.npz"),
    "solid_off": ("symlink-out", "symbolic links are refused"),
}
ENERGY_HOSTILE = {"solid_on": '{"incident": 1' + "0" * 400 + "}", "index_matched_on": corpus.DEEP_JSON,
                  "index_matched_off": corpus.NAN_JSON}


@pytest.fixture(scope="module")
def scored(release, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_pro_run")
    run, outside = root / "run", root / "outside"
    outside.mkdir()
    for iid in (BROKEN, CLEAN):
        _perfect(release, run, iid)
    case = run / "results" / BROKEN
    for name, (how, _) in PSF_HOSTILE.items():
        folder = case / name
        target = folder / "psf_linear.npz"
        if how == "symlink-out":
            shutil.move(target, outside / "psf_linear.npz")  # a perfect answer, but outside the run
            corpus.outside_symlink(folder, target.name, outside / "psf_linear.npz")
            continue
        target.unlink()
        if how == "pickle-payload":
            corpus.pickle_payload(folder, target.name, list(PSF_KEYS))  # every key the schema asks for
        elif how == "bad-crc":
            corpus.corrupt_crc(folder, target.name, psf=np.ones((3, 3)), **{k: np.zeros(2) for k in PSF_KEYS[1:]})
        elif how == "zip-bomb":
            corpus.zip_bomb(folder, target.name, "psf", others=PSF_KEYS[1:])
        elif how == "fifo":
            corpus.fifo(folder, target.name)
    for name, text in ENERGY_HOSTILE.items():
        corpus.json_text(case / name, "energy.json", text)
    out = root / "scores" / "score.json"
    res = CliRunner().invoke(main, ["pro-score", str(release), str(run), "--output", str(out)])
    return res, run, out


def test_pro_score_survives_and_writes_a_whole_file(scored):
    res, run, out = scored
    assert res.exit_code == 0 and res.exception is None, res.output
    assert [p.name for p in out.parent.iterdir()] == ["score.json"]
    doc = load_json(out)
    assert doc["runs"] == 1 and set(doc["run_details"][0]["instances"]) == {BROKEN, CLEAN}
    assert not any(p.name == corpus.MARKER for p in run.rglob("*")), "a pickle payload was executed"


def _checks(out, iid):
    return {c["check"]: c for c in load_json(out)["run_details"][0]["checks"] if c["instance"] == iid}


def test_each_hostile_psf_is_named_in_the_reason(scored):
    c = _checks(scored[2], BROKEN)["C05.1"]
    # Five of eight cases broken: fewer than half within tolerance, so the rubric gives 0.
    assert c["score"] == 0.0
    for name, (_, needle) in PSF_HOSTILE.items():
        part = next(p for p in c["reason"].split("; ") if p.split(": ")[0].endswith(name))
        assert needle in part, part


def test_hostile_energy_ledgers_score_zero(scored):
    c = _checks(scored[2], BROKEN)["C05.2"]
    assert c["score"] == 0.0 and c["reason"]


def test_the_clean_instance_keeps_full_marks(scored):
    checks = _checks(scored[2], CLEAN)
    assert checks["C05.1"]["score"] == 1.0 and checks["C05.3"]["score"] == 1.0
    assert checks["C05.4"]["score"] is None  # expert check: pending, never guessed


@pytest.fixture
def sub(tmp_path):
    return make_submission(tmp_path / "sub")


@pytest.mark.parametrize("make, file, needle", [
    (lambda c: corpus.pickle_payload(c, "paths.npz", ["branch", "points_mm", "weights"]), "paths.npz",
     "pickle"),
    (lambda c: corpus.zip_bomb(c, "psf_linear.npz", "psf"), "psf_linear.npz", ""),
    (lambda c: corpus.corrupt_crc(c, "psf_linear.npz", psf=np.ones((1, 16, 16))), "psf_linear.npz", ""),
    (lambda c: corpus.device_link(c, "energy.json"), "energy.json", ""),
    (lambda c: corpus.fifo(c, "energy.json"), "energy.json", "special file"),
    (lambda c: corpus.json_text(c, "metrics.json", corpus.DEEP_JSON), "metrics.json", "nested"),
    (lambda c: corpus.json_text(c, "energy.json", corpus.HUGE_INT_JSON), "energy.json", "overflows"),
    (lambda c: corpus.json_text(c, "metrics.json", corpus.NON_UTF8), "metrics.json", "UTF-8"),
], ids=["pickle-payload", "zip-bomb", "bad-crc", "dev-zero-link", "fifo", "deep-json", "huge-int",
        "non-utf8"])
def test_pro_validate_reports_hostile_files(sub, make, file, needle):
    case = sub / "results" / "C05"
    (case / file).unlink()
    make(case)
    res = CliRunner().invoke(main, ["pro-validate", str(sub), "--json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.output)
    assert report["ok"] is False and report["code_sha256"] is None
    mine = [i for i in report["issues"] if i["file"] == f"results/C05/{file}"]
    assert mine and any(needle in i["message"] for i in mine), report["issues"]
    assert not (case / corpus.MARKER).exists()


def test_sets_json_inside_an_output_folder_is_not_trusted(tmp_path):
    # A program could write its own sets.json claiming clean harness records; beside results/ it is refused.
    from icl.errors import InputError
    from icl.pro.score import load_sets

    (tmp_path / "results").mkdir()
    (tmp_path / "sets.json").write_text('{"sets": [{"set": "base", "instances": [], "output": "x", '
                                        '"record": {"ok": true, "violations": []}}]}')
    with pytest.raises(InputError, match="not trusted"):
        load_sets(tmp_path)
    (tmp_path / "results").rmdir()
    (tmp_path / "sets.json").write_text('{"sets": [{"set": "base", "instances": [], "output": "x", '
                                        '"record": {"ok": true, "violations": [1]}}]}')
    with pytest.raises(InputError, match="violation names"):
        load_sets(tmp_path)

"""Commands replace folders only under --force, keep the output names given, and check what they read.

Item by item: folders are replaced only under the generators' ``--force`` rule (``pro-baselines``,
``pro-baselines-eval``, ``calibrate``); an output keeps its name or is refused (``render``), and the
commands that write a manifest start from an empty folder (``eye-trace``, ``scene``); a file of another
kind is an error (exit 2), a hard-linked answer file is not the submission's, and an unknown template id
or an empty selection is refused with the valid ids.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.errors import InputError, OutputError
from icl.io import load_json
from test_halo_release import shared_release

SCENE = cases_dir() / "examples" / "scene.json"
EYE = cases_dir() / "examples" / "eye"
SMALL_SCENE = {"detector": {"n": 32, "pitch_arcsec": 4.0}, "sources": [{"id": "L1"}]}


def _icl(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# ------------------------------------------------------------ item 3: folders replaced only under --force


def test_pro_baselines_keeps_an_existing_folder_without_force(tmp_path):
    notes = tmp_path / "bl" / "constant" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("mine")
    res = _icl("pro-baselines", "--output", tmp_path / "bl")
    assert res.exit_code == 2 and "not empty" in res.output and "--force" in res.output, res.output
    assert notes.read_text() == "mine" and _listing(tmp_path / "bl") == ["constant", "constant/notes.txt"]
    res = _icl("pro-baselines", "--output", tmp_path / "bl", "--force")
    assert res.exit_code == 0, res.output
    assert not notes.exists() and (tmp_path / "bl" / "constant" / "run").is_file()


def _fake_pro_release(root: Path) -> Path:
    """Just enough of a release for the evaluation to reach its working folder on the old code."""
    rel = root / "rel"
    (rel / "private").mkdir(parents=True)
    (rel / "inputs" / "test" / "C01-01").mkdir(parents=True)
    (rel / "inputs" / "test" / "C01-01" / "task.json").write_text('{"cases": [], "checks": []}')
    rows = [{"id": "C01-01", "template": "C01", "split": "test"}]
    (rel / "private" / "splits.json").write_text(json.dumps({"instances": rows}))
    sub = root / "baselines" / "sub"
    sub.mkdir(parents=True)
    (sub / "run").write_text("#!/bin/sh\nexit 0\n")
    (sub / "run").chmod(0o755)
    return rel


def test_pro_baselines_eval_keeps_an_existing_work_folder_without_force(tmp_path):
    rel = _fake_pro_release(tmp_path)
    work = tmp_path / "work"
    kept = [work / "inputs" / "base" / "keep.txt", work / "sub" / "run0" / "keep.txt"]
    for k in kept:
        k.parent.mkdir(parents=True)
        k.write_text("mine")
    before = _listing(work)
    res = _icl("pro-baselines-eval", rel, tmp_path / "baselines", "--work", work, "--runs", "1")
    assert res.exit_code == 2 and "not empty" in res.output and "--force" in res.output, res.output
    assert _listing(work) == before and all(k.read_text() == "mine" for k in kept)


def test_the_evaluation_helpers_never_replace_a_folder(tmp_path):
    from icl.pro.evaluate import build_inputs, run_sets, write_baselines

    (tmp_path / "in" / "base").mkdir(parents=True)
    (tmp_path / "runs" / "run0").mkdir(parents=True)
    (tmp_path / "bl" / "constant").mkdir(parents=True)
    with pytest.raises(OutputError, match="already exists"):
        build_inputs(tmp_path / "rel", {"base": ["C01-01"]}, tmp_path / "in")
    with pytest.raises(OutputError, match="already exists"):
        run_sets(tmp_path / "sub", {}, {}, tmp_path / "runs" / "run0", "0" * 64)
    with pytest.raises(OutputError, match="already exists"):
        write_baselines(tmp_path / "bl", ["constant"])
    assert _listing(tmp_path) == ["bl", "bl/constant", "in", "in/base", "runs", "runs/run0"]


def test_calibrate_keeps_an_unfinished_release_folder_without_force(tmp_path):
    notes = tmp_path / "work" / "release" / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("mine")
    res = _icl("calibrate", "patient", "--work", tmp_path / "work", "--output", tmp_path / "report",
               "--replicates", "10")
    assert res.exit_code == 2 and "not empty" in res.output, res.output
    assert notes.read_text() == "mine"


def test_calibrate_does_not_take_another_track_s_release(tmp_path):
    other = tmp_path / "work" / "release"
    other.mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"package": "icl-bench", "kind": "patient-demo"}))
    res = _icl("calibrate", "forensics", "--work", tmp_path / "work", "--output", tmp_path / "report",
               "--replicates", "10")
    assert res.exit_code == 2 and "another track" in res.output, res.output


# --------------------------------------------- item 4: names kept or refused; manifests from empty folders


@pytest.mark.parametrize("name", ["scene.json", "out.dat", "out"])
def test_render_writes_the_name_given_or_nothing(tmp_path, name):
    spec = tmp_path / "in.json"
    spec.write_text(json.dumps(SMALL_SCENE))
    res = _icl("render", spec, "-o", tmp_path / name)
    assert res.exit_code == 2 and ".npz" in res.output and name in res.output, res.output
    assert _listing(tmp_path) == ["in.json"]  # neither the name given nor a renamed file
    assert _icl("render", spec, "-o", tmp_path / "out.npz").exit_code == 0


def _eye_trace(out, *extra):
    files = [(f"--{name}", EYE / f"{name}.json") for name in ("eye", "implant", "illumination", "detector")]
    return _icl("eye-trace", *(x for pair in files for x in pair), "--paths", "lens", "--output", out, *extra)


def test_eye_trace_writes_into_an_absent_or_empty_folder_only(tmp_path):
    out = tmp_path / "et"
    out.mkdir()
    (out / "old.npz").write_bytes(b"an earlier run's file")
    res = _eye_trace(out)
    assert res.exit_code == 2 and "not empty" in res.output, res.output
    assert _listing(out) == ["old.npz"]
    res = _eye_trace(out, "--force")
    assert res.exit_code == 0, res.output
    manifest = load_json(out / "manifest.json")
    assert sorted(manifest["files"]) == sorted(p for p in _listing(out) if p != "manifest.json")
    assert "old.npz" not in manifest["files"]


def test_scene_writes_into_an_absent_or_empty_folder_only(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SMALL_SCENE, "variants": {"clear": {"icl": None}}}))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_text("x")
    res = _icl("scene", spec, "--output", tmp_path / "out")
    assert res.exit_code == 2 and "not empty" in res.output, res.output
    assert _listing(tmp_path / "out") == ["stale.txt"]


# ---------------------------------------------------- item 5: every loader checks what it was given


def test_contest_score_on_a_scene_is_an_error(tmp_path):
    res = _icl("contest-score", SCENE, "--output", tmp_path / "rec.json")
    assert res.exit_code == 2 and "not a contest evaluation file" in res.output, res.output
    assert str(SCENE) in res.output and not (tmp_path / "rec.json").exists()


@pytest.fixture(scope="module")
def patient_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("patient") / "set"
    assert _icl("patient-demo", "--output", out).exit_code == 0
    return out


def test_patient_score_on_a_scene_as_predictions_is_an_error(patient_set, tmp_path):
    res = _icl("patient-score", "--reference", patient_set / "private" / "reference.json", "--predictions",
               SCENE, "--output", tmp_path / "s.json")
    assert res.exit_code == 2 and "not a prediction file" in res.output, res.output
    assert not (tmp_path / "s.json").exists()


def test_patient_score_refuses_a_hard_linked_prediction(patient_set, tmp_path):
    oracle = tmp_path / "oracle.json"
    shutil.copyfile(patient_set / "private" / "oracle_prediction.json", oracle)
    os.link(oracle, tmp_path / "linked.json")
    ref = patient_set / "private" / "reference.json"
    res = _icl("patient-score", "--reference", ref, "--predictions", tmp_path / "linked.json", "--output",
               tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    doc = load_json(tmp_path / "s.json")
    assert doc["patient_perception_score"] == 0.0
    assert all("hard link" in m["reason"] for m in doc["missing_or_invalid"])


@pytest.fixture(scope="module")
def halo_release(tmp_path_factory):
    return shared_release(tmp_path_factory)


def _halo_score(release, sub, out):
    res = _icl("halo-evaluate", "--release", release, "--submission", sub, "--output", out)
    assert res.exit_code == 0, res.output
    return load_json(out)


def test_halo_evaluate_refuses_hard_links_to_the_private_answers(halo_release, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    for p in sorted((halo_release / "private").glob("H*.npz")):
        os.link(p, sub / p.name)  # someone who can write beside the evaluator
    doc = _halo_score(halo_release, sub, tmp_path / "s.json")
    assert doc["halo_development_score"] == 0.0
    reasons = {c["reason"] for case in doc["cases"].values() for c in case["conditions"].values()}
    assert reasons == {"this is one of the release's private answer files, not a submitted one"}


def test_halo_evaluate_refuses_the_private_folder_itself_and_any_hard_link(halo_release, tmp_path):
    doc = _halo_score(halo_release, halo_release / "private", tmp_path / "s.json")
    assert doc["halo_development_score"] == 0.0  # the entries are the private files under their own names
    sub, elsewhere = tmp_path / "sub", tmp_path / "elsewhere"
    sub.mkdir()
    elsewhere.mkdir()
    for p in sorted((halo_release / "private").glob("H*.npz")):
        shutil.copyfile(p, elsewhere / p.name)
        os.link(elsewhere / p.name, sub / p.name)
    doc = _halo_score(halo_release, sub, tmp_path / "s2.json")
    assert doc["halo_development_score"] == 0.0
    conds = [c for case in doc["cases"].values() for c in case["conditions"].values()]
    assert conds and all("hard link" in c["reason"] for c in conds)


def test_unknown_template_ids_and_an_empty_selection_are_refused(tmp_path):
    for only, needle in (("A02,ZZZ", "unknown template id(s) ['ZZZ']"), ("", "no template selected")):
        res = _icl("pro-generate", "--output", tmp_path / "rel", "--seed", "1", "--only", only)
        assert res.exit_code == 2 and needle in res.output, res.output
        assert "A01 A02" in res.output and "F06" in res.output  # the valid ids are listed
        assert not (tmp_path / "rel").exists()


def test_the_generator_refuses_them_too(tmp_path):
    from icl.pro.catalog import load_catalog
    from icl.pro.generate import generate

    assert load_catalog().select(["A02", "B01"]) == ["A02", "B01"]
    for only in (["B99"], []):
        with pytest.raises(InputError, match="the valid ids are A01"):
            generate(tmp_path / "rel", per_template=4, seed=1, progress=False, only=only)

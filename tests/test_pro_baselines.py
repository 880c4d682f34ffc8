"""Professional baselines: strategies spread, and evaluation runs through the sandboxed harness.

The harness tests run every submission under :func:`icl.pro.harness.run_submission` (first available
mechanism); hostile submissions must be blocked and score 0 for their tasks with the reason written down.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.pro.baselines.runner import run
from icl.pro.cli import pro_baselines
from icl.pro.evaluate import build_inputs, evaluate, input_sets, run_sets, select_instances
from icl.pro.generate import generate
from icl.pro.harness import tree_sha256
from icl.pro.score import score_run, score_submission


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("rel")
    generate(d, per_template=4, seed=2, progress=False, only=["A01", "C01", "C05", "D02", "F03"])
    return d


def test_baselines_spread(release, tmp_path):
    ids = select_instances(release, 1)
    assert [i[:3] for i in ids] == ["A01", "C01", "C05", "D02", "F03"]
    sub = tmp_path / "sub"
    build_inputs(release, {"all": ids}, sub)
    totals = {}
    for s in ("constant", "ignores_hole"):
        run(s, sub / "all", tmp_path / s)
        totals[s] = score_submission(release, [tmp_path / s], s, instances=ids, bootstrap_n=20)[
            "professional_score"
        ]
    # Only 5 of 36 templates are generated here (maximum reachable total about 14); the constant PSF
    # earns only F03's repeat and manifest checks (2 of 3 in one of six F templates: 10 x 2/3 / 6 = 1.11).
    assert totals["constant"] == pytest.approx(10 / 9) and totals["ignores_hole"] > 5.0


def test_baseline_folders(tmp_path):
    res = CliRunner().invoke(pro_baselines, ["--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for s in ("constant", "gaussian", "hand_halo", "geometric", "ignores_hole"):
        run_script = Path(tmp_path / s / "run")
        assert run_script.stat().st_mode & 0o111 and "icl.pro.baselines.runner " + s in run_script.read_text()
        assert (tmp_path / s / "source" / "icl" / "pro" / "baselines" / "runner.py").is_file()
        assert list((tmp_path / s / "source" / "icl").glob("_core*.so"))
    from icl.pro.contract import validate_submission

    # The ceiling is contract-complete (report, model, experiments, a demonstration case with six files).
    rep = validate_submission(tmp_path / "full-model")
    assert rep.ok, rep.issues


def test_input_sets_separate_interventions():
    sets = input_sets(["A01-04", "C05-04", "D02-04", "D02-05", "D04-04"])
    assert sets == {
        "base": ["A01-04", "C05-04"],
        "intervention-D02": ["D02-04", "D02-05"],
        "intervention-D04": ["D04-04"],
    }


def test_baseline_through_harness_matches_direct_run(release, tmp_path):
    from icl.pro.evaluate import write_baselines

    ids = select_instances(release, 1)
    (sub,) = write_baselines(tmp_path / "subs", ["ignores_hole"])
    (s,) = evaluate(release, [sub], tmp_path / "work", runs=1, instances=ids, bootstrap_n=20, progress=False)
    det = s["run_details"][0]
    assert s["gates"]["G3"]["pass"] is True and s["completion_rate"] == 1.0
    # base, intervention-D02 and the hidden sampling-check set (C01 and F03 again, finer sampling)
    assert (
        det["cost"]["sets"] == 3 and det["cost"]["wall_s"] > 0 and det["cost"]["peak_rss_bytes"] > 10 * 2**20
    )
    # The sandboxed run scores the same as running the strategy in this process (same code, same inputs).
    build_inputs(release, {"all": ids}, tmp_path / "direct_in")
    run("ignores_hole", tmp_path / "direct_in" / "all", tmp_path / "direct")
    direct = score_run(release, tmp_path / "direct", instances=ids)
    assert [c["score"] for c in det["checks"]] == [c["score"] for c in direct["checks"]]


CHEAT = '''#!/usr/bin/env python3
"""Hostile: copy the evaluator's reference PSFs (host path) as answers{extra}."""
import socket, sys
from pathlib import Path
import numpy as np
inp, out = Path(sys.argv[1]), Path(sys.argv[2])
for inst in sorted(p for p in inp.iterdir() if p.is_dir()):
    try:
        refs = sorted(Path("{private}", "psf", inst.name).iterdir())
    except OSError as exc:
        print("refused:", exc, file=sys.stderr)
        refs = []
    for ref in refs:
        dst = out / "results" / inst.name / ref.stem
        dst.mkdir(parents=True, exist_ok=True)
        a = dict(np.load(ref))  # completed to the results schema: grid, field of view, units
        n, pitch = a["psf"].shape[0], 60.0 * float(a["x_arcmin"][1] - a["x_arcmin"][0])
        np.savez(dst / "psf_linear.npz", angular_pixel_arcsec=np.float64(pitch), wavelength_nm=np.array([550.0]),
                 fov_arcmin=np.array([n, n]) * pitch / 60.0, units=np.array("source_flux_per_pixel"),
                 normalisation=np.array("source_flux"), **a)
    if {net}:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1.0)
        try:
            s.connect(("192.0.2.1", 80))
        except OSError as exc:
            print("connect refused:", exc, file=sys.stderr)
'''


def _cheat(folder: Path, private: Path, net: bool) -> Path:
    folder.mkdir(parents=True)
    text = CHEAT.replace("{extra}", " and phone home" if net else "").replace("{private}", str(private))
    (folder / "run").write_text(text.replace("{net}", str(net)))
    (folder / "run").chmod(0o755)
    folder.chmod(0o755)
    return folder


@pytest.mark.parametrize("net", [False, True], ids=["reads_private", "opens_socket"])
def test_hostile_submission_is_blocked_and_scores_zero(release, tmp_path, net):
    ids = [i for i in select_instances(release, 1) if i.startswith("C05")]
    sets = {"base": ids}
    inputs = build_inputs(release, sets, tmp_path / "in")
    sub = _cheat(tmp_path / "cheat", release / "private", net)
    # Control: outside the sandbox the cheat works and earns the full PSF check; the test can fail.
    subprocess.run(
        [sys.executable, str(sub / "run"), str(inputs["base"]), str(tmp_path / "free")], check=True
    )
    free = {c["check"]: c["score"] for c in score_run(release, tmp_path / "free", instances=ids)["checks"]}
    assert free["C05.1"] == 1.0
    doc = run_sets(sub, inputs, sets, tmp_path / "run0", tree_sha256(sub), cpus=1, memory="1G", timeout_s=60)
    rec = doc["sets"][0]["record"]
    assert not list((tmp_path / "run0" / "base").rglob("*.npz"))  # the private files were out of reach
    r = score_run(release, tmp_path / "run0", instances=ids)
    assert all(c["score"] == 0.0 for c in r["checks"] if c["mode"] == "auto")
    if net:
        assert rec["ok"] is False and "network" in rec["violations"]
        assert all(c["reason"].startswith("harness run not ok: network") for c in r["checks"])
        assert r["gates"]["G3"]["pass"] is False and r["completion_rate"] == 0.0
    else:
        assert (
            rec["ok"] is True
            and "refused" in (tmp_path / "run0" / "logs" / "base" / "stderr.log").read_text()
        )
        assert r["gates"]["G3"]["pass"] is True


def test_changed_code_is_not_run_and_scores_zero(release, tmp_path):
    ids = [i for i in select_instances(release, 1) if i.startswith("F03")]
    sets = {"base": ids}
    inputs = build_inputs(release, sets, tmp_path / "in")
    sub = _cheat(tmp_path / "sub", release / "private", False)
    frozen = tree_sha256(sub)
    (sub / "run").write_text((sub / "run").read_text() + "# edited after freezing\n")
    doc = run_sets(sub, inputs, sets, tmp_path / "run0", frozen, cpus=1, memory="1G", timeout_s=60)
    assert doc["sets"][0]["record"]["violations"] == ["code_not_frozen"]
    r = score_run(release, tmp_path / "run0", instances=ids)
    assert r["gates"]["G3"]["pass"] is False
    assert all(c["score"] == 0.0 and "code_not_frozen" in c["reason"] for c in r["checks"])
    shutil.rmtree(tmp_path / "run0")


def test_sampling_intervention_flip_fails_g4(tmp_path):
    """G4 measured: the hidden sampling-check set repeats instances with finer sampling; a key conclusion
    that changes between the cold start and that set fails G4 (here a vault and its category)."""
    from icl.io import load_json, write_json
    from icl.pro.evaluate import SAMPLING_SET, build_inputs, mark_sampling, record_sampling_check
    from icl.sandbox.signing import artifact_hashes, sign

    sets = input_sets(["A01-04", "C01-04", "C01-05", "D02-04", "F03-04"], sampling=True)
    assert sets[SAMPLING_SET] == ["C01-04", "F03-04"]  # the first instance of each sampled template
    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=2, progress=False, only=["A02"])
    ids = select_instances(rel, 2)
    inputs = build_inputs(rel, {"base": ids, SAMPLING_SET: ids[:1]}, tmp_path / "inputs")
    mark_sampling(inputs[SAMPLING_SET], rel)
    assert load_json(inputs[SAMPLING_SET] / ids[0] / "task.json")["sampling"]["pupil_samples_factor"] == 2.0
    assert "sampling" not in load_json(inputs["base"] / ids[0] / "task.json")
    refs = load_json(rel / "private" / "references" / f"{ids[0]}.json")["checks"]

    def fake_run(name: str, vault_shift: float, category: str) -> Path:
        run = tmp_path / name
        ok = {"ok": True, "exit_status": 0, "violations": [], "frozen_sha256": "h", "code_sha256_before": "h",
              "code_sha256_after": "h"}
        for s, dv, cat in (("base", 0.0, refs["A02.2"]["value"]), (SAMPLING_SET, vault_shift, category)):
            write_json(run / s / "results" / ids[0] / "base" / "metrics.json",
                       {"vault_mm": refs["A02.1"]["value"] + dv, "vault_category": cat})
        signed = {s: sign({**ok, "artifacts": artifact_hashes(run / s)}) for s in ("base", SAMPLING_SET)}
        write_json(run / "sets.json", sign({"sets": [
            {"set": "base", "instances": ids, "output": "base", "record": signed["base"]},
            {"set": SAMPLING_SET, "instances": [], "compares": ids[:1], "output": SAMPLING_SET,
             "record": signed[SAMPLING_SET]}]}))
        return run

    steady = fake_run("steady", 0.001, refs["A02.2"]["value"])  # within the 0.005 mm tolerance
    check = record_sampling_check(rel, steady)
    assert check["flips"] == [] and check["compared"] == 2  # A02.3 unanswered both times: not compared
    assert "flips" not in score_run(rel, steady)["gates"]["G4"]["reason"]
    other = "low" if refs["A02.2"]["value"] != "low" else "high"
    flipped = fake_run("flipped", 0.05, other)
    check = record_sampling_check(rel, flipped)
    assert sorted(f["check"] for f in check["flips"]) == ["A02.1", "A02.2"]
    g4 = score_run(rel, flipped)["gates"]["G4"]
    assert g4["pass"] is False and "a conclusion flips with sampling" in g4["reason"]


def test_full_model_answers_from_inputs_and_knowledge_qa_stays_low(tmp_path):
    """full-model (from the inputs, no private data) earns every auto check of templates whose answers are
    traces and formulas; knowledge-qa (no computation) earns only the text answers."""
    from icl.pro.baselines import full

    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=4, progress=False, only=["A01", "A03", "A05", "B02", "B04", "E05"])
    ids = select_instances(rel, 2)
    sub = tmp_path / "inputs"
    build_inputs(rel, {"all": ids}, sub)
    scores = {}
    for strategy in ("full-model", "knowledge-qa"):
        out = tmp_path / strategy
        assert full.run(strategy, sub / "all", out) == len(ids)
        assert not list(out.rglob("private"))
        r = score_run(rel, out, instances=ids)
        scores[strategy] = r
    auto = [c for c in scores["full-model"]["checks"] if c["mode"] == "auto"]
    assert auto and all(c["score"] == 1.0 for c in auto), [c for c in auto if c["score"] != 1.0]
    g = scores["full-model"]["gates"]
    assert g["G1"]["pass"] and g["G5"]["pass"]
    # No energy check among these templates: G2 has nothing to examine and is not assessed.
    assert g["G2"]["pass"] is None and g["G2"]["reason"].startswith("not assessed")
    kq = {c["check"]: c["score"] for c in scores["knowledge-qa"]["checks"] if c["mode"] == "auto"}
    assert kq["A05.2"] == 1.0 and kq["A03.1"] == 0.0 and kq["B04.1"] == 0.0
    assert scores["knowledge-qa"]["professional_score"] < scores["full-model"]["professional_score"] / 2

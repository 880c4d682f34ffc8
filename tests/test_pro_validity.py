"""Validity of the professional scoring: the reference answers reach the top of every auto check and pass
every gate; every auto check's answer depends on its instance; the out-of-distribution fields describe
the generated instances; a missing model/eye.json fails A04.2 and G5; a second method must really be one."""

import json
import shutil

import numpy as np
import pytest
from icl.io import load_json, write_json
from icl.pro.catalog import load_catalog
from icl.pro.generate import generate
from icl.pro.reference_answers import write_reference_run
from icl.pro.score import score_run

# The default run: templates whose builders are cheap, covering the gates (A01: G1, F02: G4, A04: G5) and
# the check kinds that need a written second computation (pair, repeat, convergence) or a rotation.
FAST = ["A01", "A04", "A05", "B02", "D04", "F01", "F02", "F03", "F04", "F06"]


def _release(tmp_path_factory, only):
    d = tmp_path_factory.mktemp("valid")
    generate(d, per_template=4, seed=3, progress=False, only=only)
    out = d / "reference_run"
    write_reference_run(d, out)
    return d, out


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    return _release(tmp_path_factory, FAST)


def _assert_reference_passes(rel, out):
    catalog = load_catalog(rel / "catalog.json")
    bad, seen = [], set()
    for split in ("train", "dev", "test", "ood"):
        r = score_run(rel, out, split, run_ok=True)
        for c in r["checks"]:
            if c["mode"] == "auto":
                seen.add(c["check"])
                if c["score"] != 1.0:
                    bad.append((c["instance"], c["check"], c["score"], c["reason"]))
        for g, v in r["gates"].items():
            assert v["pass"] is True, (split, g, v["reason"])
    assert not bad, bad
    templates = {row["template"] for row in load_json(rel / "private" / "splits.json")["instances"]}
    want = {ch.id for t in templates for ch in catalog.template(t).auto_checks}
    assert seen == want


def test_reference_answers_pass_every_auto_check_fast(fast):
    _assert_reference_passes(*fast)


@pytest.mark.slow
def test_reference_answers_pass_every_auto_check_of_every_template(tmp_path_factory):
    """The full release (every template, per-template 4: train, dev, two test and the OOD instance)."""
    rel, out = _release(tmp_path_factory, None)
    _assert_reference_passes(rel, out)
    _assert_instance_dependent(rel)
    _assert_ood_ranges(rel)


def _assert_instance_dependent(rel):
    """No auto check has one answer for every instance of its template (the answer could be memorised)."""
    catalog = load_catalog(rel / "catalog.json")
    refs: dict[str, list[str]] = {}
    for p in sorted((rel / "private" / "references").glob("*.json")):
        doc = load_json(p)
        for cid, r in doc["checks"].items():
            refs.setdefault(cid, []).append(
                json.dumps({k: v for k, v in r.items() if k not in ("case", "cases")}, sort_keys=True)
            )
        for case in (rel / "private" / "psf" / doc["instance"]).glob("*.npz"):
            refs.setdefault(f"{doc['template']}:psf", []).append(case.read_bytes().hex()[-64:])
    for t in catalog.templates:
        for ch in t.auto_checks:
            if ch.kind in ("manifest", "psf", "energy", "pair", "rotation", "repeat"):
                continue  # graded from the submission's own files or its PSFs, which differ by instance
            if ch.id in refs:
                assert len(set(refs[ch.id])) > 1, f"{ch.id}: one answer for every instance"


def _assert_ood_ranges(rel):
    catalog = load_catalog(rel / "catalog.json")
    n = 0
    for tdir in sorted((rel / "inputs" / "ood").iterdir()):
        tpl = catalog.template(tdir.name.split("-")[0])
        assert tpl.ood_ranges, tpl.id
        for case in sorted((tdir / "cases").iterdir()):
            for dotted, (lo, hi) in tpl.ood_ranges.items():
                fname, name = dotted.split(".", 1)
                v = load_json(case / f"{fname}.json")[name]["value"]
                if v is None:
                    continue  # withheld by the task (status unknown)
                assert lo - 1e-9 <= v <= hi + 1e-9, (tdir.name, case.name, dotted, v, [lo, hi])
                n += 1
    assert n > 0


def test_fast_release_answers_depend_on_the_instance(fast):
    _assert_instance_dependent(fast[0])


def test_fast_release_ood_fields_match(fast):
    _assert_ood_ranges(fast[0])


def test_missing_model_fails_a04_and_g5(fast, tmp_path):
    rel, out = fast
    run = tmp_path / "run"
    shutil.copytree(out, run)
    shutil.rmtree(run / "model")
    r = score_run(rel, run, "test", run_ok=True)
    a04 = [c for c in r["checks"] if c["check"] == "A04.2"]
    assert a04 and all(c["score"] == 0.0 and "model/eye.json missing" in c["reason"] for c in a04)
    # No model is no evidence: G5 is not assessed (and so not passed), naming the file.
    assert r["gates"]["G5"]["pass"] is None and "model/eye.json" in r["gates"]["G5"]["reason"]


def test_second_methods_must_differ_and_agree(fast, tmp_path):
    """F04.2 / F06.1: identical bytes, the same declared method or a disagreement fail; the reference run's
    second method passes."""
    rel, out = fast
    run = tmp_path / "run"
    shutil.copytree(out, run)
    iid = "F06-02"
    case = run / "results" / iid / "base"
    shutil.copyfile(case / "psf_linear.npz", case / "psf_repeat.npz")  # one computation written twice
    by = {c["check"]: c for c in score_run(rel, run, "test", instances=[iid], run_ok=True)["checks"]}
    assert by["F06.1"]["score"] == 0.0 and "round-off" in by["F06.1"]["reason"]
    m = load_json(case / "metrics.json")
    shutil.copyfile(out / "results" / iid / "base" / "psf_repeat.npz", case / "psf_repeat.npz")
    write_json(case / "metrics.json", dict(m, methods={"psf_linear": "a", "psf_repeat": "a"}))
    by = {c["check"]: c for c in score_run(rel, run, "test", instances=[iid], run_ok=True)["checks"]}
    assert by["F06.1"]["score"] == 0.0 and "same method" in by["F06.1"]["reason"]
    write_json(case / "metrics.json", m)
    by = {c["check"]: c for c in score_run(rel, run, "test", instances=[iid], run_ok=True)["checks"]}
    assert by["F06.1"]["score"] == 1.0


def test_rotation_check_turns_counter_clockwise(fast):
    """D04.1: the reference on_rotated PSF is the on_base PSF turned counter-clockwise (row = +y) by the
    stated quarter turns, i.e. np.rot90(a, -q) (to 1e-7: the two renders sample the pupil apart)."""
    rel, _ = fast
    for p in sorted((rel / "private" / "references").glob("D04-*.json")):
        r = load_json(p)["checks"]["D04.1"]
        iid = p.stem
        a = np.load(rel / "private" / "psf" / iid / "on_base.npz")["psf"]
        b = np.load(rel / "private" / "psf" / iid / "on_rotated.npz")["psf"]
        q = r["quarter_turns"]
        assert np.abs(np.rot90(a, -q) - b).sum() / b.sum() < 1e-4  # tolerance 0.01
        if q != 2:
            assert np.abs(np.rot90(a, q) - b).sum() / b.sum() > 0.1


def test_bootstrap_is_clustered_across_the_release():
    """Instances sharing a base eye move together across templates: resampling base eyes and design
    families across the release gives a wider interval than resampling each instance alone, and a release
    whose every eye scores alike gives none."""
    from icl.pro.score import bootstrap

    catalog = load_catalog()
    rng = np.random.default_rng(5)
    eyes, fams = [f"E{i}" for i in range(8)], [f"F{i}" for i in range(4)]
    eye_score = {e: float(rng.uniform(0, 1)) for e in eyes}
    inst = {}
    for t in catalog.templates:
        for k in range(4):
            e, f = eyes[rng.integers(0, 8)], fams[rng.integers(0, 4)]
            inst[f"{t.id}-{k}"] = {"template": t.id, "score": eye_score[e], "cluster": f"{e}|{f}"}
    lo, hi = bootstrap([{"instances": inst}], catalog, n=400, seed=2)
    alone = {k: dict(v, cluster=f"{k}|{k}") for k, v in inst.items()}  # every instance its own cluster
    lo1, hi1 = bootstrap([{"instances": alone}], catalog, n=400, seed=2)
    assert hi - lo > 2.0 * (hi1 - lo1) > 0
    flat = {k: dict(v, score=0.5) for k, v in inst.items()}
    assert bootstrap([{"instances": flat}], catalog, n=100, seed=2) == pytest.approx([50.0, 50.0])


def test_a01_hole_ray_and_anatomy_gate(fast, tmp_path):
    """A01.1: naming the ICL material for a ray through the hole is a half mark, not an anatomy failure;
    putting the ICL behind the crystalline lens fails gate G1."""
    rel, out = fast
    iid = "A01-02"
    run = tmp_path / "run"
    shutil.copytree(out, run)
    path = run / "results" / iid / "base" / "metrics.json"
    m = load_json(path)
    order = m["layer_order"]
    swapped = ["icl" if x == "icl_central_hole" else "icl_central_hole" if x == "icl" else x for x in order]
    write_json(path, dict(m, layer_order=swapped))
    r = score_run(rel, run, "test", instances=[iid], run_ok=True)
    a01 = next(c for c in r["checks"] if c["check"] == "A01.1")
    assert a01["score"] == 0.5 and r["gates"]["G1"]["pass"] is True
    behind = [x for x in order if x not in ("icl", "icl_central_hole")]
    behind.insert(behind.index("crystalline_lens") + 1, "icl")
    write_json(path, dict(m, layer_order=behind))
    r = score_run(rel, run, "test", instances=[iid], run_ok=True)
    assert next(c for c in r["checks"] if c["check"] == "A01.1")["score"] == 0.0
    assert r["gates"]["G1"]["pass"] is False

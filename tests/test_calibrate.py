import json
import types

import numpy as np
import pytest
from click.testing import CliRunner
from icl.calibrate import core, halo, patient
from icl.cli import main
from icl.patient.demo import build_demo


def _table(values, totals=None):
    """A toy track: baselines x 6 units in 2 strata, each unit one check with a given value."""
    units = [f"u{k}" for k in range(6)]
    checks = {b: {u: {"c1": v[k], "c2": 1.0} for k, u in enumerate(units)} for b, v in values.items()}
    unit_score = {b: {u: float(v[k]) for k, u in enumerate(units)} for b, v in values.items()}
    return core.Table(
        track="toy",
        baselines=list(values),
        unit_stratum={u: "A" if k < 3 else "B" for k, u in enumerate(units)},
        unit_cluster={u: u for u in units},
        checks=checks,
        total=lambda b, us: 100 * float(np.mean([unit_score[b][u] for u in us])),
        unit_score=unit_score,
        stratum_group={"A": "g", "B": "g"},
    )


def test_pass_rates_flags_discrimination_and_ceiling():
    t = _table({"best": [1, 1, 1, 1, 1, 0.5], "mid": [1, 0.5, 1, 0, 1, 0], "worst": [0, 0, 0, 0, 0.5, 0]})
    pr = core.pass_rates(t)
    assert pr["c1"]["pass_rate"] == {"best": 5 / 6, "mid": 0.5, "worst": 0.0}
    assert pr["c2"]["passed_by_every_baseline"] and not pr["c1"]["passed_by_every_baseline"]
    # upper half = best, lower half = worst (one each of three): mean 11/12 minus 1/12
    assert pr["c1"]["discrimination"] == pytest.approx(11 / 12 - 1 / 12)
    assert pr["c2"]["discrimination"] == 0.0
    cf = core.ceiling_floor(t)
    assert cf["strata"]["A"]["ceiling_by"] == "best" and cf["strata"]["A"]["floor"] == 0.0
    assert cf["groups"]["g"]["ceiling"] == pytest.approx(11 / 12)


def test_kendall_tau_b():
    assert core._kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)  # 5 concordant, 1 discordant
    assert core._kendall_tau([1, 2, 2], [1, 2, 3]) == pytest.approx(2 / 6**0.5)  # one tie in x: tau-b
    assert core._kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0


def test_rank_stability_separated_and_tied():
    t = _table({"a": [1] * 6, "b": [0.5] * 6, "c": [0] * 6})
    rs = core.rank_stability(t, n=50)
    assert rs["kendall_tau"]["min"] == 1.0 and rs["pairwise_order_probability"]["a"]["c"] == 1.0
    t = _table({"a": [1, 0, 1, 0, 1, 0], "b": [0, 1, 0, 1, 0, 1]})  # equal on average: the order is a coin
    rs = core.rank_stability(t, n=400)
    p = rs["pairwise_order_probability"]
    assert p["a"]["b"] + p["b"]["a"] == pytest.approx(1.0) and 0.2 < p["a"]["b"] < 0.8
    assert rs == core.rank_stability(t, n=400)  # seeded


def test_halo_perturbations():
    comps = np.zeros((1, 9, 9))
    comps[0, 4, 4], comps[0, 4, 6], comps[0, 2, 4] = 1.0, 0.1, 0.05
    axis = np.arange(9) - 4.0
    record = {
        "sources": [
            {"wick_arcmin": [0.0, 0.0], "expected_wick_arcmin": [0.0, 0.0], "main_lobe_radius_arcmin": 1.0}
        ]
    }
    ref = types.SimpleNamespace(components=comps, axis=axis, record=record, anchors=lambda: [(0.0, 0.0)])
    assert halo.perturb("shift-1px", ref)[0, 4, 5] == 1.0  # one column towards +x
    assert halo.perturb("x-flip", ref)[0, 4, 2] == pytest.approx(0.1)
    assert halo.perturb("y-flip", ref)[0, 6, 4] == pytest.approx(0.05)
    ring = halo.perturb("ring-removed", ref)
    assert ring[0, 4, 4] == 1.0 and ring[0, 4, 6] == 0.0 and ring.sum() == pytest.approx(1.0)
    assert halo.perturb("flux-0.9", ref).sum() == pytest.approx(0.9 * comps.sum())
    blur = halo.perturb("blur-1px", ref)
    assert blur[0, 4, 4] < 1.0 and blur.sum() == pytest.approx(comps.sum(), rel=1e-3)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo")
    build_demo(d)
    return d


def test_calibrate_patient_controls_and_report(demo, tmp_path):
    out, work = tmp_path / "rep", tmp_path / "w"
    r = CliRunner().invoke(
        main,
        [
            "calibrate",
            "patient",
            "--release",
            str(demo),
            "--output",
            str(out),
            "--work",
            str(work),
            "--replicates",
            "20",
            "--raster",
            "64",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "patient.json").read_text())
    tot = {b: v["score"] for b, v in doc["baselines"].items()}
    for c in patient.CONTROLS:
        assert doc["baselines"][c]["role"] == "control"
        assert tot[c] < tot["demo-prediction"] < tot["oracle"], (c, tot)
    assert tot["no-halo"] == min(tot.values()) and doc["order"][0] == "oracle"
    assert set(doc["checks"]) == {"presence", "ring_iou", "contour", "count_attribution"}
    # the swapped percept is a real report of the same condition by another patient
    preds = json.loads((work / "patient" / "ignores-eye.json").read_text())["predictions"]
    recs = json.loads((demo / "private" / "reference.json").read_text())["records"]
    firsts = {r["target_id"]: r for r in reversed(recs)}
    for p in preds:
        cond = p["target_id"].split("|")[-1]
        donors = [t for t, r in firsts.items() if t.endswith(cond) and t != p["target_id"]]
        assert any(
            [f["kind"] for f in p["features"]] == [f["kind"] for f in firsts[t]["features"]] for t in donors
        )
    md = (out / "patient.md").read_text()
    assert "Kendall tau" in md and "patient_rank_stability.png" in md
    # the report names the command with the options that were set, defaults left out
    assert doc["context"]["command"] == (
        f"icl calibrate patient --release {demo} --output {out} --work {work} --replicates 20 --raster 64"
    )
    assert (out / "patient_pass_rates.png").stat().st_size > 1000


def test_forensics_table_safety_score_and_items(tmp_path):
    from icl.calibrate import forensics
    from icl.io import write_json

    kinds = ["genuine"] * 8 + ["bloom"] * 3 + ["duplicate"] * 2 + ["splice_half"] * 2
    ids = [f"img_{k:03d}" for k in range(len(kinds))]
    item = {"bloom": "NH", "duplicate": "DUP", "splice_half": "SPL"}
    labels = {
        i: {"kind": k, **{x: int(item.get(k) == x) for x in ("NH", "DUP", "SPL")}}
        for i, k in zip(ids, kinds, strict=True)
    }
    write_json(tmp_path / "public" / "forensics_cases.json", {"images": ids})
    write_json(tmp_path / "private" / "labels.json", labels)
    rng = np.random.default_rng(0)
    perfect = {i: {x: float(labels[i][x]) + 0.01 * rng.random() for x in ("NH", "DUP", "SPL")} for i in ids}
    noisy = {i: {x: float(rng.random()) for x in ("NH", "DUP", "SPL")} for i in ids}
    t = forensics.table(tmp_path, {"perfect": perfect, "noisy": noisy})
    tot = core.totals(t)
    assert tot["perfect"] == pytest.approx(100.0) and tot["noisy"] < tot["perfect"]
    pr = core.pass_rates(t)
    assert pr["NH"]["pass_rate"]["perfect"] == 1.0 and set(pr) == {"NH", "DUP", "SPL"}
    rs = core.rank_stability(t, n=30)
    assert rs["pairwise_order_probability"]["perfect"]["noisy"] > 0.9


def test_pro_calibration_runs_several_baselines_through_the_harness(tmp_path):
    # Each baseline is evaluated in its own folder: a second evaluation into one work folder found the
    # first one's input sets and stopped (the command failed after its first baseline).
    from icl.calibrate import pro
    from icl.pro.generate import generate

    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=3, progress=False, only=["A03"])
    table, ctx = pro.run(rel, tmp_path / "work", runs=1, per_template=1, strategies=("constant", "placeholder"))
    assert set(ctx["scores"]) == {"constant", "placeholder"}
    assert all(v["completion_rate"] == 1.0 for v in ctx["scores"].values())

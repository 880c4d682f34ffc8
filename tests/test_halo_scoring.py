"""Evaluator: baselines, reference-only public computation, validity rules, ring measurer rule."""

import math

import numpy as np
import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.halo.baselines import run_baseline
from icl.halo.evaluate import evaluate, load_release
from icl.halo.ring import measure_ring
from icl.io import load_json, write_npz
from test_halo_release import shared_release

SCORES = {}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return shared_release(tmp_path_factory)


@pytest.fixture(scope="module")
def loaded(release):
    return load_release(release)


@pytest.fixture(scope="module")
def reference_sub(release, tmp_path_factory):
    sub = tmp_path_factory.mktemp("sub") / "reference"
    run_baseline(release, sub, "reference", progress=False)
    return sub


def test_reference_baseline_from_public_only(release, reference_sub, tmp_path):
    # Copy only public/ and render from it: private/ is not there to be opened.
    import shutil

    pub_only = tmp_path / "pub"
    shutil.copytree(release / "public", pub_only / "public")
    out = tmp_path / "from-public"
    run_baseline(pub_only, out, "reference", progress=False)
    for f in sorted(reference_sub.glob("*.npz")):
        assert (out / f.name).read_bytes() == f.read_bytes()
    doc = evaluate(release, reference_sub)
    assert doc["halo_development_score"] >= 99.0
    assert doc["clinical_score"] is None and doc["professional_score"] is None
    SCORES["reference"] = doc["halo_development_score"]


@pytest.mark.parametrize("mode", ["wrong-position", "no-halo", "fixed-circle"])
def test_wrong_baselines_lose(release, loaded, tmp_path, mode):
    run_baseline(release, tmp_path / mode, mode, progress=False)
    doc = evaluate(release, tmp_path / mode, loaded)
    score = doc["halo_development_score"]
    assert score < 80.0
    # Every wrong model is far below the reference on the cases that test what it gets wrong.
    assert doc["diagnostic_subscores"]["position_bearing_cases"] < 35.0
    if mode != "wrong-position":
        assert score < 25.0
    else:
        # Right pattern, wrong place: perfect wherever every source sits at fixation on a centred optic.
        assert doc["diagnostic_subscores"]["fixation_cases"] == pytest.approx(100.0, abs=1e-6)
        # The whole-window centroid moves by the prism shift less the part of the wings cropped
        # differently at the two positions (0.3 % here).
        assert doc["cases"]["H09"]["conditions"]["H09_b"]["terms"]["centroid_arcmin"][
            "error"
        ] == pytest.approx(5.5004, rel=0.01)
    if mode == "fixed-circle":
        h05 = doc["cases"]["H05"]["conditions"]["H05_a"]
        assert not h05["valid"] and "energy gain" in h05["reason"]
        assert doc["cases"]["H13"]["conditions"]["H13_a"]["score"] < 1e-6  # a painted halo without a source


def _copy_sub(reference_sub, tmp_path):
    # Copies, not hard links: the scorer refuses a submitted file with more than one name.
    import shutil

    sub = tmp_path / "s"
    sub.mkdir()
    for f in reference_sub.glob("*.npz"):
        shutil.copyfile(f, sub / f.name)
    return sub


def _arrays(sub, cond):
    import numpy as np
    from icl.io import load_npz

    a = load_npz(sub / f"{cond}.npz", required=("components", "scene", "angular_pixel_arcsec"))
    return {k: np.array(v) for k, v in a.items()}


@pytest.mark.parametrize(
    "breakage, reason",
    [
        ("negative", "negative"),
        ("nan", "NaN"),
        ("gain", "energy gain"),
        ("shape", "shape"),
        ("pitch", "angular_pixel_arcsec"),
        ("scene", "sum of the components"),
        ("missing", "missing"),
        ("pickle", "object arrays"),
        ("garbage", "not a readable npz"),
        ("complex", "dtype"),
    ],
)
def test_invalid_condition_scores_zero_with_reason(
    release, loaded, reference_sub, tmp_path, breakage, reason
):
    sub = _copy_sub(reference_sub, tmp_path)
    a = _arrays(sub, "H01_b")
    path = sub / "H01_b.npz"
    if breakage == "negative":
        a["components"][0, 0, 0] = -1e-6
        a["scene"] = a["components"].sum(axis=0)
    elif breakage == "nan":
        a["components"][0, 5, 5] = np.nan
    elif breakage == "gain":
        a["components"] *= 1.1
        a["scene"] = a["components"].sum(axis=0)
    elif breakage == "shape":
        a["components"] = a["components"][:, :256, :256]
    elif breakage == "pitch":
        a["angular_pixel_arcsec"] = np.float64(3.0)
    elif breakage == "scene":
        a["scene"] = a["scene"] * 1.001
    elif breakage == "complex":
        a["components"] = a["components"].astype(complex)
    path.unlink()
    if breakage == "missing":
        pass
    elif breakage == "pickle":
        np.savez(
            path,
            components=np.array([object()], dtype=object),
            scene=a["scene"],
            angular_pixel_arcsec=a["angular_pixel_arcsec"],
        )
    elif breakage == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    else:
        write_npz(path, **a)
    doc = evaluate(release, sub, loaded)
    cond = doc["cases"]["H01"]["conditions"]["H01_b"]
    assert cond["score"] == 0.0 and not cond["valid"] and reason in cond["reason"], cond
    assert doc["cases"]["H01"]["paired"]["score"] == 0.0
    # The denominator is not reduced: 13 perfect cases and H01 at 70 % of half a perfect pair.
    assert doc["halo_development_score"] == pytest.approx((13 * 100 + 0.7 * 50) / 14, abs=1e-6)


def test_rounding_negatives_and_small_leak(release, loaded, reference_sub, tmp_path):
    sub = _copy_sub(reference_sub, tmp_path)
    a = _arrays(sub, "H01_a")
    a["components"][0, 0, 0] = -1e-14 * a["components"].max()  # rounding: accepted
    a["scene"] = a["components"].sum(axis=0)
    write_npz(sub / "H01_a.npz", **a)
    z = _arrays(sub, "H13_a")
    z["components"][0, 100, 100] = 0.003  # leaks 0.3 % of a unit source
    z["scene"] = z["components"].sum(axis=0)
    write_npz(sub / "H13_a.npz", **z)
    doc = evaluate(release, sub, loaded)
    assert doc["cases"]["H01"]["conditions"]["H01_a"]["valid"]
    h13 = doc["cases"]["H13"]["conditions"]["H13_a"]
    assert h13["score"] == pytest.approx(100 * math.exp(-0.003 / 0.03), rel=1e-9)


def test_scoring_terms_definitions(release, loaded, reference_sub):
    doc = evaluate(release, reference_sub, loaded)
    h01 = doc["cases"]["H01"]["conditions"]["H01_a"]["terms"]
    assert {k: v["weight"] for k, v in h01.items()} == pytest.approx(
        {
            "full_l1": 0.25,
            "halo_l1": 0.35,
            "polar": 0.15,
            "centroid_arcmin": 0.10,
            "energy": 0.05,
            "ring": 0.10,
        }
    )
    h08 = doc["cases"]["H08"]["conditions"]["H08_a"]["terms"]
    assert "ring" not in h08 and h08["halo_l1"]["weight"] == pytest.approx(0.45)
    assert sum(v["weight"] for v in h08.values()) == pytest.approx(1.0)


def test_flux_scaling_is_caught(release, loaded, reference_sub, tmp_path):
    # A submission of H05_a at flux 1 (the b pattern) loses on energy, L1 and the pair.
    sub = _copy_sub(reference_sub, tmp_path)
    b = _arrays(sub, "H05_b")
    a = _arrays(sub, "H05_a")
    a["components"] = b["components"] * 0.9  # below the 0.25 flux? no: 0.9 > 0.25, an energy gain
    a["scene"] = a["components"].sum(axis=0)
    write_npz(sub / "H05_a.npz", **a)
    doc = evaluate(release, sub, loaded)
    assert not doc["cases"]["H05"]["conditions"]["H05_a"]["valid"]
    a["components"] = b["components"] * 0.2  # 0.2 instead of 0.25: valid but 20 % off
    a["scene"] = a["components"].sum(axis=0)
    write_npz(sub / "H05_a.npz", **a)
    terms = evaluate(release, sub, loaded)["cases"]["H05"]["conditions"]["H05_a"]["terms"]
    assert terms["energy"]["error"] == pytest.approx(0.2, rel=1e-9)
    assert terms["full_l1"]["error"] == pytest.approx(0.2, rel=1e-9)
    assert terms["ring"]["error"] == pytest.approx(0.0, abs=1e-9)  # geometry unchanged by flux


def test_cli_evaluate_writes_score(release, reference_sub, tmp_path):
    res = CliRunner().invoke(
        main,
        [
            "halo-evaluate",
            "--release",
            str(release),
            "--submission",
            str(reference_sub),
            "--output",
            str(tmp_path / "score.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "halo_development_score" in res.output
    doc = load_json(tmp_path / "score.json")
    assert doc["halo_development_score"] >= 99.0 and len(doc["cases"]) == 14


def test_bad_release_is_a_clear_error(tmp_path):
    (tmp_path / "rel" / "public").mkdir(parents=True)
    (tmp_path / "rel" / "public" / "halo_cases.json").write_text('{"cases": 3}')
    res = CliRunner().invoke(
        main,
        [
            "halo-evaluate",
            "--release",
            str(tmp_path / "rel"),
            "--submission",
            str(tmp_path / "rel"),
            "--output",
            str(tmp_path / "s.json"),
        ],
    )
    assert res.exit_code == 2 and "halo_cases.json: cases" in res.output


def test_ring_measurer_rule(loaded):
    ref = {c.id: c for _, conds in loaded for c in conds}
    h01 = ref["H01_a"]
    lod = h01.record["sources"][0]["analytic"]["lambda_over_d_arcmin"]
    assert measure_ring(np.zeros((512, 512)), h01.axis, lod)["status"] == "not_detected"
    rng = np.random.default_rng(20261027)
    noise = rng.random((512, 512))
    got = measure_ring(noise, h01.axis, lod)
    assert got["status"] == "not_detected" and "sigma" in got["reason"]
    # A smooth blob without a ring: no local maximum in the band.
    xs, ys = np.meshgrid(h01.axis, h01.axis)
    blob = np.exp(-(xs**2 + ys**2) / 0.5)
    assert measure_ring(blob, h01.axis, lod)["status"] == "not_detected"

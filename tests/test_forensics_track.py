"""Halo-forensics release, baselines and hostile submissions, scored with the contest rule."""

import numpy as np
import pytest
from click.testing import CliRunner
from icl.forensics.baseline import (
    ARCMIN_PER_RAD,
    _ring_radius,
    features,
    load_public,
    physics_scores,
    random_scores,
)
from icl.forensics.cli import forensics_baseline, forensics_evaluate, forensics_generate
from icl.forensics.evaluate import evaluate
from icl.forensics.generate import (
    COUNTS,
    DEFAULT_SEED,
    _draw_scene,
    _ring_asset,
    _with,
    forge_nh,
    physical,
    render_scene,
    write_release,
)
from icl.io import load_json, write_json

SEED = 11
# A small release keeps the default tests fast; the full release (COUNTS) is what the CLI writes.
SMALL = {"genuine": 20, "NH": 10, "DUP": 4, "SPL": 4}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("forensics") / "rel"
    write_release(out, SEED, counts=SMALL)
    return out


def test_release_layout_and_private_labels(release):
    index = load_json(release / "public" / "forensics_cases.json")
    assert len(index["images"]) == sum(SMALL.values())
    labels = load_json(release / "private" / "labels.json")
    assert sum(lab["NH"] for lab in labels.values()) == SMALL["NH"]
    assert sum(lab["kind"] == "genuine" for lab in labels.values()) == SMALL["genuine"]
    public_text = "".join(p.read_text() for p in (release / "public").rglob("*.json"))
    assert "genuine" not in public_text and "wrap" not in public_text
    manifest = load_json(release / "manifest.json")
    assert manifest["seed"] == SEED and len(manifest["files"]) == 2 * sum(SMALL.values()) + 3


def test_release_is_byte_identical_for_a_seed(release, tmp_path):
    # Again, and with the renders on a two-process pool: the same bytes.
    again = tmp_path / "again"
    write_release(again, SEED, counts=SMALL, workers=2)
    assert (again / "manifest.json").read_bytes() == (release / "manifest.json").read_bytes()


@pytest.mark.slow
def test_generate_cli_full_release(tmp_path):
    res = CliRunner().invoke(forensics_generate, ["--output", str(tmp_path / "r"), "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert len(load_json(tmp_path / "r" / "public" / "forensics_cases.json")["images"]) == sum(
        COUNTS.values()
    )


def test_baselines_through_the_cli(release, tmp_path):
    runner = CliRunner()
    rows = {}
    for mode in ("random", "physics"):
        sub, out = tmp_path / f"{mode}.json", tmp_path / f"{mode}_score.json"
        assert (
            runner.invoke(
                forensics_baseline, ["--release", str(release), "--output", str(sub), "--mode", mode]
            ).exit_code
            == 0
        )
        res = runner.invoke(
            forensics_evaluate, ["--release", str(release), "--submission", str(sub), "--output", str(out)]
        )
        assert res.exit_code == 0, res.output
        rows[mode] = load_json(out)
    phys, rand = rows["physics"], rows["random"]
    # The physics check re-renders every stated condition within the published tolerances. Measured on
    # this small release (development key of seed 11, images in the visual frame): NH 0.83, DUP 0.58, SPL 0.53
    # (S 0.62) against random 0.43, 0.39, 0.33 (S 0.38); with 4 to 10 positives one rank moves an area by up
    # to about 0.15, the margin allowed here. Small releases spread widely: the same draws with every decentre
    # reflected (the halo frame's images) gave physics 1.00, 0.89, 1.00 (S 0.96), seeds 12 and 13 S 0.42 and
    # 0.52.
    measured = {"NH": 0.83, "DUP": 0.58, "SPL": 0.53}
    for item in ("NH", "DUP", "SPL"):
        assert phys["items"][item]["value"] == pytest.approx(measured[item], abs=0.15)
        assert phys["items"][item]["value"] > rand["items"][item]["value"]
        assert phys["items"][item]["positives"] == SMALL[item]
        assert phys["items"][item]["negatives"] == SMALL["genuine"]
    assert rand["S"] < 0.4 and phys["S"] > 0.6


@pytest.mark.slow
def test_default_release_is_below_the_ceiling(tmp_path):
    # The development release of the documented seed (COUNTS, --seed 20261003, keyed streams). Measured:
    # physics NH 0.62, DUP 0.99, SPL 0.53, S 0.66; random (seed 0) 0.34, 0.11, 0.09, S 0.13. Tolerance
    # draws keep re-renders from matching exactly, so the physics check stays below 1 yet above chance.
    rel = tmp_path / "rel"
    write_release(rel, DEFAULT_SEED, workers=2)
    images, stated = load_public(rel)
    rows = {}
    for mode, scores in (("physics", physics_scores(images, stated)), ("random", random_scores(list(images), 0))):
        write_json(tmp_path / f"{mode}.json", {"scores": scores})
        rows[mode] = evaluate(rel, tmp_path / f"{mode}.json")
    measured = {"NH": 0.62, "DUP": 0.99, "SPL": 0.53}
    for item, value in measured.items():
        assert rows["physics"]["items"][item]["value"] == pytest.approx(value, abs=0.10)
        assert rows["physics"]["items"][item]["value"] > rows["random"]["items"][item]["value"]
    assert rows["physics"]["S"] == pytest.approx(0.66, abs=0.08) and rows["physics"]["S"] < 0.9


def test_hostile_submissions_score_zero_for_what_they_break(release, tmp_path):
    images, stated = load_public(release)
    good = random_scores(list(images), 3)
    cases = {}
    bad = {k: dict(v) for k, v in good.items()}
    first = sorted(bad)[0]
    del bad[first]["SPL"]
    bad[sorted(bad)[1]]["DUP"] = "0.5"
    bad["../etc/passwd"] = {"NH": 1.0}
    cases["partial"] = {"scores": bad}
    cases["not_object"] = [1, 2, 3]
    for name, doc in cases.items():
        write_json(tmp_path / f"{name}.json", doc)
    (tmp_path / "nan.json").write_text('{"scores": {"img_000": {"NH": NaN}}}')
    (tmp_path / "truncated.json").write_text('{"scores": {')

    r = evaluate(release, tmp_path / "partial.json")
    assert r["items"]["SPL"]["value"] == 0.0 and r["items"]["DUP"]["value"] == 0.0
    assert r["items"]["NH"]["value"] > 0.0 and r["S"] == 0.0
    assert r["zero_rule"] == "DUP not computable"
    assert any("unknown image id" in p for p in r["problems"])
    for name in ("not_object", "nan", "truncated"):
        r = evaluate(release, tmp_path / f"{name}.json")
        assert r["S"] == 0.0 and all(a["value"] == 0.0 for a in r["items"].values())
        assert r["problems"] and all(a["reason"] for a in r["items"].values())


def test_wrap_fold_puts_light_back_at_the_far_edge():
    rng = np.random.default_rng(0)
    stated = _draw_scene(rng, far=False)
    img, _ = forge_nh("wrap_fold", stated, np.random.default_rng(1))
    rng = np.random.default_rng(1)
    rng.integers(4, 17)  # the fold margin the forgery drew first
    honest = physical(stated, rng)
    # Same nuisance draw: folding only adds the light that fell within the margin outside the window.
    assert img.sum() > honest.sum()
    # Measured 1.79 against 0.37 edge-flux allowances: only a faint tail folds back, yet it stands out.
    assert features(img, stated)["wrap"] > 3 * features(honest, stated)["wrap"]


def test_asset_ring_does_not_scale_with_wavelength():
    rng = np.random.default_rng(2)
    base = _with(
        _draw_scene(rng, far=False),
        **{
            "sources.0.x_arcmin": 0.0,
            "sources.0.y_arcmin": 0.0,
            "sources.0.extent": {"kind": "point"},
            "pupil.diameter_mm": 3.2,
            "pupil.icl.decentre_mm": [0.0, 0.0],
        },
    )
    blue = _with(base, **{"sources.0.spectrum": [[450.0, 1.0]]})
    red = _with(base, **{"sources.0.spectrum": [[650.0, 1.0]]})
    assert np.array_equal(_ring_asset(blue, 0.01), _ring_asset(red, 0.01))
    # Physical first bright ring at 1.6347 lambda/D: its measured radius follows 650/450 to within a
    # half-pixel ring bin on each radius (0.5/11.9 + 0.5/17.2 = 7 %).
    lam_d = 1e-9 / 3.2e-3 * ARCMIN_PER_RAD
    r_blue = _ring_radius(render_scene(blue), (0.0, 0.0), 450 * lam_d)
    r_red = _ring_radius(render_scene(red), (0.0, 0.0), 650 * lam_d)
    assert r_blue == pytest.approx(1.6347 * 450 * lam_d, rel=0.045)
    assert r_red / r_blue == pytest.approx(650 / 450, rel=0.07)


def test_physics_scores_rank_duplicate_above_its_original():
    rng = np.random.default_rng(5)
    a = _draw_scene(rng, far=False)
    b = _with(a, **{"sources.0.spectrum": [[a["sources"][0]["spectrum"][0][0] + 100.0, 1.0]]})
    img_a = render_scene(a)
    imgs = {"orig": img_a, "copy": img_a * 1.001}
    sc = physics_scores(imgs, {"orig": a, "copy": b})
    # Identical up to flux: similarity 1; the copy misses its stated condition, the original does not.
    assert sc["copy"]["DUP"] > 0.9 > sc["orig"]["DUP"]



def test_a_file_of_another_kind_is_an_error_and_a_hard_link_scores_nothing(release, tmp_path):
    import os

    from icl._paths import cases_dir
    from icl.cli import main

    res = CliRunner().invoke(
        main,
        ["forensics-evaluate", "--release", str(release), "--submission",
         str(cases_dir() / "examples" / "scene.json"), "--output", str(tmp_path / "s.json")],
    )
    assert res.exit_code == 2 and "not a forensics submission" in res.output, res.output
    assert not (tmp_path / "s.json").exists()
    images, _ = load_public(release)
    write_json(tmp_path / "sub.json", {"scores": random_scores(list(images), 3)})
    assert evaluate(release, tmp_path / "sub.json")["items"]["NH"]["value"] > 0.0
    os.link(tmp_path / "sub.json", tmp_path / "linked.json")  # the scorer reads files of the submission's own
    r = evaluate(release, tmp_path / "linked.json")
    assert r["S"] == 0.0 and all(r["items"][k]["value"] == 0.0 for k in ("NH", "DUP", "SPL"))
    assert any("hard link" in p for p in r["problems"])

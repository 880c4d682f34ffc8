"""Held-out test split: keyed variants, layout, dev split unchanged, no pair split, discrimination on it."""

import math
import os
import stat

import numpy as np
import pytest
from icl.halo.baselines import flip, run_baseline
from icl.halo.cases import load_cases
from icl.halo.cli import halo_generate
from icl.halo.evaluate import evaluate, load_release
from icl.halo.release import generate
from icl.halo.variants import AXIS_GAP, EDGE_BAND, FIELD_LIMIT, build_test_split
from icl.io import load_json, load_npz, write_npz
from icl.keys import ReleaseKey
from icl.optics.model import ARCMIN
from test_halo_release import SEED, shared_release

# SHA-256 of public/halo_cases.json as generated before the test split existed (it depends only on the
# case files and the grid, not on the engine): the development inputs are the same bytes.
DEV_PUBLIC_SHA256 = "fc13ff9235841b76203baf479d11beba0e9e1fde2246afc6466ce75df3ed64f7"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return shared_release(tmp_path_factory)


def _dev_files(manifest):
    return {
        k: v
        for k, v in manifest["files"].items()
        if k == "public/halo_cases.json" or (k.startswith("private/H") and "/test/" not in k)
    }


def test_dev_split_unchanged_and_independent_of_the_key(release, tmp_path):
    manifest = load_json(release / "manifest.json")
    dev = _dev_files(manifest)
    assert len(dev) == 1 + 28 * 2
    assert dev["public/halo_cases.json"] == DEV_PUBLIC_SHA256
    # A secret key and no test split: the development files are the same bytes.
    other = generate(tmp_path / "dev-only", gallery=False, progress=False, test_variants=0)
    assert _dev_files(other) == dev
    assert other["answers_rebuildable"] is False and other["seed"] is None
    assert (tmp_path / "dev-only" / "private" / "release.key").read_text().strip() != ReleaseKey.from_seed(
        SEED
    ).secret.hex()
    assert (
        "test" not in other["splits"]
        and not (tmp_path / "dev-only" / "public" / "halo_cases_test.json").exists()
    )


def test_layout_keys_and_no_pair_split(release):
    manifest = load_json(release / "manifest.json")
    assert manifest["answers_rebuildable"] is True and manifest["seed"] == SEED
    splits = manifest["splits"]
    assert (
        splits["test"]["public"] == "public/halo_cases_test.json"
        and splits["test"]["private"] == "private/test"
    )
    assert splits["test"]["variants_per_case"] == 1
    key = release / "private" / "release.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert key.read_text().strip() == ReleaseKey.from_seed(SEED).secret.hex()
    dev = load_json(release / "public" / "halo_cases.json")
    test = load_json(release / "public" / "halo_cases_test.json")
    assert [c["id"] for c in test["cases"]] == [f"H{i:02d}_t1" for i in range(1, 15)]
    dev_ids = {c["id"] for case in dev["cases"] for c in case["conditions"]}
    for case in test["cases"]:
        ids = [c["id"] for c in case["conditions"]]
        assert ids == [f"{case['id']}_a", f"{case['id']}_b"]  # both conditions of a pair, in one split
        assert not set(ids) & dev_ids
        for cid in ids:
            assert (release / "private" / "test" / f"{cid}.npz").exists()
            assert (release / "private" / "test" / f"{cid}.json").exists()
            assert not (release / "private" / f"{cid}.npz").exists()
    assert test["research_cards"] == [] and test["submission"] == dev["submission"]
    public = {p.relative_to(release).as_posix() for p in (release / "public").rglob("*") if p.is_file()}
    assert public == {"public/README.md", "public/halo_cases.json", "public/halo_cases_test.json"}
    text = (release / "public" / "halo_cases_test.json").read_text()
    for word in (
        "expectation",
        "wick_arcmin",
        "radius_arcmin",
        "analytic",
        "calibration_ring",
        "ledger",
        "profiles",
        "release.key",
    ):
        assert word not in text, word


def test_variants_are_a_function_of_the_key():
    cases, _ = load_cases()
    scenes = lambda split: [c.scene_json for case in split for c in case.conditions]  # noqa: E731
    one = build_test_split(cases, ReleaseKey.from_seed(1), 2)
    assert scenes(one) == scenes(build_test_split(cases, ReleaseKey.from_seed(1), 2))
    two = build_test_split(cases, ReleaseKey.from_seed(2), 2)
    assert all(a != b for a, b in zip(scenes(one), scenes(two), strict=True))
    assert scenes(build_test_split(cases, ReleaseKey.new(), 2)) != scenes(one)
    # Variant v of a case comes from its own stream: adding variants leaves the first ones unchanged.
    assert scenes(build_test_split(cases, ReleaseKey.from_seed(1), 3))[:4] == scenes(one)[:4]


def _wicks(cond):
    px, py = cond.prism_arcmin()
    return [(s.x_arcmin + px, s.y_arcmin + py) for s in cond.scene.sources]


def test_variant_rules_over_many_keys():
    cases, _ = load_cases()
    dev = {c.id: c for c in cases}
    for seed in range(12):
        for case in build_test_split(cases, ReleaseKey.from_seed(seed), 4):
            parent = dev[case.id[:3]]
            a, b = case.conditions
            for cond, pcond in zip(case.conditions, parent.conditions, strict=True):
                assert (cond.calibration_ring, cond.complex_field) == (
                    pcond.calibration_ring,
                    pcond.complex_field,
                )
                for k, w in enumerate(_wicks(cond)):
                    if case.id.startswith("H14") and cond is b:
                        d = max(abs(w[0]), abs(w[1]))
                        assert (
                            EDGE_BAND[0] <= d <= EDGE_BAND[1] and AXIS_GAP <= min(abs(w[0]), abs(w[1])) <= 12
                        )
                    else:  # away from both axes: a mirrored picture is a different answer
                        assert (
                            AXIS_GAP <= abs(w[0]) <= FIELD_LIMIT and AXIS_GAP <= abs(w[1]) <= FIELD_LIMIT
                        ), (case.id, k, w)
            if case.id.startswith("H03"):
                lams = [c.scene.sources[0].spectrum[0][0] for c in case.conditions]
                assert all(450 <= x <= 650 for x in lams) and abs(lams[0] - lams[1]) >= 100
            if case.id.startswith("H04"):
                ds = [c.scene.pupil.diameter_mm for c in case.conditions]
                assert all(2.8 <= x <= 4.8 for x in ds) and abs(ds[0] - ds[1]) >= 1.0
            if case.id.startswith(("H09", "H11")):
                # The seed's sign convention in both splits: the pattern moves by K_icl * c.
                icl = b.scene.pupil.icl
                assert b.prism_arcmin() == pytest.approx(
                    [icl.power_d * c * 1e-3 / ARCMIN for c in icl.decentre_mm]
                )
                assert math.hypot(*icl.decentre_mm) >= 0.1 and a.scene.pupil.icl.decentre_mm == (0.0, 0.0)
            if case.id.startswith("H08"):
                ta, tb = (c.scene.pupil.icl.axis_deg for c in case.conditions)
                assert min(abs(ta - tb) % 180, 180 - abs(ta - tb) % 180) >= 30
            if case.id.startswith("H13"):
                assert a.zero_flux and not b.zero_flux


def test_default_is_four_variants_and_a_secret_key():
    params = {p.name: p for p in halo_generate.params}
    assert params["test_variants"].default == 4 and params["seed"].default is None


def test_split_references_keep_the_seed_conventions(release):
    # H09's variant: the wick moves by K_icl * c from the source, concentric ring; H14's ring is cut by
    # the edge.
    rec = load_json(release / "private" / "test" / "H09_t1_b.json")["sources"][0]
    want = np.add(rec["input_position_arcmin"], rec["prism_arcmin"])
    assert rec["wick_arcmin"] == pytest.approx(want, abs=1e-4)
    assert math.hypot(*rec["ring_minus_wick_arcmin"]) < 0.01
    edge = load_json(release / "private" / "test" / "H14_t1_b.json")["sources"][0]["calibration_ring"]
    assert edge["status"] == "detected" and 0.3 < edge["arc_coverage"] < 1.0
    for path in sorted((release / "private" / "test").glob("*.json")):
        rec = load_json(path)
        for s in rec["sources"]:
            if rec["calibration_ring"]:
                assert s["calibration_ring"]["status"] == "detected", path.name


def test_from_scratch_model_of_the_public_readme(release):
    # The public README's model, written with NumPy only (no icl.optics), reproduces the reference: the
    # sign of the prism, the cylinder axis, the clear hole and the normalisation are as stated.
    readme = (release / "public" / "README.md").read_text()
    assert "-5.5004 arcmin" in readme and "theta = +a" in readme and "K c" in readme
    pub = {
        c["id"]: c["scene"]
        for case in load_json(release / "public" / "halo_cases_test.json")["cases"]
        for c in case["conditions"]
    }
    pub.update(
        {
            c["id"]: c["scene"]
            for case in load_json(release / "public" / "halo_cases.json")["cases"]
            for c in case["conditions"]
        }
    )
    for cid, folder in (("H09_b", "private"), ("H11_t1_b", "private/test"), ("H08_t1_b", "private/test")):
        scene = pub[cid]
        ref = load_npz(release / folder / f"{cid}.npz", required=("components",), allow_extra=True)[
            "components"
        ][0]
        axis = (np.arange(512) - 255.5) * 4 / 60
        rec = load_json(release / folder / f"{cid}.json")["sources"][0]
        cx, cy = rec["wick_arcmin"]
        j0, i0 = int(np.argmin(abs(axis - cx))), int(np.argmin(abs(axis - cy)))
        win = slice(i0 - 24, i0 + 24), slice(j0 - 24, j0 + 24)
        mine = _thin_phase_pixels(scene, axis[win[1]], axis[win[0]])
        got = ref[win]
        assert np.abs(mine - got).sum() / got.sum() < 0.02, cid
        cm = [(mine.sum(axis=a) @ axis[win[1 - a]]) / mine.sum() for a in (0, 1)]
        cr = [(got.sum(axis=a) @ axis[win[1 - a]]) / got.sum() for a in (0, 1)]
        assert cm == pytest.approx(cr, abs=2e-3), cid


def _thin_phase_pixels(scene, xs, ys, n=320, sub=3):
    """Pixel flux of a one-source, one-wavelength scene on pixels centred at xs, ys (arcmin), README model."""
    pupil, icl, src = scene["pupil"], scene["pupil"]["icl"], scene["sources"][0]
    lam = src["spectrum"][0][0] * 1e-9
    d = pupil["diameter_mm"] * 1e-3
    du = d / n
    u = (np.arange(n) - (n - 1) / 2) * du
    uu, vv = np.meshgrid(u, u)
    c = np.array(icl["decentre_mm"]) * 1e-3
    a = (uu**2 + vv**2 <= (d / 2) ** 2).astype(float)
    w = -(pupil["eye_excess_d"] / 2) * (uu**2 + vv**2)
    ru, rv = uu - c[0], vv - c[1]
    zone = (ru**2 + rv**2 <= (icl["optic_zone_mm"] * 1e-3 / 2) ** 2) & (
        ru**2 + rv**2 > (icl["hole_mm"] * 1e-3 / 2) ** 2
    )
    alpha = math.radians(icl["axis_deg"])
    dperp = -ru * math.sin(alpha) + rv * math.cos(alpha)
    w = w + zone * (-(icl["power_d"] / 2) * (ru**2 + rv**2) - (icl["cylinder_d"] / 2) * dperp**2)
    p = a * np.exp(2j * np.pi * w / lam)
    pitch = 4 / 60
    offs = ((np.arange(sub) + 0.5) / sub - 0.5) * pitch
    tx = ((xs[:, None] + offs[None, :]).ravel() - src["x_arcmin"]) * ARCMIN
    ty = ((ys[:, None] + offs[None, :]).ravel() - src["y_arcmin"]) * ARCMIN
    ex = np.exp(-2j * np.pi * np.outer(tx, u) / lam)
    ey = np.exp(-2j * np.pi * np.outer(ty, u) / lam)
    e = ey @ p @ ex.T * du * du / lam  # rows: theta_y, columns: theta_x
    inten = np.abs(e) ** 2 / (math.pi * d * d / 4) * src["flux"] * src["spectrum"][0][1]
    pix = inten.reshape(len(ys), sub, len(xs), sub).mean(axis=(1, 3))
    return pix * (pitch * ARCMIN) ** 2


def _scores(
    release, split, tmp_path_factory, modes=("reference", "wrong-position", "no-halo", "fixed-circle")
):
    """Scores of the baselines on one split; the flips mirror the reference run (no second render)."""
    loaded = load_release(release, split)
    root = tmp_path_factory.mktemp(f"baselines-{split}")
    out = {}
    for mode in modes:
        run_baseline(release, root / mode, mode, progress=False, split=split)
        out[mode] = evaluate(release, root / mode, loaded, split=split)
    for axis in "xy":
        sub = root / f"{axis}-flip"
        for f in sorted((root / "reference").glob("*.npz")):
            comps = flip(load_npz(f, required=("components",), allow_extra=True)["components"], axis)
            write_npz(
                sub / f.name, components=comps, scene=comps.sum(axis=0), angular_pixel_arcsec=np.float64(4.0)
            )
        out[f"{axis}-flip"] = evaluate(release, sub, loaded, split=split)
    return out


@pytest.fixture(scope="module")
def test_scores(release, tmp_path_factory):
    return _scores(release, "test", tmp_path_factory)


@pytest.fixture(scope="module")
def dev_scores(release, tmp_path_factory):
    return _scores(release, "dev", tmp_path_factory, modes=("reference",))


@pytest.mark.parametrize(
    "mode, ceiling",
    [("wrong-position", 50.0), ("x-flip", 50.0), ("y-flip", 50.0), ("no-halo", 30.0), ("fixed-circle", 30.0)],
)
def test_discrimination_on_the_test_split(test_scores, mode, ceiling):
    assert test_scores["reference"]["halo_development_score"] >= 99.0
    doc = test_scores[mode]
    assert doc["split"] == "test" and len(doc["cases"]) == 14
    assert doc["halo_development_score"] <= ceiling, (mode, doc["halo_development_score"])


@pytest.mark.parametrize("mode", ["x-flip", "y-flip"])
def test_flips_on_the_dev_split_are_right_on_symmetric_cases(dev_scores, mode):
    # Why a flip scores high on dev: a mirrored centred pattern is the same array; only cases with a
    # source or decentre off the flip's axis (or a tilted cylinder) tell it apart.
    doc = dev_scores[mode]
    for cid in ("H03", "H04", "H05", "H06", "H07", "H12", "H13"):
        assert doc["cases"][cid]["score"] >= 99.0, cid
    assert doc["cases"]["H01"]["score"] < 50 and doc["cases"]["H08"]["score"] < 50
    assert (doc["cases"]["H09"]["score"] >= 99.0) == (mode == "y-flip")  # H09 moves along x only
    assert doc["halo_development_score"] > 50.0


def test_flip_baseline_mirrors_the_grid(release, tmp_path):
    # The command's flip is the reference mirrored: a source at (x, y) lands at (-x, y) or (x, -y).
    run_baseline(release, tmp_path / "x", "x-flip", progress=False)
    comps = load_npz(tmp_path / "x" / "H01_b.npz", required=("components",), allow_extra=True)["components"][
        0
    ]
    i, j = np.unravel_index(int(np.argmax(comps)), comps.shape)
    axis = (np.arange(512) - 255.5) * 4 / 60
    assert abs(axis[j] + 3.0) < 0.07 and abs(axis[i] + 2.0) < 0.07

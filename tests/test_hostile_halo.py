"""``icl halo-evaluate`` against a submission folder full of hostile files, in-process through the CLI.

One submission carries a different hostile file in each of 24 conditions (12 cases) and the reference
answer in the other 4: a single evaluation shows every refusal reason, that the 2 intact cases still
score 100, that no pickle payload ran, and that the score file is written whole and atomically.
"""

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from hostile import corpus
from icl.cli import main
from icl.halo.baselines import run_baseline
from icl.io import load_json, load_npz, write_npz
from test_halo_release import shared_release

KEYS = ("components", "scene", "angular_pixel_arcsec")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return shared_release(tmp_path_factory)


@pytest.fixture(scope="module")
def reference_sub(release, tmp_path_factory):
    sub = tmp_path_factory.mktemp("hostile_halo") / "reference"
    run_baseline(release, sub, "reference", progress=False)
    return sub


def _arrays(sub, cond):
    return {
        k: np.array(v)
        for k, v in load_npz(sub / f"{cond}.npz", required=KEYS, optional=("x_arcmin", "y_arcmin")).items()
    }


def _broken(a, how):
    a = dict(a)
    if how == "nan":
        a["components"][0, 3, 3] = np.nan
    elif how == "inf":
        a["scene"][7, 7] = np.inf
    elif how == "negative":
        a["components"][0, 0, 0] = -1e-3
        a["scene"] = a["components"].sum(axis=0)
    elif how == "scene":
        a["scene"] = a["scene"] * 2.0
    elif how == "complex":
        a["components"] = a["components"].astype(np.complex128)
    elif how == "strings":
        a["components"] = np.full(a["components"].shape[:1], "0.0")
    elif how == "shape":
        a["components"] = a["components"][:, ::2, ::2]
    elif how == "pitch":
        a["angular_pixel_arcsec"] = np.array([4.0, 4.0])
    elif how == "grid":
        a["x_arcmin"] = (np.arange(512) - 255.5) / 15 + 0.5  # the release grid moved by half an arcmin
    elif how == "missing-key":
        del a["scene"]
    elif how == "extra-key":
        a["notes"] = np.zeros(3)
    return a


# condition -> (how it is made hostile, the reason the score file must give)
HOSTILE = {
    "H01_a": ("pickle-payload", "object arrays are refused"),
    "H01_b": ("bare-pickle", "not a readable npz archive"),
    "H02_a": ("zip-bomb", "declared uncompressed size"),
    "H02_b": ("absurd-shape", "more than the stored data"),
    "H03_a": ("complex", "dtype complex128 is not a real number type"),
    "H03_b": ("strings", "is not a real number type"),
    "H04_a": ("nan", "NaN or Inf values"),
    "H04_b": ("inf", "NaN or Inf values"),
    "H05_a": ("negative", "negative values"),
    "H05_b": ("scene", "scene is not the sum of the components"),
    "H06_a": ("missing-key", "scene: missing array"),
    "H06_b": ("extra-key", "notes: unexpected array"),
    "H07_a": ("symlink-out", "symbolic links are not followed"),
    "H07_b": ("missing-file", "missing condition file"),
    "H08_a": ("fifo", "not a regular file"),
    "H08_b": ("bad-crc", "corrupt npz archive: BadZipFile"),
    "H09_a": ("bad-deflate", "corrupt npz archive"),
    "H09_b": ("encrypted", "corrupt npz archive: RuntimeError"),
    "H10_a": ("traversal-member", "../components.npy: unexpected archive member"),
    "H10_b": ("shape", "components: shape"),
    "H11_a": ("directory", "not a regular file"),
    "H11_b": ("dev-zero-link", "symbolic links are not followed"),
    "H12_a": ("pitch", "angular_pixel_arcsec: expected 4.0"),
    "H12_b": ("grid", "x_arcmin: does not match the release grid"),
}
INTACT_CASES = ("H13", "H14")


def _make(sub, outside, cond, how, ref):
    path = sub / f"{cond}.npz"
    path.unlink(missing_ok=True)
    if how == "pickle-payload":
        corpus.pickle_payload(sub, path.name, list(KEYS))
    elif how == "bare-pickle":
        corpus.raw_pickle(sub, path.name)
    elif how == "zip-bomb":
        corpus.zip_bomb(sub, path.name, "components", others=("scene", "angular_pixel_arcsec"))
    elif how == "absurd-shape":
        corpus.absurd_shape(sub, path.name, "components", others=("scene", "angular_pixel_arcsec"))
    elif how == "symlink-out":
        shutil.copy(ref, outside / path.name)  # a perfect answer, but outside the folder
        corpus.outside_symlink(sub, path.name, outside / path.name)
    elif how == "missing-file":
        pass
    elif how == "fifo":
        corpus.fifo(sub, path.name)
    elif how == "bad-crc":
        corpus.corrupt_crc(sub, path.name, **_arrays(ref.parent, cond))
    elif how == "bad-deflate":
        corpus.corrupt_deflate(sub, path.name, "components", others=KEYS[1:])
    elif how == "encrypted":
        corpus.encrypted_flag(sub, path.name, "components", others=KEYS[1:])
    elif how == "traversal-member":
        corpus.traversal_member(sub, path.name, "components")
    elif how == "directory":
        path.mkdir()
    elif how == "dev-zero-link":
        corpus.device_link(sub, path.name)
    else:
        write_npz(path, **_broken(_arrays(ref.parent, cond), how))


@pytest.fixture(scope="module")
def hostile_run(release, reference_sub, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_halo_run")
    sub, outside, out = root / "sub", root / "outside", root / "scores"
    sub.mkdir()
    outside.mkdir()
    for f in reference_sub.glob("*.npz"):
        shutil.copyfile(f, sub / f.name)  # copies: the scorer refuses hard links
    for cond, (how, _) in HOSTILE.items():
        _make(sub, outside, cond, how, reference_sub / f"{cond}.npz")
    (sub / "..H13_a.npz").write_bytes(b"junk")  # extra names are never opened
    (sub / "README").write_text("not a condition")
    res = CliRunner().invoke(
        main,
        [
            "halo-evaluate",
            "--release",
            str(release),
            "--submission",
            str(sub),
            "--output",
            str(out / "score.json"),
        ],
    )
    return res, sub, out


def test_no_crash_and_a_whole_score_file(hostile_run):
    res, sub, out = hostile_run
    assert res.exit_code == 0 and res.exception is None, res.output
    assert [p.name for p in out.iterdir()] == ["score.json"]  # no temporary file left
    doc = load_json(out / "score.json")
    assert doc["format"] == "icl-halo-score/1" and len(doc["cases"]) == 14
    assert not (sub / corpus.MARKER).exists(), "a pickle payload was executed"


@pytest.mark.parametrize("cond", sorted(HOSTILE))
def test_each_hostile_condition_scores_zero_with_its_reason(hostile_run, cond):
    doc = load_json(hostile_run[2] / "score.json")
    got = doc["cases"][cond[:3]]["conditions"][cond]
    assert got["valid"] is False and got["score"] == 0.0
    assert HOSTILE[cond][1] in got["reason"], got["reason"]


def test_valid_cases_are_kept(hostile_run):
    doc = load_json(hostile_run[2] / "score.json")
    for case in INTACT_CASES:
        assert doc["cases"][case]["score"] == pytest.approx(100.0, abs=1e-9)
        assert all(c["valid"] for c in doc["cases"][case]["conditions"].values())
    for case in {c[:3] for c in HOSTILE}:
        assert doc["cases"][case]["score"] == 0.0 and doc["cases"][case]["paired"]["score"] == 0.0
    # The denominator stays 14 cases: two perfect cases out of fourteen.
    assert doc["halo_development_score"] == pytest.approx(200.0 / 14, abs=1e-9)


def test_bad_condition_id_in_the_release_is_a_clear_error(release, tmp_path):
    # A release whose condition id climbs out of private/ is refused before any file is opened.
    fake = tmp_path / "release"
    shutil.copytree(release / "public", fake / "public")
    cases = load_json(fake / "public" / "halo_cases.json")
    cases["cases"][0]["conditions"][0]["id"] = "../../etc/passwd"
    (fake / "public" / "halo_cases.json").write_text(json.dumps(cases))
    out = tmp_path / "score.json"
    out.write_text("previous")
    (tmp_path / "sub").mkdir()
    res = CliRunner().invoke(
        main,
        ["halo-evaluate", "--release", str(fake), "--submission", str(tmp_path / "sub"), "--output", str(out)],
    )
    assert res.exit_code == 2 and "halo_cases.json: cases[0].conditions[0].id: bad condition id" in res.output
    assert out.read_text() == "previous"  # an error never touches an existing score file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release", "score.json", "sub"]


def test_test_split_answers_are_not_reachable_by_symlink(release, tmp_path):
    # A test-split submission made of links to the private answers scores 0, never 100.
    sub = tmp_path / "sub"
    sub.mkdir()
    test = load_json(release / "public" / "halo_cases_test.json")
    for case in test["cases"]:
        for c in case["conditions"]:
            (sub / f"{c['id']}.npz").symlink_to(release / "private" / "test" / f"{c['id']}.npz")
    out = tmp_path / "score.json"
    res = CliRunner().invoke(
        main,
        [
            "halo-evaluate",
            "--release",
            str(release),
            "--submission",
            str(sub),
            "--output",
            str(out),
            "--split",
            "test",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = load_json(out)
    assert doc["split"] == "test" and doc["halo_development_score"] == 0.0
    reasons = {c["reason"] for case in doc["cases"].values() for c in case["conditions"].values()}
    assert reasons == {"symbolic links are not followed"}


def test_missing_or_hostile_test_split_is_a_clear_error(release, tmp_path):
    fake = tmp_path / "release"
    shutil.copytree(release / "public", fake / "public")
    (fake / "public" / "halo_cases_test.json").unlink()
    (tmp_path / "sub").mkdir()
    args = ["halo-evaluate", "--release", str(fake), "--submission", str(tmp_path / "sub"), "--output",
            str(tmp_path / "s.json"), "--split", "test"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "halo_cases_test.json" in res.output
    cases = load_json(release / "public" / "halo_cases_test.json")
    cases["cases"][0]["conditions"][0]["id"] = "../H01_a"  # would reach a development answer
    (fake / "public" / "halo_cases_test.json").write_text(json.dumps(cases))
    res = CliRunner().invoke(main, args)
    assert (
        res.exit_code == 2
        and "halo_cases_test.json: cases[0].conditions[0].id: bad condition id" in res.output
    )
    assert not (tmp_path / "s.json").exists()

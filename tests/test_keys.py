"""Release keys: keyed streams are deterministic per key, differ between keys, and never print the key."""

import numpy as np
import pytest
from icl.keys import KEY_FILE, ReleaseKey, read_key, require_secret, write_key


def test_streams_are_deterministic_and_named():
    k = ReleaseKey.from_seed(7)
    a = k.rng("pro", "base_eye", "E03").uniform(size=4)
    assert np.array_equal(a, ReleaseKey.from_seed(7).rng("pro", "base_eye", "E03").uniform(size=4))
    assert not np.array_equal(a, k.rng("pro", "base_eye", "E04").uniform(size=4))
    assert not np.array_equal(a, ReleaseKey.from_seed(8).rng("pro", "base_eye", "E03").uniform(size=4))


def test_secret_keys_differ_and_stay_out_of_repr(tmp_path):
    k1, k2 = ReleaseKey.new(), ReleaseKey.new()
    assert k1.secret != k2.secret and not k1.rebuildable
    assert k1.secret.hex() not in repr(k1)
    path = write_key(tmp_path, k1)
    assert path == tmp_path / KEY_FILE and (path.stat().st_mode & 0o077) == 0
    assert read_key(tmp_path).secret == k1.secret


def test_seeded_release_is_marked_rebuildable():
    fields = ReleaseKey.from_seed(3).manifest_fields()
    assert fields["answers_rebuildable"] is True and fields["seed"] == 3
    with pytest.raises(ValueError, match="rebuilt"):
        require_secret(fields, "release")
    require_secret(ReleaseKey.new().manifest_fields(), "release")
    with pytest.raises(ValueError):
        require_secret({}, "release")  # a manifest that says nothing is not trusted


def test_bad_key_file_names_the_file(tmp_path):
    (tmp_path / "private").mkdir()
    (tmp_path / KEY_FILE).write_text("zz\n")
    with pytest.raises(ValueError, match="release.key"):
        read_key(tmp_path)


# ----------------------------------------------------------------------------- releases and ranking

TINY = {"genuine": 4, "NH": 2, "DUP": 1, "SPL": 1}


def _forensics_run(release, tmp_path, name):
    from icl.forensics.baseline import load_public, random_scores
    from icl.forensics.evaluate import evaluate
    from icl.io import write_json

    images, _ = load_public(release)
    write_json(tmp_path / f"{name}.json", {"scores": random_scores(list(images), 1)})
    return evaluate(release, tmp_path / f"{name}.json")


def test_forensics_release_key_and_ranking(tmp_path):
    from icl.forensics.evaluate import rank
    from icl.forensics.generate import write_release
    from icl.io import load_json

    secret, dev = tmp_path / "secret", tmp_path / "dev"
    write_release(secret, counts=TINY)
    write_release(dev, 5, counts=TINY)
    m_secret, m_dev = load_json(secret / "manifest.json"), load_json(dev / "manifest.json")
    assert m_secret["answers_rebuildable"] is False and m_secret["seed"] is None
    assert m_dev["answers_rebuildable"] is True and m_dev["seed"] == 5
    # The key is private and unrelated to anything public; a second secret release draws other labels.
    assert (secret / KEY_FILE).is_file() and not list((secret / "public").rglob("*.key"))
    again = tmp_path / "again"
    write_release(again, counts=TINY)
    assert load_json(again / "private" / "labels.json") != load_json(secret / "private" / "labels.json")
    # The same public seed rebuilds the same labels: that is what makes a development release unrankable.
    write_release(tmp_path / "dev2", 5, counts=TINY)
    assert load_json(tmp_path / "dev2" / "private" / "labels.json") == load_json(dev / "private" / "labels.json")

    r_secret, r_dev = _forensics_run(secret, tmp_path, "s"), _forensics_run(dev, tmp_path, "d")
    assert r_secret["rankable"] is True and r_dev["rankable"] is False
    assert "rebuilt" in r_dev["rankable_reason"]
    # The development record keeps its S but gets no place, even with the higher S.
    r_dev["S"] = 1.0
    rows = rank([("dev", r_dev), ("secret", r_secret)])
    assert [(r["name"], r["place"]) for r in rows] == [("secret", 1), ("dev", None)]


def test_pro_score_on_a_rebuildable_release_is_not_ranked(tmp_path):
    from icl.pro.generate import generate
    from icl.pro.score import leaderboard, score_submission

    secret, dev = tmp_path / "secret", tmp_path / "dev"
    generate(secret, per_template=4, only=["A01"], progress=False)
    generate(dev, per_template=4, seed=3, only=["A01"], progress=False)
    assert (secret / KEY_FILE).is_file() and read_key(secret).secret != ReleaseKey.from_seed(3).secret
    empty = tmp_path / "run"
    empty.mkdir()
    s_secret = score_submission(secret, [empty], "on-secret", bootstrap_n=20)
    s_dev = score_submission(dev, [empty], "on-dev", bootstrap_n=20)
    assert s_secret["rankable"] is True
    assert s_dev["rankable"] is False and "rebuilt" in s_dev["rankable_reason"]
    # Still scored for development, but listed apart without a place, whatever its score.
    s_dev["professional_score"] = 100.0
    rows = leaderboard([s_dev, s_secret])
    assert [(r["name"], r["place"], r["rankable"]) for r in rows] == [("on-secret", 1, True), ("on-dev", None, False)]
    # A release without a manifest is not trusted either.
    (secret / "manifest.json").unlink()
    assert score_submission(secret, [empty], "no-manifest", bootstrap_n=20)["rankable"] is False


def test_pro_score_cli_marks_the_place(tmp_path):
    from click.testing import CliRunner
    from icl.pro.cli import pro_score
    from icl.pro.generate import generate

    dev = tmp_path / "dev"
    generate(dev, per_template=4, seed=3, only=["A01"], progress=False)
    (tmp_path / "run").mkdir()
    res = CliRunner().invoke(pro_score, [str(dev), str(tmp_path / "run"), "--output", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    assert "not ranked" in res.output
    from icl.io import load_json

    assert load_json(tmp_path / "s.json")["rankable"] is False

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

"""The shared loaders against hostile files: a clear InputError, never a crash, never unpickling."""

import os
import stat

import numpy as np
import pytest
from hostile import corpus
from icl.errors import InputError
from icl.io import load_json, load_npz, write_json, write_npz

KEYS = ["components", "scene"]


@pytest.fixture
def folder(tmp_path):
    yield tmp_path
    assert not (tmp_path / corpus.MARKER).exists(), "a pickle payload was executed"


@pytest.mark.parametrize("make,needle", [
    (lambda d: corpus.pickle_payload(d, "p.npz", KEYS), "object arrays"),
    (lambda d: corpus.raw_pickle(d, "p.npz"), "not a readable npz"),
    (lambda d: corpus.zip_bomb(d, "b.npz", "components", others=("scene",)), "more than the stored data"),
    (lambda d: corpus.arrays_npz(d, "m.npz", components=np.zeros(2)), "missing array"),
    (lambda d: corpus.arrays_npz(d, "x.npz", components=np.zeros(2), scene=np.zeros(2), extra=np.zeros(1)),
     "unexpected array"),
    (lambda d: corpus.outside_symlink(d, "l.npz", d.parent), "symbolic link"),
], ids=["pickle-in-object-array", "bare-pickle", "zip-bomb", "missing-key", "extra-key", "symlink-out"])
def test_npz_loader_refuses(folder, make, needle):
    path = make(folder)
    with pytest.raises(InputError) as err:
        load_npz(path, required=KEYS)
    assert needle in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("text,needle", [
    (corpus.DEEP_JSON, "nested"),
    (corpus.HUGE_NUMBER_JSON, "invalid JSON"),
    ('{"x": 1e999}', "overflows"),
    (corpus.NAN_JSON, "non-finite"),
    (corpus.NON_UTF8, "not UTF-8"),
    (corpus.MALFORMED_JSON, "invalid JSON"),
], ids=["deep", "huge-int", "huge-float", "nan", "non-utf8", "malformed"])
def test_json_loader_refuses(folder, text, needle):
    path = corpus.json_text(folder, "bad.json", text)
    with pytest.raises(InputError) as err:
        load_json(path)
    assert needle in str(err.value) and str(path) in str(err.value)


def test_npz_decompressed_size_limit(folder):
    path = corpus.zip_bomb(folder, "b.npz", "components", others=("scene",))
    assert path.stat().st_size < 1 << 20  # what arrives is small ...
    with pytest.raises(InputError, match="exceeds"):  # ... what it would expand to is refused unread
        load_npz(path, required=KEYS, max_bytes=32 << 20)


def test_json_size_limit(folder):
    path = corpus.json_text(folder, "big.json", '{"x": "' + "a" * 2000 + '"}')
    with pytest.raises(InputError, match="limit"):
        load_json(path, max_bytes=1000)


def test_round_trip_is_byte_reproducible(tmp_path):
    a = {"components": np.arange(6.0).reshape(1, 2, 3), "angular_pixel_arcsec": np.float64(4.0)}
    write_npz(tmp_path / "a.npz", **a)
    write_npz(tmp_path / "b.npz", **a)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = load_npz(tmp_path / "a.npz", required=a)
    assert back["angular_pixel_arcsec"].shape == () and float(back["angular_pixel_arcsec"]) == 4.0
    write_json(tmp_path / "j.json", {"b": 1, "a": np.float64(0.5)})
    assert (tmp_path / "j.json").read_text() == '{\n  "a": 0.5,\n  "b": 1\n}\n'
    with pytest.raises(ValueError):
        write_json(tmp_path / "n.json", {"x": float("nan")})
    assert not (tmp_path / "n.json").exists()


def test_written_files_are_readable_by_others(tmp_path):
    # Releases are handed to sandboxed runs under another uid: files follow the umask, not 0600.
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        write_npz(tmp_path / "b.npz", x=np.zeros(2))
    finally:
        os.umask(old)
    for name in ("a.json", "b.npz"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

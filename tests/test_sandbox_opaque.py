"""Content is recognised by its bytes, not its name: each disguise of reference code or of compiled code
moves a from-scratch submission off the from-scratch board with the file named; honest source plus data in
declared open formats stays there.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import lzma
import py_compile
import shutil
import tarfile
import zipfile
from pathlib import Path

import icl
import numpy as np
import pytest
from icl.sandbox.content import entropy, sniff
from icl.sandbox.provenance import OPAQUE_MIN_BYTES, classify_track

HOSTILE = Path(__file__).parent / "hostile_submissions"
MODULE = Path(icl.__file__).parent / "optics" / "render.py"
CORE = Path(importlib.util.find_spec("icl._core").origin)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _xor(data: bytes) -> bytes:
    """Scramble with a SHA-256 key stream, as the attack did with its key."""
    stream = b"".join(hashlib.sha256(i.to_bytes(8, "little")).digest() for i in range(len(data) // 32 + 1))
    return (np.frombuffer(data, np.uint8) ^ np.frombuffer(stream[: len(data)], np.uint8)).tobytes()


def _module() -> bytes:
    return MODULE.read_bytes()


def _pyc(tmp: Path) -> bytes:
    src = tmp / "solver_impl.py"
    src.write_text("def solve(x):\n    return x * 2\n")
    return Path(py_compile.compile(str(src), cfile=str(tmp / "solver_impl.pyc"))).read_bytes()


DISGUISES = {
    "zip named .dat": lambda tmp: ("source/weights.dat", _zip({"lib/painter.py": _module()}), "code"),
    "zip in zip": lambda tmp: ("source/assets.bin", _zip({"inner.zip": _zip({"painter.py": _module()})}), "code"),
    ".tar.lzma": lambda tmp: (
        "source/table.tar.lzma",
        lzma.compress(_tar({"pkg/painter.py": _module()}), format=lzma.FORMAT_ALONE),
        "code",
    ),
    "gzip stream in .bin": lambda tmp: ("source/coefficients.bin", gzip.compress(_module()), "code"),
    ".py renamed .txt, a byte added": lambda tmp: ("source/notes.txt", _module() + b"\x0c", "code"),
    ".pyc without source": lambda tmp: ("source/solver_impl.pyc", _pyc(tmp), "pyc"),
    "_core with a byte appended": lambda tmp: ("source/fastmath.so", CORE.read_bytes() + b"\x00", "elf"),
    "XOR-scrambled tar of the package": lambda tmp: (
        "source/weights.bin",
        _xor(_tar({f"icl/optics/{p.name}": p.read_bytes() for p in sorted(MODULE.parent.glob("*.py"))[:6]})),
        "binary",
    ),
}


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_each_disguise_moves_the_submission_off_the_from_scratch_board(tmp_path: Path, disguise: str) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(HOSTILE / "honest_fft", sub)
    rel, data, how = DISGUISES[disguise](tmp_path)
    (sub / rel).parent.mkdir(parents=True, exist_ok=True)
    (sub / rel).write_bytes(data)
    track, ev = classify_track(sub)
    assert track == "reference-assisted", ev["summary"]
    named = [h for h in ev["hits"] if h.split("!")[0] == rel]
    assert named, ev["hits"]
    if how == "code":
        assert any(r["hit"] and r["file"].split("!")[0] == rel for r in ev["code"])
    else:
        assert [o["kind"] for o in ev["opaque"] if o["file"] == rel] == [how]
        assert rel in ev["summary"]


def test_the_scrambled_tar_is_high_entropy_and_its_kind_is_unknown() -> None:
    data = _xor(_tar({p.name: p.read_bytes() for p in sorted(MODULE.parent.glob("*.py"))[:6]}))
    assert sniff(data) == "binary" and entropy(data) > 7.9 and len(data) > OPAQUE_MIN_BYTES


def test_honest_source_and_declared_data_stay_from_scratch(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(HOSTILE / "honest_fft", sub)
    rng = np.random.default_rng(3)
    data = sub / "source" / "data"
    data.mkdir()
    np.savez_compressed(data / "tables.npz", psf=rng.normal(size=(64, 64)), grid=np.linspace(0, 1, 500))
    np.savez(data / "plain.npz", a=rng.random(4000))
    np.save(data / "kernel.npy", rng.normal(size=(128, 128)).astype(np.float32))
    (data / "eye.json").write_text(json.dumps({"axial_length_mm": 23.5, "k": list(range(300))}))
    (data / "table.csv").write_text("\n".join(f"{i},{i * 0.5}" for i in range(2000)))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.imsave(data / "map.png", rng.random((64, 64)))
    track, ev = classify_track(sub)
    assert track == "from-scratch", ev["summary"]
    assert ev["opaque"] == [] and ev["hits"] == []


def test_split_blobs_count_together(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(HOSTILE / "honest_fft", sub)
    blob = _xor(b"\x00" * (OPAQUE_MIN_BYTES + 100))
    for i in range(0, len(blob), 1000):
        (sub / f"part{i // 1000}.bin").write_bytes(blob[i : i + 1000])
    track, ev = classify_track(sub)
    assert track == "reference-assisted"
    assert {o["file"] for o in ev["opaque"]} == {f"part{i}.bin" for i in range(5)}


def test_a_compression_bomb_is_bounded_and_opaque(tmp_path: Path) -> None:
    import time

    from icl.sandbox.provenance import MAX_MEMBER

    (tmp_path / "zeros.bin").write_bytes(gzip.compress(b"\0" * (MAX_MEMBER + 1024**2), compresslevel=1))
    t0 = time.monotonic()
    track, ev = classify_track(tmp_path)
    assert time.monotonic() - t0 < 10
    assert track == "reference-assisted" and "past the scan's bound" in ev["opaque"][0]["reason"]


def test_damaged_containers_never_break_the_scan(tmp_path: Path) -> None:
    import random

    tar = _tar({"painter.py": _module()})
    seeds = [tar, _zip({"a.py": _module(), "b.tar.xz": lzma.compress(tar)}), gzip.compress(tar),
             lzma.compress(tar, format=lzma.FORMAT_ALONE)]
    rng = random.Random(7)
    for i in range(60):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        (tmp_path / f"x{i}.bin").write_bytes(bytes(data[: rng.randrange(len(data)) or None]))
    track, ev = classify_track(tmp_path)  # every file is read as far as it goes: no exception escapes
    assert track == "reference-assisted" and len(ev["hits"]) >= 30

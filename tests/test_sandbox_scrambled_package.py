"""The attack of the issue, in miniature, on ``pro-run`` and on ``halo-run``: the reference package and its
compiled core XOR-scrambled into ``source/weights.bin``, unpacked by a ``/bin/sh`` run into ``/tmp`` and
loaded from there, and the core also shipped under another name with a byte appended. Before the run the
scan names both files as opaque, so the run counts as reference-assisted and scores 0 on the from-scratch
board; during the run the core unpacked into ``/tmp`` cannot be loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import tarfile
from pathlib import Path

import icl
import numpy as np
import pytest
from icl.halo.run import run_halo
from icl.sandbox.boards import board_entry
from icl.sandbox.harness import Limits, available_mechanisms, run_submission

CORE = Path(importlib.util.find_spec("icl._core").origin)
KEY = hashlib.sha256(b"weights").digest()
RUN = """#!/bin/sh
# Decode the "weights" into /tmp and load the compiled core from there, then the one shipped as fastmath.so.
python3 - "$2" <<'PY'
import ctypes, io, sys, tarfile
import numpy as np
data = np.fromfile("/submission/source/weights.bin", np.uint8)
key = np.frombuffer(bytes.fromhex("%s"), np.uint8)
plain = (data ^ np.resize(key, data.size)).tobytes()
tarfile.open(fileobj=io.BytesIO(plain)).extractall("/tmp/pkg")
out = open(sys.argv[1] + "/attempts.txt", "w")
for where in ("/tmp/pkg/icl/_core.so", "/submission/source/fastmath.so"):
    try:
        ctypes.CDLL(where)
        out.write(where + ": loaded\\n")
    except OSError:
        out.write(where + ": refused\\n")
PY
""" % KEY.hex()
LIMITS = Limits(cpus=1, memory_bytes=1024**3, timeout_s=60.0, processes=64, file_bytes=64 * 1024**2,
                tmp_bytes=64 * 1024**2, output_bytes=64 * 1024**2)


@pytest.fixture(scope="module")
def scrambled(tmp_path_factory) -> Path:
    sub = tmp_path_factory.mktemp("scrambled") / "sub"
    (sub / "source").mkdir(parents=True)
    buf = io.BytesIO()
    pkg = Path(icl.__file__).parent
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for p in [pkg / "__init__.py", *sorted((pkg / "optics").glob("*.py"))[:4]]:
            tf.add(p, arcname=f"icl/{p.relative_to(pkg)}")
        tf.add(CORE, arcname="icl/_core.so")
    plain = np.frombuffer(buf.getvalue(), np.uint8)
    (sub / "source" / "weights.bin").write_bytes((plain ^ np.resize(np.frombuffer(KEY, np.uint8), plain.size)).tobytes())
    (sub / "source" / "fastmath.so").write_bytes(CORE.read_bytes() + b"\n")
    (sub / "run").write_text(RUN)
    (sub / "run").chmod(0o755)
    return sub


def _check(record: dict, attempts: Path) -> None:
    assert record["track"] == "from-scratch" and record["effective_track"] == "reference-assisted"
    opaque = {o["file"]: o["kind"] for o in record["track_evidence"]["opaque"]}
    assert opaque == {"source/weights.bin": "binary", "source/fastmath.so": "elf"}
    lines = attempts.read_text().splitlines()
    assert "/tmp/pkg/icl/_core.so: refused" in lines  # unpacked at run time: nothing writable is executable
    # A binary in the frozen submission can load (the program itself is there), but it was named opaque.
    assert "/submission/source/fastmath.so: loaded" in lines


@pytest.mark.parametrize("mechanism", available_mechanisms())
def test_pro_run_counts_it_reference_assisted_and_the_unpacked_core_does_not_load(scrambled, tmp_path,
                                                                                  mechanism) -> None:
    (tmp_path / "in").mkdir()
    rec = run_submission(scrambled, tmp_path / "in", tmp_path / "out", limits=LIMITS, mechanism=mechanism)
    _check(rec.to_dict(), tmp_path / "out" / "attempts.txt")
    cell = board_entry("scrambled", 80.73, [rec.to_dict()])["boards"]["from-scratch"]
    assert cell["score"] == 0.0 and "source/weights.bin" in cell["reason"]


def test_halo_run_puts_it_off_the_from_scratch_board(scrambled, tmp_path) -> None:
    rel = tmp_path / "release"
    (rel / "public").mkdir(parents=True)
    (rel / "public" / "halo_cases.json").write_text('{"cases": []}')
    got = run_halo(rel, scrambled, tmp_path / "pred", cpus=1, memory="1G", timeout_s=60,
                   score_file=tmp_path / "score.json")
    _check(got["record"], tmp_path / "pred" / "attempts.txt")
    boards = json.loads((tmp_path / "score.json").read_text())["boards"]
    assert boards["from-scratch"]["score"] == 0.0 and "source/fastmath.so" in boards["from-scratch"]["reason"]
    assert "reference-assisted" in boards


CARRIER_RUN = """#!/bin/sh
# The same package carried in a declared data format (a uint8 .npy array), decoded into /tmp at run time.
python3 - <<'PY'
import io, tarfile
import numpy as np
data = np.load("/submission/source/weights.npy")
key = np.frombuffer(bytes.fromhex("%s"), np.uint8)
tarfile.open(fileobj=io.BytesIO((data ^ np.resize(key, data.size)).tobytes())).extractall("/tmp/pkg")
PY
""" % KEY.hex()


@pytest.mark.parametrize("mechanism", available_mechanisms())
def test_a_package_decoded_at_run_time_from_declared_data_is_found(scrambled, tmp_path, mechanism) -> None:
    sub = tmp_path / "sub"
    (sub / "source").mkdir(parents=True)
    np.save(sub / "source" / "weights.npy", np.fromfile(scrambled / "source" / "weights.bin", np.uint8))
    (sub / "run").write_text(CARRIER_RUN)
    (sub / "run").chmod(0o755)
    (tmp_path / "in").mkdir()
    rec = run_submission(sub, tmp_path / "in", tmp_path / "out", limits=LIMITS, mechanism=mechanism)
    assert rec.ok, rec.messages
    ev = rec.track_evidence
    assert rec.effective_track == "reference-assisted" and "runtime" in ev and ev["opaque"] == []
    assert "tmp/pkg/icl/_core.so" in ev["runtime"]["hits"]
    assert any(h.startswith("tmp/pkg/icl/optics/") for h in ev["runtime"]["hits"])
    assert ev["summary"].startswith("at run time: ") and rec.runtime_scan["files"] == 6

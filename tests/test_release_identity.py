"""A release is the same bytes whatever the host's BLAS kernel, thread count or NumPy SIMD level (slow).

bench/host_identity.py builds a small release of each track under every variant in subprocesses (this
process's variables are left as they are) and compares every file's SHA-256.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("track, extra", [("halo", []), ("forensics", []), ("pro", ["--only", "C04,C05,D02,E04,F05"])])
def test_release_bytes_do_not_depend_on_the_host(track, extra, tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "host_identity.py"), "--work", str(tmp_path),
                          "--track", track, *extra], capture_output=True, text=True, timeout=3600)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]

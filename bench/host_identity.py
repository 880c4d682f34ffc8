"""Build the same releases under several host arithmetic settings and compare every file's bytes.

Each variant is a subprocess with its own environment: OpenBLAS kernels this CPU can run, one thread,
and NumPy with its AVX-512 or its AVX2/FMA paths turned off (as on a host without them). A release
built from one seed must be the same bytes under every variant; the script prints the files that
differ and exits 1 if any does.

    python bench/host_identity.py --work /tmp/identity              # halo, pro and forensics
    python bench/host_identity.py --work /tmp/identity --track pro --only C04,D02

The slow test tests/test_release_identity.py runs a small case of each track the same way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Variables that choose a host's arithmetic; each variant starts from none of them set.
SCRUBBED = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "ICL_NUM_THREADS",
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
    "OPENBLAS_L2_SIZE",
)
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "skylakex": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "sandybridge": {"OPENBLAS_CORETYPE": "SandyBridge"},
    "one_thread": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "ICL_NUM_THREADS": "1"},
    "numpy_no_avx512": {"NPY_DISABLE_CPU_FEATURES": "AVX512_ICL X86_V4"},
    "numpy_no_avx2": {"NPY_DISABLE_CPU_FEATURES": "X86_V3"},
}
# Commands per track: a public development release from a fixed seed (its key derives from the seed).
TRACKS: dict[str, list[str]] = {
    "halo": ["halo-generate", "--seed", "3", "--no-gallery", "--test-variants", "1"],
    "pro": ["pro-generate", "--seed", "3", "--per-template", "4"],
    "forensics": ["forensics-generate", "--seed", "3"],
}


def file_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every regular file under ``folder``, by relative path."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def build(track: str, variant: str, work: Path, extra: list[str]) -> tuple[dict[str, str], float]:
    """Build ``track``'s release under ``variant`` in a fresh folder; its file hashes and wall seconds."""
    out = work / track / variant
    if out.exists():
        shutil.rmtree(out)
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(VARIANTS[variant])
    icl = [sys.executable, "-m", "icl"]
    t0 = time.perf_counter()
    cmd = [*icl, *TRACKS[track], *extra, "--output", str(out)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{track} under {variant} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    return file_hashes(out), time.perf_counter() - t0


def compare(base: dict[str, str], other: dict[str, str]) -> list[str]:
    """Relative paths whose bytes differ, or that one build has and the other lacks."""
    return sorted(k for k in base.keys() | other.keys() if base.get(k) != other.get(k))


def main(argv: list[str] | None = None) -> int:
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="Scratch folder (releases are built under it).")
    ap.add_argument("--track", choices=sorted(TRACKS), action="append", help="Tracks to build (default: all).")
    ap.add_argument("--variant", choices=sorted(VARIANTS), action="append", help="Variants besides default.")
    ap.add_argument("--only", help="pro only: comma list of template ids.")
    args = ap.parse_args(argv)
    variants = ["default", *(args.variant or [v for v in VARIANTS if v != "default"])]
    failed = False
    for track in args.track or list(TRACKS):
        extra = ["--only", args.only] if args.only and track == "pro" else []
        base, secs = build(track, "default", args.work, extra)
        print(f"{track:9s} default          {len(base):5d} files  {secs:6.1f} s")
        for v in variants[1:]:
            hashes, secs = build(track, v, args.work, extra)
            diff = compare(base, hashes)
            failed |= bool(diff)
            print(f"{track:9s} {v:16s} {len(hashes):5d} files  {secs:6.1f} s  differ: {len(diff)}")
            for path in diff[:20]:
                print(f"    {path}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

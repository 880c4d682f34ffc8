"""Fuzz every loader for a bounded time: ``python tests/fuzz/run.py --seconds 60 [--only NAME ...]``.

Each target of ``targets.py`` runs in its own atheris (libFuzzer) process, seeded with valid inputs, for
``--seconds`` seconds. Any exception other than the loader's documented refusal stops that target and
leaves the input under ``--artifacts`` (default: a fresh temporary folder); copy it into
``tests/fuzz/regressions/<target>/`` once fixed so that the default test suite replays it. Exit status 1
when any target found something.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str] | None = None) -> int:
    import targets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=60, help="time per target")
    ap.add_argument("--only", nargs="*", choices=sorted(targets.TARGETS), help="targets to run (default all)")
    ap.add_argument("--artifacts", type=Path, default=None, help="where crashing inputs are written")
    args = ap.parse_args(argv)
    artifacts = args.artifacts or Path(tempfile.mkdtemp(prefix="icl-fuzz-findings-"))
    artifacts.mkdir(parents=True, exist_ok=True)
    found = 0
    print(f"{'target':22s} {'runs':>10s} {'exec/s':>8s} {'cov':>6s}  result")
    for name in args.only or list(targets.TARGETS):
        corpus = Path(tempfile.mkdtemp(prefix=f"icl-fuzz-{name}-"))
        for i, seed in enumerate(targets.seeds(name)):
            (corpus / f"seed{i}").write_bytes(seed)
        prefix = artifacts / f"{name}-"
        proc = subprocess.run(
            [sys.executable, str(HERE / "fuzz_one.py"), name, f"-max_total_time={args.seconds}",
             "-timeout=20",
             "-rss_limit_mb=3072", f"-artifact_prefix={prefix}", "-print_final_stats=1", str(corpus)],
            capture_output=True, text=True)
        log = proc.stderr
        runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
        speed = re.search(r"stat::average_exec_per_sec:\s*(\d+)", log)
        cov = re.findall(r"cov: (\d+)", log)
        crashes = sorted(artifacts.glob(f"{name}-*"))
        if proc.returncode == 0 and not crashes:
            result = "no finding"
        else:
            found += 1
            tail = [line for line in log.splitlines() if "Error" in line or "Exception" in line][-3:]
            where = ", ".join(str(c) for c in crashes)
            result = f"FINDING (exit {proc.returncode}): {where}\n    " + "\n    ".join(tail)
        print(f"{name:22s} {runs.group(1) if runs else '?':>10s} {speed.group(1) if speed else '?':>8s} "
              f"{cov[-1] if cov else '?':>6s}  {result}", flush=True)
    print(f"artifacts: {artifacts}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

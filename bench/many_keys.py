"""Build keyed professional releases for many keys and report what each build needed.

Every key must build: the script prints, per release, its wall time, the instances whose first draw failed
and were redrawn (with the reason), and any release that did not build, then exits 1 if one did not.
The keys are derived from ``--first`` on (``sha256("icl-bench many-keys/<i>")``), so a failure can be
rebuilt; ``--seed`` adds public development keys (``icl pro-generate --seed S``).

    python bench/many_keys.py --work /tmp/keys --count 20 --per-template 4
    python bench/many_keys.py --work /tmp/keys --count 5 --per-template 8
    python bench/many_keys.py --work /tmp/keys --count 0 --seed 3 --seed 5 --seed 7
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path


def key_for(i: int):
    """The i-th key of the check (a secret key, not a rebuildable development key)."""
    from icl.keys import ReleaseKey

    return ReleaseKey(hashlib.sha256(f"icl-bench many-keys/{i}".encode()).digest(), rebuildable=False)


def build(out: Path, per_template: int, workers: int, key=None, seed: int | None = None) -> dict:
    """Build one release; its seconds, redrawn instances and error (None when it built)."""
    from icl.pro.generate import generate

    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    try:
        generate(out, per_template, seed=seed, key=key, progress=False, workers=workers)
        error = None
    except Exception as exc:  # reported, and the script goes on with the next key
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    redrawn = {}
    for ref in sorted((out / "private" / "references").glob("*.json")):
        doc = json.loads(ref.read_text())
        if doc.get("redraws"):
            redrawn[doc["instance"]] = [r["error"][:160] for r in doc["redraws"]]
    shutil.rmtree(out, ignore_errors=True)
    return {"seconds": seconds, "redrawn": redrawn, "error": error}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--count", type=int, default=20, help="Secret keys to build.")
    ap.add_argument("--first", type=int, default=0, help="Index of the first key.")
    ap.add_argument("--per-template", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, action="append", default=[], help="Public development seeds to build too.")
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    runs = [(f"key {i}", {"key": key_for(i)}) for i in range(args.first, args.first + args.count)]
    runs += [(f"seed {s}", {"seed": s}) for s in args.seed]
    failed = 0
    for label, kw in runs:
        res = build(args.work / "release", args.per_template, args.workers, **kw)
        failed += res["error"] is not None
        status = "FAILED " + res["error"][:300] if res["error"] else "ok"
        print(f"{label:8s} per-template {args.per_template}: {res['seconds']:6.1f} s  redrawn {len(res['redrawn'])}  {status}")
        for iid, why in res["redrawn"].items():
            print(f"    {iid}: {why}")
    print(f"{len(runs) - failed} of {len(runs)} built; load average {os.getloadavg()[0]:.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

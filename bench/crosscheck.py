"""Agreement of the two wave solvers on every reference of the halo track and of one professional release.

Halo: each of the 28 conditions is rendered as `icl halo-generate` does (FFT engine) and timed with and
without its cross-check (the matrix-Fourier solver on every 8th row and column); the table lists the
cross-check's metrics against one third of each tolerance. Professional: a public development release
(``--pro-seed``, 4 instances per template) is generated with the cross-check on, and its references are
summarised per template (largest disagreement over the instance's thin-phase and thick-eye PSFs, the
smallest PSF tolerance, how many references are ranked).

Run: ``python bench/crosscheck.py [--pro DIR] [--pro-seed 11] [--skip-pro]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from icl.crosscheck import crosscheck, lobe_mask
from icl.halo.cases import load_cases
from icl.halo.evaluate import TERMS
from icl.halo.release import build_reference
from icl.optics import render


def _cell(metrics: dict, name: str) -> str:
    return f"{metrics[name]['value']:.1e}" if name in metrics else "-"


def halo_table() -> None:
    scales = {k: s for k, (_, s) in TERMS.items()}
    print("| condition | sources x wavelengths | full_l1 | halo_l1 | energy | centroid_arcmin | ranked | "
          "reference s | cross-check s |")
    print("|---|---|---|---|---|---|---|---|---|")
    t_ref = t_chk = 0.0
    for case in load_cases()[0]:
        for cond in case.conditions:
            t0 = time.perf_counter()
            res = render(cond.scene)
            t1 = time.perf_counter()
            ref = build_reference(cond)  # as the generator runs it, cross-check included
            t2 = time.perf_counter()
            lobes = [(s["wick_arcmin"] or s["expected_wick_arcmin"], s["main_lobe_radius_arcmin"])
                     for s in ref.record["sources"]]
            t3 = time.perf_counter()
            mask = lobe_mask(res.x_arcmin, lobes)
            check = crosscheck(cond.scene, res.components, scales, halo_mask=mask)
            t4 = time.perf_counter()
            t_ref += (t2 - t1) - (t4 - t3)
            t_chk += t4 - t3
            cells = [_cell(check["metrics"], k) for k in ("full_l1", "halo_l1", "energy", "centroid_arcmin")]
            shape = " + ".join(str(len(s.spectrum)) for s in cond.scene.sources)
            ranked = "yes" if check["ranked"] else "no"
            print(f"| {cond.id} | {shape} | {' | '.join(cells)} | {ranked} | "
                  f"{t1 - t0 + (t2 - t1) - (t4 - t3):.2f} | {t4 - t3:.2f} |")
    names = ("full_l1", "halo_l1", "energy", "centroid_arcmin")
    print("\nlimits (a third of each scale): " + ", ".join(f"{k} {scales[k] / 3:.3g}" for k in names))
    print(f"total: references {t_ref:.1f} s, cross-checks {t_chk:.1f} s")


def pro_table(folder: Path, seed: int, generate: bool) -> None:
    if generate:
        from icl.pro.generate import generate as gen

        t0 = time.perf_counter()
        gen(folder, per_template=4, seed=seed, progress=False)
        dt = time.perf_counter() - t0
        print(f"pro release (4 instances per template + 1 OOD, seed {seed}): {dt:.0f} s")
    per = defaultdict(lambda: {"instances": 0, "ranked": 0, "thin": 0, "thick": 0, "tol": None,
                               "l1": 0.0, "energy": 0.0, "centroid": 0.0})
    for f in sorted((folder / "private" / "references").glob("*.json")):
        doc = json.loads(f.read_text())
        row = per[doc["template"]]
        row["instances"] += 1
        check = doc.get("crosscheck", {})
        row["ranked"] += bool(check.get("ranked", True))
        for case in check.get("cases", {}).values():
            m = case.get("metrics", {})
            if not m:
                continue
            thick = case["methods"][1]["name"].startswith("icl.eye.far_field")
            row["thick" if thick else "thin"] += 1
            row["l1"] = max(row["l1"], m["full_l1"]["value"])
            row["energy"] = max(row["energy"], m["energy"]["value"])
            row["centroid"] = max(row["centroid"], m.get("centroid_arcmin", {}).get("value", 0.0))
            if "tolerance" in m["full_l1"]:
                row["tol"] = m["full_l1"]["tolerance"]
    print("| template | instances | thin PSFs checked | thick PSFs checked | largest full_l1 | "
          "largest energy | largest centroid_arcmin | L1 tolerance / 3 | ranked |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tid in sorted(per):
        r = per[tid]
        lim = f"{r['tol'] / 3:.2g}" if r["tol"] else "-"
        vals = (f"{r['l1']:.1e} | {r['energy']:.1e} | {r['centroid']:.1e}" if r["thin"] + r["thick"]
                else "- | - | -")
        print(f"| {tid} | {r['instances']} | {r['thin']} | {r['thick']} | {vals} | {lim} | "
              f"{r['ranked']}/{r['instances']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pro", default="/tmp/icl-crosscheck-pro", help="folder of the professional release")
    ap.add_argument("--pro-seed", type=int, default=11)
    ap.add_argument("--skip-pro", action="store_true")
    ap.add_argument("--pro-existing", action="store_true", help="summarise an existing release in --pro")
    args = ap.parse_args()
    np.seterr(all="ignore")
    halo_table()
    if not args.skip_pro:
        pro_table(Path(args.pro), args.pro_seed, not args.pro_existing)


if __name__ == "__main__":
    main()

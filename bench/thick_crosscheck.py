"""Convergence of the thick eye's second wave path, and its agreement with the C05/D02 references.

``--convergence``: three thick cases of the professional track (the C05 clear hole with an off-axis source,
the C05 black disk on axis, the D02 clear hole at a 3.5 mm pupil) go through the second path
(:func:`icl.eye.far_field.render_thick_mft`) at several settings: pupil nodes per cycle and sub-pixel
order of the matrix-Fourier solver, azimuths and bisection steps of its footprint search (the pupil rays).
Each is compared with the path's finest setting (4 nodes per cycle, 24 extra nodes, 5 x 5 sub-pixel
nodes, 96 azimuths, 52 bisections) on every 2nd row and column of the 128 x 128 detector; the FFT engine
follows at its default (filtered thick coverages), with the plain coverages it used before, and on finer
pupil grids.

``--release DIR``: a professional release with C05 and D02 only (``--seed``, 4 instances per template
plus one out of distribution; generated unless ``--existing``), summarised per instance and case from
the cross-check records in ``private/references``, with the time of the FFT render and of the cross-check
of each case measured again here.

Run: ``python bench/thick_crosscheck.py --convergence`` and
``python bench/thick_crosscheck.py --release /tmp/icl-thick-pro [--existing] [--seed 11]``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from icl.crosscheck import crosscheck, disagreement, subsample, with_true_values
from icl.eye.far_field import ThickMftSampling, render_thick_mft
from icl.eye.pupil import ThickPupil
from icl.keys import ReleaseKey
from icl.optics import Sampling, render
from icl.optics.mft import MftSampling
from icl.optics.render import psf_samples
from icl.pro import thick as th

FINEST = ThickMftSampling(MftSampling(4.0, 24, 5), n_azimuths=96, n_bisect=52)
SETTINGS = [  # (nodes per cycle, min nodes, sub-pixel, azimuths, bisections)
    (1.0, 12, 3, 48, 44), (1.5, 12, 3, 48, 44), (2.0, 12, 2, 48, 44), (2.0, 12, 3, 48, 44),
    (3.0, 12, 4, 48, 44), (2.0, 12, 3, 16, 44), (2.0, 12, 3, 48, 16), (2.0, 12, 3, 48, 24),
]
DEFAULT = (2.0, 12, 3, 48, 44)


class PlainThickPupil(ThickPupil):
    """The thick pupil with plain cell coverages (the FFT engine's thick treatment before the edge filter)."""

    takes_edge_filter = False


def _cases() -> dict:
    """Thick scenes of the three study cases (package built as the C05/D02 builders do)."""
    from icl.pro.generate import Ctx, base_eye, family, fit_icl, make_package, min_rms_power

    key = ReleaseKey.from_seed(3)
    e = base_eye("E00", key, False)
    f = fit_icl(e, family("F00", key, False))
    ctx = Ctx(key.rng("bench", "thick", 0), e, f, "E00", "F00", False)
    out = {}
    study = (("C05 clear, source (2.4, -0.6)'", "clear", (2.4, -0.6), e["pupil_diameter"]),
             ("C05 black, on axis", "black", (0.0, 0.0), e["pupil_diameter"]),
             ("D02 clear, 3.5 mm pupil", "clear", (0.0, 0.0), 3.5))
    for name, model, src, pupil in study:
        power, _ = min_rms_power(ctx, pupil)
        pkg = make_package(e, f, "E00", "F00", hole_model=model, pupil_diameter=pupil, thin_power=power,
                           sources=[("L1", *src, [[550.0, 1.0]])])
        out[name] = th.thick_scene(pkg)
    return out


def _fmt(d: dict) -> str:
    return f"{d['full_l1']:.1e} | {d['energy']:.1e} | {d['centroid_arcmin']:.1e}"


def convergence() -> None:
    """Print the convergence table (markdown)."""
    print("| case | nodes per cycle | sub-pixel | azimuths x bisections | pupil nodes | rays traced | L1 "
          "| energy | centroid_arcmin | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, scene in _cases().items():
        idx = subsample(scene.detector.n, 2)
        axis = scene.detector.axis_arcmin[idx]
        truth, _ = render_thick_mft(scene, idx, idx, FINEST)
        for npc, mn, sp, naz, nb in SETTINGS:
            t0 = time.perf_counter()
            smp = ThickMftSampling(MftSampling(npc, mn, sp), n_azimuths=naz, n_bisect=nb)
            img, st = render_thick_mft(scene, idx, idx, smp)
            dt = time.perf_counter() - t0
            bold = "**" if (npc, mn, sp, naz, nb) == DEFAULT else ""
            err = _fmt(disagreement(img, truth, axis, axis))
            print(f"| {name} | {bold}{npc:g}{bold} | {bold}{sp}{bold} | {bold}{naz} x {nb}{bold} | "
                  f"{st[0]['nodes']} | {st[0]['rays']} | {err} | {dt:.2f} |")
        keys = ("eye", "implant", "field_arcmin", "paths", "fresnel", "wavelength_nm")
        plain = PlainThickPupil(**{k: getattr(scene.pupil, k) for k in keys})
        for label, pupil, smp in (
            ("FFT engine, default (filtered coverages)", scene.pupil, Sampling()),
            ("FFT engine, plain coverages", plain, Sampling()),
            ("FFT engine, twice the pupil samples", scene.pupil, Sampling(min_pupil_samples=512,
                                                                           min_period_arcmin=280.0)),
        ):
            psf_samples.cache_clear()
            t0 = time.perf_counter()
            img = render(replace(scene, pupil=pupil), smp).scene[np.ix_(idx, idx)][None]
            dt = time.perf_counter() - t0
            print(f"| {name} | {label} | | | | | {_fmt(disagreement(img, truth, axis, axis))} | {dt:.2f} |")


def release(folder: Path, seed: int, generate: bool) -> None:
    """Generate (or read) a C05/D02 release and print its agreement and cost per instance and case."""
    if generate:
        from icl.pro.generate import generate as gen

        t0 = time.perf_counter()
        c0 = time.process_time()
        gen(folder, per_template=4, seed=seed, progress=False, only=["C05", "D02"])
        print(f"release (C05, D02; 4 instances each + 1 OOD, seed {seed}): "
              f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU")
    print("| instance | split | case | full_l1 | energy | centroid_arcmin | tolerance (limit) | pupil nodes "
          "| ranked | FFT render CPU s | cross-check CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    totals = {"render": 0.0, "check": 0.0, "cases": 0}
    for f in sorted((folder / "private" / "references").glob("*.json")):
        doc = json.loads(f.read_text())
        if doc["template"] not in ("C05", "D02"):
            continue
        idir = folder / "inputs" / doc["split"] / doc["instance"] / "cases"
        for case, rec in sorted(doc["crosscheck"]["cases"].items()):
            pkg = {p.stem: json.loads(p.read_text()) for p in (idir / case).glob("*.json")}
            scene = th.thick_scene(with_true_values(pkg, doc.get("measurement_noise", {})))
            psf_samples.cache_clear()
            c0 = time.process_time()
            img = render(scene).scene
            c1 = time.process_time()
            again = crosscheck(scene, img, {"full_l1": rec["metrics"]["full_l1"]["tolerance"]}, summed=True)
            c2 = time.process_time()
            totals["render"] += c1 - c0
            totals["check"] += c2 - c1
            totals["cases"] += 1
            m = rec["metrics"]
            rerun = again["metrics"]["full_l1"]["value"]
            note = "" if rerun == m["full_l1"]["value"] else f" (rerun {rerun:.2e})"
            print(f"| {doc['instance']} | {doc['split']} | {case} | {m['full_l1']['value']:.2e}{note} | "
                  f"{m['energy']['value']:.1e} | {m['centroid_arcmin']['value']:.1e} | "
                  f"{m['full_l1']['tolerance']:g} ({m['full_l1']['limit']:.2g}) | "
                  f"{rec['second_path']['pupil_nodes']} | {'yes' if rec['ranked'] else 'no'} | "
                  f"{c1 - c0:.2f} | {c2 - c1:.2f} |")
    print(f"\n{totals['cases']} thick cases: FFT renders {totals['render']:.1f} s CPU, cross-checks "
          f"{totals['check']:.1f} s CPU")


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convergence", action="store_true")
    ap.add_argument("--release", type=Path, default=None, help="folder of the C05/D02 release")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--existing", action="store_true", help="summarise the release already in --release")
    args = ap.parse_args()
    if args.convergence:
        convergence()
    if args.release is not None:
        release(args.release, args.seed, not args.existing)


if __name__ == "__main__":
    main()

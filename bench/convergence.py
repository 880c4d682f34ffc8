"""Convergence study of the thin-phase renderer's numerical parameters.

For each test scene the render at a given FFT-period factor (which also sets the pupil sampling,
du = lambda / (m p)) is compared with the analytic pixel-integrated Airy pattern where one exists and
with a reference render at a much finer discretisation otherwise. Printed metrics are the ones the
halo evaluator scores with: full-image L1 / energy, halo-region L1 / halo energy
(outside 2.5 lambda/D of the wick), centroid error (arcmin) and recorded-energy error; the smallest
evaluator scale is 0.03 (energy), so the defaults must keep every error below 0.01.

With ``--mft`` the same cases go through the second solver (:mod:`icl.optics.mft`): its pupil nodes per
cycle of the integrand and its sub-pixel Gauss order are varied, against the analytic Airy pattern where
one exists and against its own finest setting otherwise; the last column compares it with the FFT
engine's default render. It evaluates every 4th row and column (16384 pixels) to keep the study short.

Run: ``python bench/convergence.py [--markdown] [--mft] [--double]`` (``--double``: far-field transforms in
double precision; the default is single, as in the renderer; references are always in double).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from analytic import airy_pixel_flux  # noqa: E402
from icl.optics import ICL, Detector, Pupil, Sampling, Scene, Source, render  # noqa: E402
from icl.optics.mft import MftSampling, render_mft  # noqa: E402
from icl.optics.render import psf_samples  # noqa: E402
from icl.parallel import run_tasks  # noqa: E402

ARCMIN_PER_RAD = 180 * 60 / math.pi
FACTORS = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
REFERENCE_FACTOR = 16.0
FREE = {"min_pupil_samples": 1, "min_period_arcmin": 0.0}  # the period set by fft_factor alone

CASES = {
    "airy-550nm": (Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector()), "analytic"),
    "airy-450nm-4.8mm": (
        Scene(
            (Source(spectrum=((450.0, 1.0),)),),
            Pupil(diameter_mm=4.8, eye_excess_d=0.0, icl=None),
            Detector(),
        ),
        "analytic",
    ),
    "hole-0.36mm": (Scene((Source(),), Pupil(icl=ICL(hole_mm=0.36)), Detector()), "reference"),
    "hole-cyl-decentred": (
        Scene(
            (Source(x_arcmin=3.0, y_arcmin=-2.0),),
            Pupil(icl=ICL(hole_mm=0.36, cylinder_d=0.35, axis_deg=20, decentre_mm=(0.15, 0.10))),
            Detector(),
        ),
        "reference",
    ),
    "edge-16.5arcmin": (
        Scene((Source(x_arcmin=16.5, y_arcmin=0.5),), Pupil(icl=ICL(hole_mm=0.36)), Detector()),
        "reference",
    ),
}


def metrics(
    img: np.ndarray, ref: np.ndarray, x: np.ndarray, wick: tuple[float, float], lam_over_d: float
) -> dict:
    """Evaluator-style errors of ``img`` against ``ref``."""
    xx, yy = np.meshgrid(x, x)
    halo = np.hypot(xx - wick[0], yy - wick[1]) > 2.5 * lam_over_d
    cen = lambda a: np.array([(a * xx).sum(), (a * yy).sum()]) / a.sum()  # noqa: E731
    return {
        "L1": np.abs(img - ref).sum() / ref.sum(),
        "halo_L1": np.abs(img - ref)[halo].sum() / ref[halo].sum(),
        "centroid_arcmin": float(np.hypot(*(cen(img) - cen(ref)))),
        "energy": abs(img.sum() - ref.sum()) / ref.sum(),
    }


def case_rows(name: str, single: bool = True) -> list[dict]:
    """Every factor of one case (one independent task); ``single``: the rows' transforms in single precision
    (the default), else double. The reference render is always in double precision."""
    scene, truth = CASES[name]
    src = scene.sources[0]
    lam = src.spectrum[0][0] * 1e-9
    lam_over_d = lam / (scene.pupil.diameter_mm * 1e-3) * ARCMIN_PER_RAD
    x = scene.detector.axis_arcmin
    if truth == "analytic":
        ref = airy_pixel_flux(
            x,
            x,
            scene.detector.pitch_arcsec,
            lam,
            scene.pupil.diameter_mm * 1e-3,
            centre=(src.x_arcmin, src.y_arcmin),
        )
    else:
        ref = render(scene, Sampling(fft_factor=REFERENCE_FACTOR, single_precision_fft=False, **FREE)).scene
    rows = []
    # The FFT period alone (no floor on the pupil sampling), then the shipped defaults and the coarser preset
    # Sampling.fast() (a relative L1 of 1e-3 is its target).
    for label, sampling in [
        (f"{f:g}", Sampling(fft_factor=f, single_precision_fft=single, **FREE)) for f in FACTORS
    ] + [("default", Sampling(single_precision_fft=single)),
         ("fast", dataclasses.replace(Sampling.fast(), single_precision_fft=single))]:
        psf_samples.cache_clear()
        t0 = time.perf_counter()
        res = render(scene, sampling)
        dt = time.perf_counter() - t0
        info = next(iter(res.sampling["wavelengths_nm"].values()))
        rows.append(
            {
                "case": name,
                "truth": truth,
                "fft_factor": label,
                "fft_length": info["fft_length"],
                "pupil_samples": info["pupil_samples"],
                "seconds": dt,
                **metrics(res.scene, ref, x, (src.x_arcmin, src.y_arcmin), lam_over_d),
            }
        )
    return rows


MFT_SETTINGS = [(1.0, 3), (1.5, 3), (2.0, 2), (2.0, 3), (3.0, 4)]  # (nodes per cycle, sub-pixel order)
MFT_REFERENCE = MftSampling(nodes_per_cycle=4.0, min_nodes=24, subpixel=5)
MFT_STRIDE = 4


def mft_rows(name: str) -> list[dict]:
    """The second solver at each setting on one case, on every MFT_STRIDE-th row and column."""
    scene, truth = CASES[name]
    src = scene.sources[0]
    lam = src.spectrum[0][0] * 1e-9
    lam_over_d = lam / (scene.pupil.diameter_mm * 1e-3) * ARCMIN_PER_RAD
    idx = np.arange(MFT_STRIDE // 2, scene.detector.n, MFT_STRIDE)
    x = scene.detector.axis_arcmin[idx]
    if truth == "analytic":
        ref = airy_pixel_flux(x, x, scene.detector.pitch_arcsec, lam, scene.pupil.diameter_mm * 1e-3,
                              centre=(src.x_arcmin, src.y_arcmin))
    else:
        ref = render_mft(scene, idx, idx, MFT_REFERENCE)[0]
    psf_samples.cache_clear()
    fft = render(scene).scene[np.ix_(idx, idx)]
    rows = []
    for npc, order in MFT_SETTINGS:
        t0 = time.perf_counter()
        img = render_mft(scene, idx, idx, MftSampling(nodes_per_cycle=npc, subpixel=order))[0]
        dt = time.perf_counter() - t0
        rows.append({"case": name, "truth": truth if truth == "analytic" else "mft-finest",
                     "nodes_per_cycle": npc, "subpixel": order, "seconds": dt,
                     **metrics(img, ref, x, (src.x_arcmin, src.y_arcmin), lam_over_d),
                     "L1_vs_fft_default": float(np.abs(img - fft).sum() / fft.sum())})
    return rows


def study(
    scheduler: str | None = None, workers: int = 1, mft: bool = False, single: bool = True
) -> list[dict]:
    """Run every case at every setting; return one row per (case, setting), in case order."""
    task = mft_rows if mft else functools.partial(case_rows, single=single)
    per_case = run_tasks(task, list(CASES), scheduler=scheduler, workers=workers, description="cases")
    return [row for rows in per_case for row in rows]


def main() -> None:
    """Print the table (plain or markdown)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--scheduler", default=None, help="dask.distributed address, or 'local'")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--mft", action="store_true", help="the second solver's own convergence table")
    ap.add_argument("--double", action="store_true", help="far-field transforms in double precision")
    args = ap.parse_args()
    rows = study(args.scheduler, args.workers, args.mft, single=not args.double)
    cols = ["case", "truth", "nodes_per_cycle", "subpixel", "L1", "halo_L1", "centroid_arcmin", "energy",
            "L1_vs_fft_default", "seconds"] if args.mft else [
        "case",
        "truth",
        "fft_factor",
        "fft_length",
        "pupil_samples",
        "L1",
        "halo_L1",
        "centroid_arcmin",
        "energy",
        "seconds",
    ]
    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.2e}" if v < 0.1 else f"{v:g}"
        return str(v)
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(fmt(r[c]) for c in cols) + " |")
    else:
        print("  ".join(f"{c:>16}" for c in cols))
        for r in rows:
            print("  ".join(f"{fmt(r[c]):>16}" for c in cols))


if __name__ == "__main__":
    main()

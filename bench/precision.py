"""What single precision changes: the default render against double-precision transforms, and the placement.

For each scene (1024 x 1024 detector at 4 arcsec): the relative L1 of the single-precision image against the
double-precision one over the whole detector and outside 2.5 lambda/D of the source (the halo region), the
largest pixel difference over the peak, and the mean relative difference on rings of 5-10, 10-20, 20-30 and
30-34 arcmin from the source, with the ring's mean level over the peak; for the aberration-free pupil also the
relative L1 of both against the analytic pixel-integrated Airy pattern (tests/analytic.py). The last column is
the relative L1 of the single-precision placement (``Sampling(single_precision_placement=True)``, on in
``Sampling.fast()``) against the default double-precision placement, both with single-precision transforms.

Run: ``python bench/precision.py [--n 1024] [--markdown]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from analytic import airy_pixel_flux  # noqa: E402
from icl.optics import ICL, Detector, Pupil, Sampling, Scene, Source, render  # noqa: E402
from icl.optics.render import psf_samples  # noqa: E402

ARCMIN_PER_RAD = 180 * 60 / math.pi
RINGS = ((5, 10), (10, 20), (20, 30), (30, 34))


def scenes(n: int) -> dict[str, Scene]:
    """The scenes of the table."""
    det = Detector(n=n)
    return {
        "airy 3.2 mm": Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), det),
        "ICL, 0.36 mm hole": Scene((Source(),), Pupil(icl=ICL(hole_mm=0.36)), det),
        "ICL, hole, cylinder, decentred, source off axis": Scene(
            (Source(x_arcmin=3.0, y_arcmin=-2.0),),
            Pupil(icl=ICL(hole_mm=0.36, cylinder_d=0.35, axis_deg=20, decentre_mm=(0.15, 0.10))),
            det,
        ),
    }


def row(name: str, scene: Scene) -> dict:
    """Errors of the single-precision render of ``scene`` against double precision (and the truth)."""
    images = {}
    for single in (True, False):
        psf_samples.cache_clear()
        images[single] = render(scene, Sampling(single_precision_fft=single)).scene
    f32, f64 = images[True], images[False]
    psf_samples.cache_clear()
    placed32 = render(scene, Sampling(single_precision_placement=True)).scene
    src = scene.sources[0]
    x = scene.detector.axis_arcmin
    xx, yy = np.meshgrid(x, x)
    rr = np.hypot(xx - src.x_arcmin, yy - src.y_arcmin)
    lam = src.spectrum[0][0] * 1e-9
    halo = rr > 2.5 * lam / (scene.pupil.diameter_mm * 1e-3) * ARCMIN_PER_RAD
    d = np.abs(f32 - f64)
    out = {"scene": name, "L1": d.sum() / f64.sum(), "halo_L1": d[halo].sum() / f64[halo].sum(),
           "max_over_peak": d.max() / f64.max(),
           "placement single / double L1": float(np.abs(placed32 - f32).sum() / f32.sum())}
    for r0, r1 in RINGS:
        ring = (rr >= r0) & (rr < r1)
        out[f"{r0}-{r1}'"] = (f"{np.mean(d[ring] / np.abs(f64[ring])):.1e} "
                              f"(level {np.mean(f64[ring]) / f64.max():.0e})") if ring.any() else "-"
    if scene.pupil.icl is None:
        truth = airy_pixel_flux(x, x, scene.detector.pitch_arcsec, lam, scene.pupil.diameter_mm * 1e-3)
        out["airy_L1 single / double"] = (f"{np.abs(f32 - truth).sum() / truth.sum():.2e} / "
                                          f"{np.abs(f64 - truth).sum() / truth.sum():.2e}")
    return out


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = [row(name, sc) for name, sc in scenes(args.n).items()]
    cols = ["scene", "L1", "halo_L1", "max_over_peak", *[f"{a}-{b}'" for a, b in RINGS],
            "airy_L1 single / double", "placement single / double L1"]
    fmt = lambda v: f"{v:.1e}" if isinstance(v, float) else str(v)  # noqa: E731
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    for r in rows:
        cells = [fmt(r.get(c, "-")) for c in cols]
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))


if __name__ == "__main__":
    main()

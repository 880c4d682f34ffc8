"""How the render's time and peak memory grow with the detector size and with the number of sources.

Two scans of ``icl.optics.render`` on the reference pupil (3.2 mm, aberration-free, 550 nm, 4 arcsec
pixels):

- detector: N x N pixels, N = 128 ... 2048, one point source at fixation;
- sources: 1 ... 16 point sources on a 512 x 512 detector, evenly spaced on a circle of 5 arcmin
  radius (a fixed largest offset keeps the PSF support window, hence the FFT, the same for every
  count: what grows is the per-source placement).

Each point runs in a subprocess of its own: one warm-up render (FFTW planning, tap design), then
``--repeat`` renders with the far-field cache cleared before each; the median time and the rise of
the peak resident memory (``ru_maxrss``) over the resident set before the renders are reported. The
growth exponent is the least-squares slope of log(value) against log(N) or log(sources), over all
points and over the three largest (fixed costs flatten the small end).

Usage::

    python bench/scaling.py [--repeat 5] [--threads 1] [--no-plots]

writes docs/img/scaling_detector.png and docs/img/scaling_sources.png and prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DETECTORS = (128, 256, 512, 1024, 2048)
SOURCES = (1, 2, 4, 8, 16)
SOURCE_DETECTOR = 512
RING_ARCMIN = 5.0
SCRUBBED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # hand-picked BLAS kernels distort timings


def scene_for(n: int, sources: int, ring: bool):
    """Reference pupil on an n x n detector: one source at fixation, or ``sources`` on the circle."""
    from icl.optics import Detector, Pupil, Scene, Source

    if not ring:
        srcs = (Source(),)
    else:
        angles = [2 * math.pi * k / sources for k in range(sources)]
        srcs = tuple(Source(id=f"S{k + 1}", x_arcmin=RING_ARCMIN * math.cos(a),
                            y_arcmin=RING_ARCMIN * math.sin(a)) for k, a in enumerate(angles))
    return Scene(srcs, Pupil(eye_excess_d=0.0, icl=None), Detector(n=n))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(n: int, sources: int, ring: bool, repeat: int, threads: int) -> None:
    """Time ``repeat`` renders of one scene after a warm-up; print a JSON summary."""
    from icl import _core
    from icl.optics import render
    from icl.optics.render import psf_samples

    _core.set_num_threads(threads)
    scene = scene_for(n, sources, ring)
    base = _rss_bytes()
    render(scene)
    times = []
    for _ in range(repeat):
        psf_samples.cache_clear()
        t0 = time.perf_counter()
        render(scene)
        times.append(time.perf_counter() - t0)
    peak = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
    print(json.dumps({"seconds": statistics.median(times), "times": times, "peak_mib": peak / 2**20}))


def measure(n: int, sources: int, ring: bool, args: argparse.Namespace) -> dict:
    """Run one point of a scan in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", f"{n},{sources},{int(ring)}",
           "--repeat", str(args.repeat), "--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"render of {n} px, {sources} sources failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def table(title: str, xname: str, xs: tuple[int, ...], rows: list[dict]) -> str:
    """Markdown table of one scan with its fitted exponents."""
    lines = [f"**{title}**", "", f"| {xname} | median s | peak MiB |", "|---|---|---|"]
    lines += [f"| {x} | {r['seconds']:.4g} | {r['peak_mib']:.1f} |" for x, r in zip(xs, rows, strict=True)]
    lines.append("")
    # Fixed costs (the 256-sample pupil floor, Python overhead per call) flatten the small end: the slope
    # over the three largest points is the one that predicts larger problems.
    for label, sel in (("all points", slice(None)), ("three largest", slice(-3, None))):
        x = xs[sel]
        t = [r["seconds"] for r in rows][sel]
        mem = [r["peak_mib"] for r in rows][sel]
        m_exp = f"{slope(x, mem):.2f}" if min(mem) > 0 else "- (a zero rise)"
        lines.append(f"growth exponent, {label} (log-log slope): time {slope(x, t):.2f}, "
                     f"peak memory {m_exp}  ")
    return "\n".join(lines)


def plot(path: Path, xname: str, xs: tuple[int, ...], rows: list[dict], title: str) -> None:
    """Log-log plot of time and peak memory with their fitted power laws."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullLocator

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    x = np.asarray(xs, dtype=float)
    panels = ((axes[0], "seconds", "median render time (s)"), (axes[1], "peak_mib", "peak memory rise (MiB)"))
    for ax, key, label in panels:
        y = np.asarray([r[key] for r in rows], dtype=float)
        ax.loglog(x, np.where(y > 0, y, np.nan), "o", color="C0")
        if np.all(y > 0):
            k, c = np.polyfit(np.log(x), np.log(y), 1)
            ax.loglog(x, np.exp(c) * x**k, "-", color="C1", label=f"slope {k:.2f}")
            ax.legend(frameon=False)
        ax.set_xlabel(xname)
        ax.set_ylabel(label)
        ax.set_xticks(x, [str(v) for v in xs])
        ax.xaxis.set_minor_locator(NullLocator())
        # Labels at 1, 2, 5 x 10^k: a scan may span less than a decade.
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed renders after the warm-up, per point")
    ap.add_argument("--threads", type=int, default=1, help="threads of icl's kernels")
    ap.add_argument("--no-plots", action="store_true", help="print the tables only")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        n, sources, ring = (int(v) for v in args.child.split(","))
        child(n, sources, bool(ring), args.repeat, args.threads)
        return 0

    load_before = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    det_rows, src_rows = [], []
    for n in DETECTORS:
        print(f"detector {n} ...", file=sys.stderr, flush=True)
        det_rows.append(measure(n, 1, False, args))
    for k in SOURCES:
        print(f"sources {k} ...", file=sys.stderr, flush=True)
        src_rows.append(measure(SOURCE_DETECTOR, k, True, args))
    print(table("Render against detector size (one point source at fixation)", "N (px per side)",
                DETECTORS, det_rows))
    print()
    print(table(f"Render against source count ({SOURCE_DETECTOR} x {SOURCE_DETECTOR} px, point sources on a "
                f"{RING_ARCMIN:g} arcmin circle)", "sources", SOURCES, src_rows))
    print()
    print(f"median of {args.repeat} renders after one warm-up, far-field cache cleared before each; "
          f"threads = {args.threads}; 3.2 mm pupil, 550 nm, 4 arcsec pixels")
    load_after = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}; {os.cpu_count()} cores")
    if not args.no_plots:
        img = ROOT / "docs" / "img"
        plot(img / "scaling_detector.png", "detector N (px per side)", DETECTORS, det_rows,
             "icl render: one point source, N x N detector")
        plot(img / "scaling_sources.png", "point sources", SOURCES, src_rows,
             f"icl render: {SOURCE_DETECTOR} x {SOURCE_DETECTOR} detector, "
             f"sources on a {RING_ARCMIN:g} arcmin circle")
        print(f"plots: {img / 'scaling_detector.png'}, {img / 'scaling_sources.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The 1024 x 1024 render of bench/peers.py timed alone, with no peer between its calls.

Inside the interleaved rounds of bench/peers.py every icl call follows a peer that has just used 50-750 MB
and, for the matrix-DFT peers, BLAS worker threads that keep spinning for a while after their last call
on the same two cores. This script times the same scene and the same call (far-field cache cleared before
each) on its own, and once more with a 480 MB allocation between calls (memory pressure without threads),
so the two effects can be told apart.

Run: python bench/render_alone.py [--calls 31] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=31)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from icl import _core
    from icl.optics import Detector, Pupil, Sampling, Scene, Source, render
    from icl.optics.render import psf_samples

    _core.set_num_threads(args.threads)
    scene = Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector(n=1024))
    load = os.getloadavg()
    print(f"load average before {load[0]:.2f}; threads {args.threads}; {args.calls} calls per column")
    print("| sampling | alone: median ms | min ms | after a 480 MB allocation: median ms |")
    print("|---|---|---|---|")
    for name, sampling in (("defaults", Sampling()), ("Sampling.fast()", Sampling.fast())):
        alone, pressed = [], []
        for _ in range(args.calls + 1):
            psf_samples.cache_clear()
            t = time.perf_counter()
            render(scene, sampling)
            alone.append(time.perf_counter() - t)
        for _ in range(args.calls):
            junk = np.ones(60_000_000)
            del junk
            psf_samples.cache_clear()
            t = time.perf_counter()
            render(scene, sampling)
            pressed.append(time.perf_counter() - t)
        alone = alone[1:]  # the first call plans and warms up
        print(
            f"| {name} | {1e3 * statistics.median(alone):.2f} | {1e3 * min(alone):.2f} | "
            f"{1e3 * statistics.median(pressed):.2f} |"
        )
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Navarro 1985 eye at 550 nm (3.2 mm entrance pupil): this tracer beside optiland.

Prints power, EFL and RMS spot at the paraxial focus from both, the RMS spot of both tracers on the same
ray sets (uniform square grid clipped to the pupil, hexapolar rings) at the paraxial and best focus, and
rays x surfaces per second for 1e4..1e7 rays (apertures, optical path and Fresnel weights on; optiland up to
1e6 rays). Timing: in one process, interleaved rounds (icl in place on 1 and 2 threads, icl returning new
arrays on 2 threads, optiland, then again), medians over the rounds, with the load average before and after:
the machine may be shared. Both tracers get their rays ready before the clock starts; optiland and icl's
in-place call overwrite them, icl's other call allocates and fills new output arrays.
Ray-surfaces count the surfaces each tracer goes through: 4 for icl (cornea to lens back), 5 for optiland
(the same 4 and the image plane), so the ray-surface ratio is 4/5 of the ratio of times for the same rays.
Run: python bench/raytrace_peers.py [--rounds 11]
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from icl._core_loader import core
from icl.eye import navarro_1985, paraxial, trace
from icl.eye.trace import TraceOptions
from icl.eye.wavefront import pupil_rays

warnings.filterwarnings("ignore")
LAM = 550.0


def icl_rays(n_rays):
    """The timed problem for icl: rays uniform on the pupil (seeded), the surfaces with clear apertures."""
    eye = navarro_1985()
    par = paraxial(eye, None, LAM)
    rng = np.random.default_rng(1)
    r = np.sqrt(rng.uniform(0, 1, n_rays)) * 1.6
    phi = rng.uniform(0, 2 * np.pi, n_rays)
    rays = pupil_rays(r * np.cos(phi), r * np.sin(phi), (0.0, 0.0), par.entrance_pupil_z)
    steps = [s.to_core() for s in eye.steps(LAM)]
    for st in steps:
        st.r_outer = 5.0  # clear apertures on
    return steps, rays, par


def ours(n_rays):
    """One trace returning new arrays: (seconds, output, paraxial data)."""
    steps, rays, par = icl_rays(n_rays)
    t0 = time.perf_counter()
    out = trace(steps, rays)
    return time.perf_counter() - t0, out, par


def optiland_eye():
    from icl.eye.media import NAVARRO_MEDIA
    from optiland.materials import IdealMaterial
    from optiland.optic import Optic

    e = navarro_1985()
    o = Optic()
    o.surfaces.add(index=0, radius=np.inf, thickness=np.inf)
    z_prev = 0.0
    par = paraxial(e, None, LAM)
    for i, (s, med) in enumerate(e.surfaces):
        nxt = e.surfaces[i + 1][0].offset if i + 1 < len(e.surfaces) else par.back_focal_z
        o.surfaces.add(index=i + 1, radius=s.radius, conic=s.conic, thickness=nxt - s.offset,
                       material=IdealMaterial(NAVARRO_MEDIA[med.name].index(LAM)), is_stop=(i == 2))
    o.surfaces.add(index=len(e.surfaces) + 1)
    o.set_aperture(aperture_type="EPD", value=3.2)
    o.fields.set_type(field_type="angle")
    o.fields.add(y=0)
    o.wavelengths.add(LAM / 1000, is_primary=True)
    return o, z_prev


def square_grid(n, radius=1.6):
    g = (np.arange(n) - (n - 1) / 2) * (2 * radius / n)
    u, v = np.meshgrid(g, g)
    keep = u * u + v * v <= radius * radius
    return u[keep], v[keep]


def hexapolar(rings, radius=1.6):
    u, v = [0.0], [0.0]
    for i in range(1, rings + 1):
        ph = np.arange(6 * i) * 2 * np.pi / (6 * i)
        u += list(radius * i / rings * np.cos(ph))
        v += list(radius * i / rings * np.sin(ph))
    return np.array(u), np.array(v)


def rms_about_centroid(x, y):
    return float(np.sqrt(np.mean((x - x.mean()) ** 2 + (y - y.mean()) ** 2))) * 1e3


def spot_definitions():
    """RMS spot (um) of both tracers on identical ray sets; ours also at the best focus."""
    eye = navarro_1985()
    par = paraxial(eye, None, LAM)
    o = None
    try:
        from optiland.rays import RealRays

        o, _ = optiland_eye()
    except ImportError:
        pass
    for name, (u, v) in (("square grid 801", square_grid(801)), ("hexapolar 32 rings", hexapolar(32))):
        out = trace(eye.steps(LAM), pupil_rays(u, v, (0.0, 0.0), par.entrance_pupil_z),
                    TraceOptions(apertures=False, fresnel=False))

        def at(z, out=out):
            t = (z - out.z) / out.n
            return rms_about_centroid(out.x + t * out.l, out.y + t * out.m)

        zs = par.back_focal_z + np.linspace(-0.3, 0.05, 701)
        rms = [at(z) for z in zs]
        best = int(np.argmin(rms))
        line = (f"{name:>20s}: icl paraxial focus {at(par.back_focal_z):.3f} um, "
                f"best focus {rms[best]:.3f} um ({(zs[best] - par.back_focal_z) * 1e3:+.1f} um)")
        if o is not None:
            n = u.size
            rr = RealRays(u, v, np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n), np.ones(n),
                          np.full(n, LAM / 1000))
            o.surfaces.trace(rr)
            rms_o = rms_about_centroid(np.asarray(rr.x), np.asarray(rr.y))
            line += f"; optiland paraxial focus {rms_o:.3f} um"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11, help="interleaved rounds (a quarter at 1e7 rays)")
    args = ap.parse_args()
    core.set_num_threads(2)
    spot_definitions()
    _, out, par = ours(200_000)
    n_vit = navarro_1985().surfaces[-1][1].index(LAM)
    a = out.flags == 0
    t = (par.back_focal_z - out.z[a]) / out.n[a]
    x, y = out.x[a] + t * out.l[a], out.y[a] + t * out.m[a]
    rms = np.sqrt(np.mean((x - x.mean()) ** 2 + (y - y.mean()) ** 2)) * 1e3
    print(f"icl:      power {par.power_d:.4f} D  EFL {par.efl_mm:.5f} mm  n_vit {n_vit:.5f}  "
          f"RMS spot at paraxial focus {rms:.3f} um (uniform random pupil)")
    try:
        from optiland.analysis import SpotDiagram

        o, _ = optiland_eye()
        p = o.paraxial
        spot = SpotDiagram(o, num_rings=32).rms_spot_radius()[0][0] * 1e3
        print(f"optiland: power {1000 / -p.f1():.4f} D  EFL {-p.f1():.5f} mm  "
              f"RMS spot at paraxial focus {spot:.3f} um "
              "(hexapolar, 32 rings)")
    except ImportError:
        o = None
        print("optiland not installed: pip install optiland", file=sys.stderr)
    speed(o, args.rounds)


def optiland_rays(n):
    """optiland's rays on the same pupil points as icl's."""
    from optiland.rays import RealRays

    rng = np.random.default_rng(1)
    r = np.sqrt(rng.uniform(0, 1, n)) * 1.6
    ph = rng.uniform(0, 2 * np.pi, n)
    return RealRays(r * np.cos(ph), r * np.sin(ph), np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n),
                    np.ones(n), np.full(n, LAM / 1000))


def speed(o, rounds):
    """Rays x surfaces per second of each contender, timed in interleaved rounds, with the load average.

    Each round prepares fresh rays for every contender (not timed), then times icl in place on 1 and 2
    threads, icl with new output arrays on 2 threads and optiland one after the other. Rates use the median
    time over the rounds; the ratios are the medians over rounds of optiland's time over icl's (2 threads,
    in place) in the same round.
    """
    print(f"speed (M ray-surfaces/s, medians of interleaved rounds; {os.cpu_count()} cores)")
    print("| rays | rounds | icl in place, 1 thread | icl in place, 2 threads | icl new arrays, 2 threads "
          "| optiland | ratio of ray-surfaces/s | ratio of times | load average before / after |")
    print("|---|---|---|---|---|---|---|---|---|")
    opts = TraceOptions()
    for n in (10_000, 100_000, 1_000_000, 10_000_000):
        nr = rounds if n <= 1_000_000 else max(2, rounds // 4)
        steps, rays, _ = icl_rays(n)
        times = {"1": [], "2": [], "new": [], "opt": []}
        load0 = os.getloadavg()[0]
        for _ in range(nr):
            for key, threads in (("1", 1), ("2", 2)):
                batch = rays.copy()
                core.set_num_threads(threads)
                t0 = time.perf_counter()
                trace(steps, batch, opts, in_place=True)
                times[key].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            trace(steps, rays, opts)
            times["new"].append(time.perf_counter() - t0)
            if o is not None and n <= 1_000_000:
                rr = optiland_rays(n)
                t0 = time.perf_counter()
                o.surfaces.trace(rr)
                times["opt"].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) if v else None for k, v in times.items()}
        row = (f"| {n:.0e} | {nr} | {4 * n / med['1'] / 1e6:.1f} | {4 * n / med['2'] / 1e6:.1f} | "
               f"{4 * n / med['new'] / 1e6:.1f} |")
        if times["opt"]:
            ratio = float(np.median([b / a for a, b in zip(times["2"], times["opt"], strict=True)]))
            row += f" {5 * n / med['opt'] / 1e6:.2f} | {ratio * 4 / 5:.1f}x | {ratio:.1f}x |"
        else:
            row += " - | - | - |"
        print(row + f" {load0:.2f} / {os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""Side-by-side render of one problem by icl and by other Fourier-optics codes.

The problem: a clear, aberration-free circular pupil of 3.2 mm at 550 nm, unit incident flux, imaged
onto an N x N detector (default 1024) of 4 arcsec pixels whose centres lie at
``(j - (N - 1) / 2) * pitch`` (DESIGN.md section 2), each pixel holding the flux integrated over its
area. Truth is the analytic pixel-integrated Airy pattern of ``tests/analytic.py``.

Every peer samples the pupil on icl's own grid for this problem (pupil pitch ``du`` and samples
``n``), so the accuracy differences come from how the pupil edge and the pixel integration are
treated, not from a coarser grid. The FFT peers sample the far field at every pixel, which for that
pupil pitch takes an FFT of length ``M = lambda / (du * pitch)``; icl samples it every ``q`` pixels
when the band allows (an FFT ``q`` times shorter) and integrates the pixels from those samples.

- ``numpy``, ``scipy``, ``pyfftw``: zero-padded M x M FFT of the pupil, its edge cells weighted by
  their area coverage (8 x 8 sub-cells); intensity sampled at the pixel centres and integrated over
  the pixel exactly by a sinc filter on the (periodic, band-limited) intensity spectrum.
- ``prysm``: matrix DFT (``focus_fixed_sampling``, method ``mdft``) of the same pupil straight onto
  the detector, ``Q x Q`` sub-samples per pixel summed (``--oversample``).
- ``hcipy``: ``FraunhoferPropagator`` onto a uniform focal grid with ``Q x Q`` sub-samples per pixel
  (a centred even grid: ``make_focal_grid`` always holds the origin, the detector does not), pupil
  from ``evaluate_supersampled`` (8 x 8).
- ``poppy``: ``CircularAperture`` in an ``OpticalSystem`` with a 4 arcsec, N-pixel detector,
  ``oversample = Q`` (its own gray-pixel aperture), sub-samples summed as above.

Sub-sampling a pixel Q x Q times is a midpoint rule: its error on the Airy pattern falls as Q^-2
(rel. L1 about 6e-3 at Q = 1, 4e-4 at Q = 4), so the default Q = 4 puts the window peers within a
factor of about two of icl's accuracy.

Each peer runs in a subprocess of its own: one warm-up call (reported as "first call"; it includes
FFTW planning and basis set-up), then ``--repeat`` timed calls whose median is reported, and the rise
of the process's peak resident memory (``ru_maxrss``) over its resident set just before the calls (C
and C++ allocations included, which tracemalloc would miss). A peer that cannot be imported or fails is
reported with its reason. "recorded flux" is the image's sum, to set against the analytic value printed
below the table: poppy normalises to its discrete (gray-pixel) pupil, not to the exact circle.

Usage::

    python bench/peers.py [--n 1024] [--repeat 5] [--oversample 4] [--threads 1] [--markdown]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DIAMETER_M = 3.2e-3
WAVELENGTH_M = 550e-9
PITCH_ARCSEC = 4.0
RAD_PER_ARCSEC = math.pi / (180.0 * 3600.0)
SUPERSAMPLE = 8  # sub-cells per pupil cell and axis for the area coverage of the edge cells
PEERS = ("icl", "icl-fft", "numpy", "scipy", "pyfftw", "prysm", "hcipy", "poppy")
METHODS = {
    "icl": "icl.optics.render, default Sampling (pruned FFT, far field every q px, exact pixel taps)",
    "icl-fft": "icl._core.psf_window alone: the FFTs icl performs for this render",
    "numpy": "numpy.fft M x M + sinc pixel filter",
    "scipy": "scipy.fft M x M + sinc pixel filter",
    "pyfftw": "pyfftw.builders M x M + sinc pixel filter",
    "prysm": "matrix DFT onto Q x Q sub-samples",
    "hcipy": "FraunhoferPropagator (matrix Fourier) onto Q x Q sub-samples",
    "poppy": "OpticalSystem + detector, MFT, oversample Q",
}
# Libraries that read these pick a kernel by hand; benchmarks must see the machine's own choice.
SCRUBBED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# ----------------------------------------------------------------------------- the shared grid

def icl_grid(n_det: int) -> dict:
    """icl's pupil pitch and samples for the problem (read from a render), and the peers' FFT length.

    icl may sample the far field every ``q`` pixels; the peers sample it at every pixel, so their FFT
    length for the same pupil pitch is ``M = lambda / (du * pitch)`` (= ``q`` times icl's).
    """
    from icl.optics import Detector, Pupil, Scene, Source, render

    res = render(Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector(n=n_det)))
    used = res.sampling["wavelengths_nm"]["550"]
    q = int(used.get("sample_step_px", 1))
    supports = res.sampling["support_samples"]
    support = supports[q] if isinstance(supports, dict) else supports
    du = used["pupil_pitch_um"] * 1e-6
    m = int(round(WAVELENGTH_M / (du * PITCH_ARCSEC * RAD_PER_ARCSEC)))
    return {"m": m, "du": WAVELENGTH_M / (m * PITCH_ARCSEC * RAD_PER_ARCSEC), "n": int(used["pupil_samples"]),
            "icl_m": int(used["fft_length"]), "icl_du": du, "q": q, "support": int(support)}


def coverage_pupil(n: int, du: float) -> np.ndarray:
    """Clear circular pupil on n x n cells of pitch du centred on cell n // 2, each cell weighted by the
    fraction of its area inside the circle (8 x 8 sub-cell count)."""
    r = DIAMETER_M / 2
    c = (np.arange(n) - n // 2) * du
    sub = ((np.arange(SUPERSAMPLE) + 0.5) / SUPERSAMPLE - 0.5) * du
    pts = (c[:, None] + sub[None, :]).ravel()  # every sub-cell centre along one axis
    inside = (pts[:, None] ** 2 + pts[None, :] ** 2) <= r * r
    return inside.reshape(n, SUPERSAMPLE, n, SUPERSAMPLE).mean(axis=(1, 3))


def _tilt(k: np.ndarray, m: int) -> np.ndarray:
    """Phase moving the far field by half a sample so that sample j sits at (j - M/2 + 1/2) pitches."""
    return np.exp(-1j * np.pi * k / m)


# ----------------------------------------------------------------------------- peers

def fft_peer(g: dict, n_det: int, fft2: Callable, rfft2: Callable, irfft2: Callable) -> np.ndarray:
    """Zero-padded M x M FFT, exact pixel integration by a sinc filter, crop to the detector."""
    m, n, du = g["m"], g["n"], g["du"]
    area = math.pi * DIAMETER_M**2 / 4
    k = np.arange(n) - n // 2
    t = _tilt(k, m)
    field = np.zeros((m, m), complex)
    lo = m // 2 - n // 2
    field[lo:lo + n, lo:lo + n] = coverage_pupil(n, du) * t[:, None] * t[None, :]
    far = fft2(np.fft.ifftshift(field))
    inten = (far.real**2 + far.imag**2) * (du * du / (m * m * area))
    # Intensity band is (n - 1) / M < 1/2 cycles per sample: the samples fix it, and integrating over a
    # pixel multiplies its spectrum by sinc(fx) sinc(fy) exactly.
    spec = rfft2(inten)
    spec *= np.sinc(np.fft.fftfreq(m))[:, None] * np.sinc(np.fft.rfftfreq(m))[None, :]
    pix = np.fft.fftshift(irfft2(spec, (m, m)))
    a = m // 2 - n_det // 2
    return np.ascontiguousarray(pix[a:a + n_det, a:a + n_det])


def bin_subsamples(img: np.ndarray, q: int) -> np.ndarray:
    """Sum q x q blocks of sub-sample fluxes into pixel fluxes."""
    n = img.shape[0] // q
    return img.reshape(n, q, n, q).sum(axis=(1, 3))


def make_runner(name: str, g: dict, n_det: int, q: int,
                threads: int) -> tuple[Callable[[], np.ndarray], dict]:
    """The timed callable of one peer and facts about it (planning time, versions)."""
    info: dict = {}
    if name in ("icl", "icl-fft"):
        import icl
        from icl import _core
        from icl.optics import Detector, Pupil, Scene, Source, render
        from icl.optics.render import psf_samples
        from icl.optics.thin import pupil_field

        _core.set_num_threads(threads)
        info["version"] = icl.__version__
        scene = Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector(n=n_det))
        if name == "icl":
            def run() -> np.ndarray:
                psf_samples.cache_clear()
                return render(scene).scene
            return run, info
        # The transform render() performs: icl's own pupil grid, FFT length and support window.
        pupil = pupil_field(scene.pupil, g["n"], g["icl_du"], WAVELENGTH_M)
        pupil = np.ascontiguousarray(pupil, dtype=complex)
        scale = g["icl_du"] ** 2 / (g["icl_m"] ** 2 * math.pi * DIAMETER_M**2 / 4)
        return (lambda: _core.psf_window(pupil, g["icl_m"], g["support"], scale)), info
    if name == "numpy":
        info["version"] = np.__version__
        return (lambda: fft_peer(g, n_det, np.fft.fft2, np.fft.rfft2, np.fft.irfft2)), info
    if name == "scipy":
        import scipy
        import scipy.fft as sf

        info["version"] = scipy.__version__
        return (lambda: fft_peer(g, n_det, lambda a: sf.fft2(a, workers=threads, overwrite_x=True),
                                 lambda a: sf.rfft2(a, workers=threads),
                                 lambda a, s: sf.irfft2(a, s, workers=threads, overwrite_x=True))), info
    if name == "pyfftw":
        import pyfftw
        import pyfftw.builders as fb

        info["version"] = pyfftw.__version__
        m = g["m"]
        # Same planner effort as icl (FFTW_ESTIMATE); planning is timed apart from the transforms.
        kw = {"threads": threads, "planner_effort": "FFTW_ESTIMATE", "avoid_copy": True}
        t0 = time.perf_counter()
        p_fwd = fb.fft2(pyfftw.empty_aligned((m, m), complex), **kw)
        p_r = fb.rfft2(pyfftw.empty_aligned((m, m), float), **kw)
        p_ir = fb.irfft2(pyfftw.empty_aligned((m, m // 2 + 1), complex), s=(m, m), **kw)
        info["plan_seconds"] = time.perf_counter() - t0
        return (lambda: fft_peer(g, n_det, p_fwd, p_r, lambda a, s: p_ir(a))), info
    if name == "prysm":
        import prysm
        from prysm.propagation import focus_fixed_sampling

        info["version"] = prysm.__version__
        efl_mm = 1000.0  # any focal length: the detector pitch is an angle, dx = efl * pitch

        def run() -> np.ndarray:
            n, du = g["n"], g["du"]
            # prysm's coordinates put the origin on sample n // 2, as coverage_pupil does.
            dx_out = PITCH_ARCSEC * RAD_PER_ARCSEC / q  # sub-sample pitch (rad)
            k = np.arange(n) - n // 2
            t = np.exp(-1j * np.pi * k * du * dx_out / WAVELENGTH_M)  # half a sub-sample: centres off-origin
            field = coverage_pupil(n, du) * t[:, None] * t[None, :]
            out = focus_fixed_sampling(field, du * 1e3, efl_mm, WAVELENGTH_M * 1e6, efl_mm * 1e3 * dx_out,
                                       n_det * q, method="mdft")
            # prysm's matrix DFT divides by (n * Q), Q = lambda / (n du dx): undo it for the physical scale.
            qq = WAVELENGTH_M / (n * du * dx_out)
            area = math.pi * DIAMETER_M**2 / 4
            flux = np.abs(out * (n * qq)) ** 2 * (du * du * dx_out / WAVELENGTH_M) ** 2 / area
            return bin_subsamples(flux, q)
        return run, info
    if name == "hcipy":
        import hcipy

        info["version"] = hcipy.__version__

        def run() -> np.ndarray:
            n, du = g["n"], g["du"]
            pupil_grid = hcipy.make_pupil_grid(n, n * du)
            aperture = hcipy.evaluate_supersampled(hcipy.make_circular_aperture(DIAMETER_M), pupil_grid,
                                                   SUPERSAMPLE)
            # focal_length 1: focal-plane metres are radians on the sky.
            focal_grid = hcipy.make_uniform_grid([n_det * q] * 2, n_det * PITCH_ARCSEC * RAD_PER_ARCSEC)
            prop = hcipy.FraunhoferPropagator(pupil_grid, focal_grid, focal_length=1.0)
            wf = prop(hcipy.Wavefront(aperture, WAVELENGTH_M))
            flux = np.asarray(wf.power).reshape(n_det * q, n_det * q) / (math.pi * DIAMETER_M**2 / 4)
            return bin_subsamples(flux, q)
        return run, info
    if name == "poppy":
        import astropy.units as u
        import poppy

        info["version"] = poppy.__version__

        def run() -> np.ndarray:
            osys = poppy.OpticalSystem(oversample=q, npix=g["n"], pupil_diameter=g["n"] * g["du"] * u.m)
            osys.add_pupil(poppy.CircularAperture(radius=DIAMETER_M / 2 * u.m))
            osys.add_detector(pixelscale=PITCH_ARCSEC, fov_pixels=n_det, oversample=q)
            # normalize="first": unit flux through the discrete entrance pupil; the result holds the
            # q x q sub-samples of each pixel (OpticalSystem does not rebin).
            hdul = osys.calc_psf(wavelength=WAVELENGTH_M, normalize="first")
            return bin_subsamples(np.asarray(hdul[0].data, dtype=float), q)
        return run, info
    raise ValueError(f"unknown peer {name!r}")


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(name: str, n_det: int, q: int, threads: int, repeat: int, grid: dict, out: str) -> None:
    """Run one peer, save its image to ``out`` and print a JSON summary on stdout."""
    import warnings

    warnings.simplefilter("ignore")  # peers' deprecation chatter is not part of the measurement
    run, info = make_runner(name, grid, n_det, q, threads)
    # Peak above the resident set before the calls (the high-water mark of imports may lie higher).
    base = _rss_bytes()
    t0 = time.perf_counter()
    img = run()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        img = run()
        times.append(time.perf_counter() - t0)
    peak = max(0, _peak_rss_bytes() - base)
    np.save(out, np.asarray(img, dtype=float))
    from threadpoolctl import threadpool_info

    pools = sorted({f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture', '-')})"
                    for p in threadpool_info() if p.get("user_api") == "blas"})
    print(json.dumps({"seconds": statistics.median(times), "times": times, "first": first,
                      "peak_mib": peak / 2**20, "blas": pools, **info}))


# ----------------------------------------------------------------------------- driver

def truth_image(n_det: int) -> np.ndarray:
    """Analytic pixel-integrated Airy pattern (tests/analytic.py) on the detector."""
    spec = importlib.util.spec_from_file_location("analytic", HERE.parent / "tests" / "analytic.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ax = (np.arange(n_det) - (n_det - 1) / 2) * PITCH_ARCSEC / 60.0
    return mod.airy_pixel_flux(ax, ax, PITCH_ARCSEC, WAVELENGTH_M, DIAMETER_M)


def run_peer(name: str, args: argparse.Namespace, grid: dict, tmp: Path) -> dict:
    """Run one peer in a fresh interpreter; return its summary or the reason it failed."""
    out = tmp / f"{name}.npy"
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(args.threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--n", str(args.n),
           "--oversample", str(args.oversample), "--threads", str(args.threads), "--repeat", str(args.repeat),
           "--grid", json.dumps(grid), "--out", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timed out after {args.timeout:g} s"}
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return {"status": "failed: " + (lines[-1] if lines else f"exit code {proc.returncode}")}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["status"] = "ok"
    res["image"] = np.load(out)
    return res


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="detector pixels per side")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls after the warm-up")
    ap.add_argument("--oversample", type=int, default=4, help="sub-samples per pixel and axis (window peers)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for every peer (FFTW, BLAS, scipy workers)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per peer")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--grid", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.oversample, args.threads, args.repeat, json.loads(args.grid), args.out)
        return 0

    names = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(names) - set(PEERS))
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    grid = icl_grid(args.n)
    truth = truth_image(args.n)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            results[name] = run_peer(name, args, grid, Path(tmp))
    for res in results.values():
        img = res.pop("image", None)
        if img is not None and img.shape == truth.shape:
            res["rel_l1"] = float(np.abs(img - truth).sum() / truth.sum())
            res["recorded"] = float(img.sum())
    ref = results.get("icl", {}).get("seconds")
    header = ["peer", "version", "method", "median s", "first call s", "peer/icl", "peak MiB", "rel. L1",
              "recorded flux", "status"]
    rows = []
    for name, res in results.items():
        ok = res["status"] == "ok"
        ratio = res["seconds"] / ref if ok and ref else None
        plan = f" (+{res['plan_seconds']:.3g} s planning)" if "plan_seconds" in res else ""
        rows.append([name, res.get("version", "-"), METHODS[name], _fmt(res.get("seconds"), ".3g"),
                     _fmt(res.get("first"), ".3g") + plan, _fmt(ratio, ".2f"),
                     _fmt(res.get("peak_mib"), ".0f"),
                     _fmt(res.get("rel_l1"), ".2e"), _fmt(res.get("recorded"), ".6f"), res["status"]])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    print()
    print(f"problem: {DIAMETER_M * 1e3:g} mm pupil, {WAVELENGTH_M * 1e9:g} nm, {args.n} x {args.n} px at "
          f"{PITCH_ARCSEC:g} arcsec, pixel-integrated, unit flux; pupil {grid['n']} samples at "
          f"{grid['du'] * 1e6:.4f} um; peers' FFT length M = {grid['m']}; icl: FFT length {grid['icl_m']}, "
          f"far field every {grid['q']} px, support {grid['support']}; Q = {args.oversample}; "
          f"threads = {args.threads}; "
          f"median of {args.repeat} after one warm-up; analytic recorded flux {truth.sum():.6f}")
    icl_s, fft_s = results.get("icl", {}).get("seconds"), results.get("icl-fft", {}).get("seconds")
    if icl_s and fft_s:
        print(f"icl total / its own FFTs (psf_window): {icl_s / fft_s:.2f}")
    blas = sorted({b for res in results.values() for b in res.get("blas", [])})
    print("BLAS kernels (threadpoolctl): " + ("; ".join(blas) if blas else "none loaded"))
    scrubbed = [v for v in SCRUBBED_ENV if v in os.environ]
    if scrubbed:
        print("unset for the peer runs: " + ", ".join(scrubbed))
    return 0


if __name__ == "__main__":
    sys.exit(main())

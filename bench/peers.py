"""Side-by-side render of one problem by icl and by other Fourier-optics codes, timed in interleaved rounds.

The problem: a clear, aberration-free circular pupil of 3.2 mm at 550 nm, unit incident flux, imaged
onto an N x N detector (default 1024) of 4 arcsec pixels whose centres lie at
``(j - (N - 1) / 2) * pitch`` (docs/conventions.md), each pixel holding the flux integrated over its
area. Truth is the analytic pixel-integrated Airy pattern of ``tests/analytic.py``.

Two sets of contenders:

**Matched accuracy.** Every peer samples the pupil on icl's own grid for this problem (pupil pitch ``du``
and samples ``n``), so the accuracy differences come from how the pupil edge and the pixel integration are
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

**Each peer at its own fastest setting** (names ending in ``-fast``): its minimal pupil sampling, 256
samples across the pupil with its own aperture function (prysm ``geometry.circle``, hcipy's
``make_circular_aperture`` without super-sampling, poppy's gray pixels at ``npix = 256``; the FFT peers a
binary disk on the grid of the shortest fast FFT whose pupil pitch gives at least 256 samples), and the
intensity at the pixel centres (no pixel integration). icl runs at its defaults in both tables; the second
table also holds ``icl-fast``, icl at its own coarser preset ``Sampling.fast()`` (a relative L1 of 1e-3 is
its target: FFT period 1.5 times the support window, 1e-6 pixel taps; docs/convergence.md),
``icl-fast-fft``, the transforms of that render alone, and two parts of what it must do besides them:
``icl-fast-pupil``, the pupil field it builds, and ``image-write``, a new 1024 x 1024 float64 image written
once (the least any renderer returning a fresh image does). The last line of the output sets their sum
against the transforms: the least that the render's ratio to its own FFTs could be.

Timing: every contender runs in this one process (``--threads`` threads for FFTW, BLAS, OpenMP, scipy
workers and icl), is called once to warm up (reported as "first call"; FFTW planning, basis set-up; its
image gives the error), then ``--rounds`` rounds call the contenders one after the other, each round
starting one contender later (A B C, B C A, C A B, ...), so that the load of a shared machine hits them
alike and what one call leaves behind does not always fall on the same next contender. Reported: the median over rounds, and the
ratio to icl as the median of the per-round ratios. The load average is printed before and after.

Memory: each contender also runs once in a subprocess of its own (skip with ``--no-memory``); the peak
resident memory rise (VmHWM of the subprocess) over the resident set just before the call counts C and C++
allocations, which tracemalloc would miss. A contender that cannot be imported or fails is reported with
its reason. "recorded flux" is the image's sum, to set against the analytic value printed below the
table: poppy normalises to its discrete (gray-pixel) pupil, not to the exact circle.

Usage::

    python bench/peers.py [--n 1024] [--rounds 11] [--oversample 4] [--threads 1] [--peers icl,numpy,...]
                          [--no-memory] [--markdown]
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
import time
from collections.abc import Callable
from pathlib import Path

# Libraries that read these pick a kernel by hand; benchmarks must see the machine's own choice. They are
# read when the libraries load, so the script restarts itself without them.
SCRUBBED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(v in os.environ for v in SCRUBBED_ENV):
    os.execve(sys.executable, [sys.executable, *sys.argv],
              {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV} | {"ICL_PEERS_SCRUBBED": "1"})

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
DIAMETER_M = 3.2e-3
WAVELENGTH_M = 550e-9
PITCH_ARCSEC = 4.0
RAD_PER_ARCSEC = math.pi / (180.0 * 3600.0)
SUPERSAMPLE = 8  # sub-cells per pupil cell and axis for the area coverage of the edge cells
MATCHED = ("icl", "icl-fft", "numpy", "scipy", "pyfftw", "prysm", "hcipy", "poppy")
FAST = ("icl-fast", "icl-fast-fft", "icl-fast-pupil", "image-write", "numpy-fast", "scipy-fast", "pyfftw-fast", "prysm-fast", "hcipy-fast",
        "poppy-fast")
PEERS = MATCHED + FAST
FAST_SAMPLES = 256  # pupil samples across the diameter at the peers' fastest setting
METHODS = {
    "icl": "icl.optics.render, default Sampling (pruned FFT, far field every q px, exact pixel taps)",
    "icl-fft": "icl._core.psf_window alone: the FFTs icl performs for this render (same precision)",
    "icl-fast": "icl.optics.render, Sampling.fast() (its 1e-3 preset: shorter FFT period, 1e-6 taps)",
    "icl-fast-fft": "icl._core.psf_window alone: the FFTs of the Sampling.fast() render",
    "icl-fast-pupil": "icl.optics.render.far_field_pupil alone: the pupil the Sampling.fast() render builds",
    "image-write": "numpy.full: a new n x n float64 image written once",
    "numpy": "numpy.fft M x M + sinc pixel filter",
    "scipy": "scipy.fft M x M + sinc pixel filter",
    "pyfftw": "pyfftw.builders M x M + sinc pixel filter",
    "prysm": "matrix DFT onto Q x Q sub-samples",
    "hcipy": "FraunhoferPropagator (matrix Fourier) onto Q x Q sub-samples",
    "poppy": "OpticalSystem + detector, MFT, oversample Q",
    "numpy-fast": "numpy.fft, binary disk, 256+ samples, pixel centres",
    "scipy-fast": "scipy.fft, binary disk, 256+ samples, pixel centres",
    "pyfftw-fast": "pyfftw.builders, binary disk, 256+ samples, pixel centres",
    "prysm-fast": "matrix DFT, geometry.circle on 256 samples, pixel centres",
    "hcipy-fast": "FraunhoferPropagator, circular aperture on 256 samples, pixel centres",
    "poppy-fast": "OpticalSystem, npix 256, oversample 1",
}


# ----------------------------------------------------------------------------- the shared grid

def icl_grid(n_det: int, fast: bool = False) -> dict:
    """icl's pupil pitch and samples for the problem (read from a render), and the peers' FFT length.

    icl may sample the far field every ``q`` pixels; the peers sample it at every pixel, so their FFT
    length for the same pupil pitch is ``M = lambda / (du * pitch)`` (= ``q`` times icl's). ``fast``: the
    grid of icl's ``Sampling.fast()`` preset instead of its defaults.
    """
    from icl.optics import Detector, Pupil, Sampling, Scene, Source, render

    sampling = Sampling.fast() if fast else Sampling()
    res = render(Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector(n=n_det)), sampling)
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


def fast_fft_grid() -> tuple[int, float, int]:
    """The FFT peers' fastest grid: the shortest fast length M whose pupil pitch ``lambda / (M pitch)``
    puts at least FAST_SAMPLES samples across the pupil; returns (M, du, samples on the pupil grid)."""
    from scipy.fft import next_fast_len

    pitch = PITCH_ARCSEC * RAD_PER_ARCSEC
    m = next_fast_len(math.ceil(FAST_SAMPLES * WAVELENGTH_M / (DIAMETER_M * pitch)))
    du = WAVELENGTH_M / (m * pitch)
    return m, du, math.ceil(DIAMETER_M / du) + 1


def fast_fft_peer(n_det: int, fft2: Callable, m: int, du: float, n: int) -> np.ndarray:
    """Binary disk on the M x M grid, one FFT, the intensity at the pixel centres (half a sample off the
    FFT's own grid: a tilt), cropped to the detector; no pixel integration."""
    area = math.pi * DIAMETER_M**2 / 4
    k = np.arange(n) - n // 2
    c = k * du
    disk = (c[:, None] ** 2 + c[None, :] ** 2) <= (DIAMETER_M / 2) ** 2
    t = _tilt(k, m)
    field = np.zeros((m, m), complex)
    lo = m // 2 - n // 2
    field[lo:lo + n, lo:lo + n] = disk * t[:, None] * t[None, :]
    far = np.fft.fftshift(fft2(np.fft.ifftshift(field)))
    a = m // 2 - n_det // 2
    far = far[a:a + n_det, a:a + n_det]
    # Intensity per pixel: I(theta) * pitch^2 with the pupil's samples standing for du^2 each.
    return (far.real**2 + far.imag**2) * (du * du / (m * m * area))


def make_fast_runner(name: str, n_det: int, threads: int) -> tuple[Callable[[], np.ndarray], dict]:
    """A peer at its own fastest setting: minimal pupil sampling and pixel centres."""
    info: dict = {}
    base = name.removesuffix("-fast")
    if base in ("numpy", "scipy", "pyfftw"):
        m, du, n = fast_fft_grid()
        info["grid"] = f"M = {m}, {n} pupil samples"
        if base == "numpy":
            info["version"] = np.__version__
            return (lambda: fast_fft_peer(n_det, np.fft.fft2, m, du, n)), info
        if base == "scipy":
            import scipy
            import scipy.fft as sf

            info["version"] = scipy.__version__
            fft2 = lambda a: sf.fft2(a, workers=threads, overwrite_x=True)  # noqa: E731
            return (lambda: fast_fft_peer(n_det, fft2, m, du, n)), info
        import pyfftw
        import pyfftw.builders as fb

        info["version"] = pyfftw.__version__
        t0 = time.perf_counter()
        plan = fb.fft2(pyfftw.empty_aligned((m, m), complex), threads=threads, planner_effort="FFTW_ESTIMATE",
                       avoid_copy=True)
        info["plan_seconds"] = time.perf_counter() - t0
        return (lambda: fast_fft_peer(n_det, plan, m, du, n)), info
    pitch = PITCH_ARCSEC * RAD_PER_ARCSEC
    area = math.pi * DIAMETER_M**2 / 4
    n, du = FAST_SAMPLES, DIAMETER_M / FAST_SAMPLES
    if base == "prysm":
        import prysm
        from prysm.coordinates import cart_to_polar, make_xy_grid
        from prysm.geometry import circle
        from prysm.propagation import focus_fixed_sampling

        info["version"] = prysm.__version__
        efl_mm = 1000.0

        def run() -> np.ndarray:
            x, y = make_xy_grid(n, diameter=DIAMETER_M * 1e3)
            r, _ = cart_to_polar(x, y)
            k = np.arange(n) - n // 2
            t = np.exp(-1j * np.pi * k * du * pitch / WAVELENGTH_M)  # pixel centres lie off the origin
            field = circle(DIAMETER_M * 1e3 / 2, r) * t[:, None] * t[None, :]
            out = focus_fixed_sampling(field, du * 1e3, efl_mm, WAVELENGTH_M * 1e6, efl_mm * 1e3 * pitch,
                                       n_det, method="mdft")
            qq = WAVELENGTH_M / (n * du * pitch)
            return np.abs(out * (n * qq)) ** 2 * (du * du * pitch / WAVELENGTH_M) ** 2 / area
        return run, info
    if base == "hcipy":
        import hcipy

        info["version"] = hcipy.__version__

        def run() -> np.ndarray:
            pupil_grid = hcipy.make_pupil_grid(n, DIAMETER_M)
            aperture = hcipy.make_circular_aperture(DIAMETER_M)(pupil_grid)
            focal_grid = hcipy.make_uniform_grid([n_det] * 2, n_det * pitch)
            prop = hcipy.FraunhoferPropagator(pupil_grid, focal_grid, focal_length=1.0)
            wf = prop(hcipy.Wavefront(aperture, WAVELENGTH_M))
            return np.asarray(wf.power).reshape(n_det, n_det) / area
        return run, info
    if base == "poppy":
        import astropy.units as u
        import poppy

        info["version"] = poppy.__version__

        def run() -> np.ndarray:
            osys = poppy.OpticalSystem(oversample=1, npix=n, pupil_diameter=DIAMETER_M * u.m)
            osys.add_pupil(poppy.CircularAperture(radius=DIAMETER_M / 2 * u.m))
            osys.add_detector(pixelscale=PITCH_ARCSEC, fov_pixels=n_det, oversample=1)
            hdul = osys.calc_psf(wavelength=WAVELENGTH_M, normalize="first")
            return np.asarray(hdul[0].data, dtype=float)
        return run, info
    raise ValueError(f"unknown peer {name!r}")


def make_runner(name: str, g: dict, n_det: int, q: int,
                threads: int) -> tuple[Callable[[], np.ndarray], dict]:
    """The timed callable of one contender and facts about it (planning time, versions)."""
    if name.endswith("-fast") and not name.startswith("icl"):
        return make_fast_runner(name, n_det, threads)
    info: dict = {}
    if name == "image-write":
        info["version"] = np.__version__
        return (lambda: np.full((n_det, n_det), 1.0)), info
    if name.startswith("icl"):
        import icl
        from icl import _core
        from icl.optics import Detector, Pupil, Scene, Source, render
        from icl.optics.render import psf_samples
        from icl.optics.thin import pupil_field

        _core.set_num_threads(threads)
        info["version"] = icl.__version__
        from icl.optics import Sampling

        scene = Scene((Source(),), Pupil(eye_excess_d=0.0, icl=None), Detector(n=n_det))
        sampling = Sampling.fast() if name.startswith("icl-fast") else Sampling()
        if name in ("icl", "icl-fast"):
            def run() -> np.ndarray:
                psf_samples.cache_clear()
                return render(scene, sampling).scene
            return run, info
        if name == "icl-fast-pupil":
            from icl.optics.render import far_field_pupil
            from icl.optics.sampling import make_grid

            gf = g["fast"]
            grid = make_grid(WAVELENGTH_M, gf["q"] * PITCH_ARCSEC * RAD_PER_ARCSEC, DIAMETER_M, gf["support"],
                             sampling)
            return (lambda: far_field_pupil(scene.pupil, grid, WAVELENGTH_M, gf["support"])), info
        # The transform render() performs: icl's own pupil grid, FFT length, support window and precision.
        if name == "icl-fast-fft":
            g = g["fast"]
        pupil = pupil_field(scene.pupil, g["n"], g["icl_du"], WAVELENGTH_M)
        pupil = np.ascontiguousarray(pupil, dtype=complex)
        scale = g["icl_du"] ** 2 / (g["icl_m"] ** 2 * math.pi * DIAMETER_M**2 / 4)
        single = sampling.single_precision_fft
        return (lambda: _core.psf_window(pupil, g["icl_m"], g["support"], scale, single)), info
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
    # The high-water mark of this process image (VmHWM): ru_maxrss would keep the parent's peak across the
    # fork and exec that started this subprocess.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(name: str, n_det: int, q: int, threads: int, grid: dict) -> None:
    """Run one contender once and print its peak memory rise as JSON on stdout."""
    import warnings

    warnings.simplefilter("ignore")  # peers' deprecation chatter is not part of the measurement
    run, _ = make_runner(name, grid, n_det, q, threads)
    base = _rss_bytes()  # peak above the resident set before the call (imports may have peaked higher)
    run()
    print(json.dumps({"peak_mib": max(0, _peak_rss_bytes() - base) / 2**20}))


# ----------------------------------------------------------------------------- driver

def truth_image(n_det: int) -> np.ndarray:
    """Analytic pixel-integrated Airy pattern (tests/analytic.py) on the detector."""
    spec = importlib.util.spec_from_file_location("analytic", HERE.parent / "tests" / "analytic.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ax = (np.arange(n_det) - (n_det - 1) / 2) * PITCH_ARCSEC / 60.0
    return mod.airy_pixel_flux(ax, ax, PITCH_ARCSEC, WAVELENGTH_M, DIAMETER_M)


def thread_env(threads: int) -> dict:
    """Environment limiting OpenMP and BLAS to ``threads`` threads."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(threads)
    return env


def peak_memory(name: str, args: argparse.Namespace, grid: dict) -> float | None:
    """Peak resident memory rise (MiB) of one call in a fresh interpreter, or None if it failed."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--n", str(args.n),
           "--oversample", str(args.oversample), "--threads", str(args.threads), "--grid", json.dumps(grid)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(args.threads),
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["peak_mib"]


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def interleaved(runners: dict[str, Callable[[], np.ndarray]], rounds: int) -> dict[str, list[float]]:
    """Call every runner once per round; the seconds of each call.

    Round r starts at the r-th contender (A B C, B C A, C A B, ...): what a call leaves behind (a BLAS pool's
    threads still spinning on both cores for about 0.1 s, a heap handed back to the system) then falls on a
    different next contender each round instead of always on the same one.
    """
    times: dict[str, list[float]] = {name: [] for name in runners}
    order = list(runners)
    for r in range(rounds):
        k = r % len(order)
        for name in order[k:] + order[:k]:
            t0 = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def table(names: list[str], results: dict, times: dict, markdown: bool) -> None:
    """One table of contenders: median time, ratio to icl (median of per-round ratios), memory, error."""
    ref = times.get("icl")
    header = ["contender", "version", "method", "median s", "p10-p90 s", "first call s", "vs icl",
              "peak MiB", "rel. L1", "recorded flux", "status"]
    rows = []
    for name in names:
        res = results[name]
        ts = times.get(name)
        ok = res["status"] == "ok" and ts
        ratio = statistics.median(t / r for t, r in zip(ts, ref, strict=True)) if ok and ref else None
        spread = (f"{np.percentile(ts, 10):.3g}-{np.percentile(ts, 90):.3g}" if ok else "-")
        plan = f" (+{res['plan_seconds']:.3g} s planning)" if "plan_seconds" in res else ""
        method = METHODS[name] + (f" ({res['grid']})" if "grid" in res else "")
        median = statistics.median(ts) if ok else None
        rows.append([name, res.get("version", "-"), method, _fmt(median, ".3g"), spread,
                     _fmt(res.get("first"), ".3g") + plan, _fmt(ratio, ".2f"),
                     _fmt(res.get("peak_mib"), ".0f"), _fmt(res.get("rel_l1"), ".2e"),
                     _fmt(res.get("recorded"), ".6f"), res["status"]])
    if markdown:
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024, help="detector pixels per side")
    ap.add_argument("--rounds", type=int, default=11, help="interleaved timing rounds after the warm-up")
    ap.add_argument("--oversample", type=int, default=4, help="sub-samples per pixel and axis (window peers)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads for every contender (FFTW, BLAS, OpenMP, scipy workers, icl)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per memory subprocess")
    ap.add_argument("--no-memory", action="store_true", help="skip the per-contender memory subprocesses")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--grid", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.oversample, args.threads, json.loads(args.grid))
        return 0

    names = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(names) - set(PEERS))
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    import warnings

    from threadpoolctl import threadpool_info, threadpool_limits

    warnings.simplefilter("ignore")  # peers' deprecation chatter is not part of the measurement
    threadpool_limits(args.threads)
    grid = icl_grid(args.n)
    grid["fast"] = icl_grid(args.n, fast=True)
    truth = truth_image(args.n)
    results: dict[str, dict] = {}
    runners: dict[str, Callable[[], np.ndarray]] = {}
    for name in names:
        print(f"setting up {name} ...", file=sys.stderr, flush=True)
        try:
            run, info = make_runner(name, grid, args.n, 1 if name.endswith("-fast") else args.oversample,
                                    args.threads)
            if name == "icl-fast-fft":
                info["grid"] = (f"FFT length {grid['fast']['icl_m']}, {grid['fast']['n']} pupil samples, "
                                f"support {grid['fast']['support']}")
            t0 = time.perf_counter()
            img = np.asarray(run(), dtype=float)
            info["first"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
            results[name] = {"status": f"failed: {type(exc).__name__}: {exc}"[:120]}
            continue
        info["status"] = "ok"
        if img.shape == truth.shape and name != "image-write":  # not an image of the problem
            info["rel_l1"] = float(np.abs(img - truth).sum() / truth.sum())
            info["recorded"] = float(img.sum())
        results[name] = info
        runners[name] = run
    load_before = _load()
    t_start = time.perf_counter()
    times = interleaved(runners, args.rounds)
    wall = time.perf_counter() - t_start
    load_after = _load()
    if not args.no_memory:
        for name in runners:
            print(f"memory of {name} ...", file=sys.stderr, flush=True)
            results[name]["peak_mib"] = peak_memory(name, args, grid)

    print(f"load average (1, 5, 15 min) before the rounds {load_before}, after {load_after}; "
          f"{os.cpu_count()} cores; {args.rounds} interleaved rounds in {wall:.0f} s; "
          f"threads = {args.threads}")
    print()
    matched = [n for n in names if n in MATCHED]
    fast = [n for n in names if n in FAST]
    if matched:
        print(f"At matched accuracy (every peer on icl's pupil grid, Q = {args.oversample}):")
        table(matched, results, times, args.markdown)
    if fast:
        print("Each peer at its own fastest setting (256 pupil samples, pixel centres), icl at its defaults:")
        table((["icl"] if "icl" in names else []) + fast, results, times, args.markdown)
    print(f"problem: {DIAMETER_M * 1e3:g} mm pupil, {WAVELENGTH_M * 1e9:g} nm, {args.n} x {args.n} px at "
          f"{PITCH_ARCSEC:g} arcsec, pixel-integrated, unit flux; pupil {grid['n']} samples at "
          f"{grid['du'] * 1e6:.4f} um; peers' FFT length M = {grid['m']}; icl: FFT length {grid['icl_m']}, "
          f"far field every {grid['q']} px, support {grid['support']} (Sampling.fast(): FFT length "
          f"{grid['fast']['icl_m']}, {grid['fast']['n']} pupil samples, support {grid['fast']['support']}); "
          f"Q = {args.oversample}; "
          f"analytic recorded flux {truth.sum():.6f}")
    for total, ffts in (("icl", "icl-fft"), ("icl-fast", "icl-fast-fft")):
        icl_t, fft_t = times.get(total), times.get(ffts)
        if icl_t and fft_t:
            print(f"{total} total / its own FFTs ({ffts}), median of per-round ratios: "
                  f"{statistics.median(a / b for a, b in zip(icl_t, fft_t, strict=True)):.2f}")
    parts = [times.get(k) for k in ("icl-fast-fft", "icl-fast-pupil", "image-write")]
    if all(parts):
        floor = statistics.median((f + p + w) / f for f, p, w in zip(*parts, strict=True))
        print(f"(FFTs + pupil + image write) / FFTs of the Sampling.fast() render, median of per-round ratios: "
              f"{floor:.2f} (no pixel integration at all)")
    blas = sorted({f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture', '-')})"
                   for p in threadpool_info() if p.get("user_api") == "blas"})
    print("BLAS kernels (threadpoolctl): " + ("; ".join(blas) if blas else "none loaded"))
    if os.environ.get("ICL_PEERS_SCRUBBED"):
        print("restarted without " + ", ".join(SCRUBBED_ENV) + " (set in the calling environment)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

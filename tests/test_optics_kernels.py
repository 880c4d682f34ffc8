"""Each C++ kernel against its plain NumPy twin (tests/twins.py) and against exact geometry."""

import math

import numpy as np
import pytest
import twins
from icl import _core

# Kernel vs twin: the same arithmetic in a different order, so agreement is limited by rounding
# accumulated over at most ~1e6 terms: 1e-10 relative leaves four orders of magnitude of margin.
RTOL_TWIN = 1e-10


@pytest.mark.parametrize(
    "cx,cy,r",
    [(0.0, 0.0, 1.6e-3), (0.05e-3, -0.03e-3, 0.18e-3), (1e-5, 3e-5, 3.0e-3)],
    ids=["pupil", "decentred-hole", "zone"],
)
def test_disk_coverage_matches_twin_and_sums_to_the_exact_area(cx, cy, r):
    du = 2 * r / 250
    n = 2 * math.ceil((max(abs(cx), abs(cy)) + r) / du) + 5  # the grid holds the whole disk
    cov = _core.disk_coverage(cx, cy, r, n, du)
    np.testing.assert_allclose(cov, twins.disk_coverage(cx, cy, r, n, du), rtol=0, atol=RTOL_TWIN)
    # Cell areas of an exact partition add up to the disk's area (only rounding remains).
    assert cov.sum() * du * du == pytest.approx(math.pi * r * r, rel=1e-12)
    assert cov.min() >= 0.0 and cov.max() <= 1.0


def test_disk_rect_area_against_independent_quadrature():
    # A cell cut by the edge in many ways. The midpoint quadrature twin errs by O(h^1.5) where the
    # chord has a square-root tangent point (h = du / n): 3 h^1.5 bounds it with margin.
    rng = np.random.default_rng(7)
    r, du, n = 1.0, 0.3, 40000
    for _ in range(20):
        x, y = rng.uniform(-1.1, 1.1, 2)
        exact = _core.disk_coverage(-x, -y, r, 1, du)[0, 0] * du * du
        approx = twins.disk_rect_area(-x, -y, r, -du / 2, du / 2, -du / 2, du / 2, n=n)
        assert exact == pytest.approx(approx, abs=3 * (du / n) ** 1.5)


@pytest.mark.parametrize(
    "cx,cy,r,n",
    [
        (0.0, 0.0, 1.6e-3, 48),
        (0.05e-3, -0.03e-3, 0.18e-3, 48),
        (1e-5, 3e-5, 3.0e-3, 48),
        (1.2e-3, 0.4e-3, 1.0e-3, 40),
    ],
    ids=["pupil", "decentred-hole", "zone-beyond-grid", "disk-off-edge"],
)
def test_disk_coverage_filtered_matches_twin(cx, cy, r, n):
    # The kernel sums explicitly only where a filter window meets the rim (prefix sums of the taps on the
    # 1s); the twin is the direct sum on the whole fine grid.
    from icl.optics.sampling import edge_filter

    edge = edge_filter()
    du = 3.4e-3 / n
    before = _core.num_threads()
    try:
        got = []
        for threads in (1, 2):
            _core.set_num_threads(threads)
            got.append(_core.disk_coverage_filtered(cx, cy, r, n, du, list(edge.taps), edge.sub))
    finally:
        _core.set_num_threads(before)
    assert np.array_equal(got[0], got[1])
    want = twins.disk_coverage_filtered(cx, cy, r, n, du, edge.taps, edge.sub)
    np.testing.assert_allclose(got[0], want, rtol=0, atol=RTOL_TWIN)


def test_disk_coverage_filtered_keeps_the_area():
    # Unit-sum taps on a grid that holds the filtered rim: the coverage still sums to the disk's area.
    from icl.optics.sampling import edge_filter

    edge = edge_filter()
    r, n = 1.0e-3, 60
    du = 2 * r / (n - 2 * edge.spread - 4)
    cov = _core.disk_coverage_filtered(2e-6, -1e-6, r, n, du, list(edge.taps), edge.sub)
    assert cov.sum() * du * du == pytest.approx(math.pi * r * r, rel=1e-12)


def _params(**kw):
    p = _core.PupilParams()
    for k, v in kw.items():
        setattr(p, k, v)
    return p


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"hole_diameter": 0.36e-3},
        {"hole_diameter": 0.36e-3, "hole": _core.HoleMode.black, "dec_u": 0.15e-3, "dec_v": 0.1e-3},
        {"hole_diameter": 0.36e-3, "hole": _core.HoleMode.index_matched, "cyl_power": 0.35, "cyl_axis": 0.35},
        {"icl_present": False, "eye_excess": 0.0, "tilt_u": 1e-3},
        {"pupil_diameter": 4.8e-3, "optic_zone_diameter": 4.0e-3, "icl_power": -7.5},
    ],
    ids=["default", "clear-hole", "black-decentred", "index-matched-cyl", "no-icl-tilt", "zone-edge"],
)
def test_build_pupil_matches_twin(kw):
    p = _params(**kw)
    n, du, lam = 181, 2.8e-5, 550e-9
    got = _core.build_pupil(p, n, du, lam)
    want = twins.build_pupil(p, n, du, lam)
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL_TWIN)


@pytest.mark.parametrize(
    "kw",
    [
        {"icl_present": False, "eye_excess": 3.0, "tilt_v": -1e-3},
        {"hole_diameter": 0.36e-3, "hole": _core.HoleMode.black, "dec_u": 0.15e-3, "cyl_power": 0.35,
         "cyl_axis": 0.35},
    ],
    ids=["no-icl", "black-hole-cyl"],
)
def test_build_pupil_with_edge_filter_matches_twin(kw):
    from icl.optics.sampling import edge_filter

    edge = edge_filter()
    p = _params(**kw, edge_taps=list(edge.taps), edge_sub=edge.sub)
    n, du, lam = 72, 5.4e-5, 550e-9
    np.testing.assert_allclose(
        _core.build_pupil(p, n, du, lam), twins.build_pupil(p, n, du, lam), rtol=0, atol=RTOL_TWIN
    )


def test_psf_window_matches_full_fft():
    rng = np.random.default_rng(1)
    pupil = rng.normal(size=(37, 37)) + 1j * rng.normal(size=(37, 37))
    for m, s in [(128, 64), (105, 105), (96, 40)]:
        got = _core.psf_window(pupil, m, s, 0.5)
        want = twins.psf_window(pupil, m, s, 0.5)
        np.testing.assert_allclose(got, want, rtol=RTOL_TWIN, atol=RTOL_TWIN * want.max())


def test_psf_window_single_precision_matches_full_fft():
    # Single-precision transforms: float rounding (about 1e-7 of the peak), the same bits for any thread
    # count.
    rng = np.random.default_rng(9)
    pupil = rng.normal(size=(60, 60)) + 1j * rng.normal(size=(60, 60))
    before = _core.num_threads()
    try:
        got = []
        for threads in (1, 2):
            _core.set_num_threads(threads)
            got.append(_core.psf_window(pupil, 256, 200, 0.5, True))
    finally:
        _core.set_num_threads(before)
    assert np.array_equal(got[0], got[1])
    want = twins.psf_window(pupil, 256, 200, 0.5)
    np.testing.assert_allclose(got[0], want, rtol=0, atol=2e-6 * want.max())
    assert not np.allclose(got[0], want, rtol=0, atol=1e-10 * want.max())  # it did run in single precision


def test_psf_window_parseval():
    # The full period of |FFT|^2 holds m^2 times the pupil energy (Parseval), to rounding.
    rng = np.random.default_rng(2)
    pupil = rng.normal(size=(50, 50)) + 1j * rng.normal(size=(50, 50))
    m = 160
    full = _core.psf_window(pupil, m, m, 1.0 / m**2)
    assert full.sum() == pytest.approx(np.sum(np.abs(pupil) ** 2), rel=1e-12)


def test_threads_do_not_change_bits():
    rng = np.random.default_rng(3)
    pupil = rng.normal(size=(70, 70)) + 1j * rng.normal(size=(70, 70))
    before = _core.num_threads()
    try:
        _core.set_num_threads(1)
        a = _core.psf_window(pupil, 256, 200, 1.0)
        _core.set_num_threads(2)
        b = _core.psf_window(pupil, 256, 200, 1.0)
    finally:
        _core.set_num_threads(before)
    assert np.array_equal(a, b)


def test_place_separable_matches_twin():
    rng = np.random.default_rng(4)
    s = rng.random((40, 50))
    ty, tx = rng.normal(size=7), rng.normal(size=5)
    for r0, c0 in [(0, 0), (-5, 3), (30, 44), (-20, -20)]:
        got = _core.place_separable(s, ty, tx, r0, c0, 25, 31)
        np.testing.assert_allclose(got, twins.place_separable(s, ty, tx, r0, c0, 25, 31), rtol=0, atol=1e-12)


def test_convolve_linear_matches_twin_without_wraparound():
    rng = np.random.default_rng(5)
    a, k = rng.random((33, 41)), rng.random((9, 12))
    for r0, c0, n0, n1 in [(0, 0, 41, 52), (4, 6, 20, 20), (-3, 30, 30, 30)]:
        got = _core.convolve_linear(a, k, r0, c0, n0, n1)
        want = twins.convolve_linear(a, k, r0, c0, n0, n1)
        np.testing.assert_allclose(got, want, rtol=0, atol=RTOL_TWIN * want.max())


def test_fast_length():
    assert [_core.fast_length(n) for n in (1, 11, 13, 97, 1025)] == [1, 12, 14, 98, 1029]


def test_place_polyphase_matches_twin():
    # Output (i, j) takes phase (i % q, j % q): the twin applies the direct double sum per phase pair.
    rng = np.random.default_rng(6)
    s = rng.random((60, 70))
    for q in (1, 2, 3):
        ty, tx = rng.normal(size=(q, 9)), rng.normal(size=(q, 7))
        r0, c0 = rng.integers(-5, 5, q), rng.integers(-5, 5, q)
        got = _core.place_polyphase(s, ty, tx, r0, c0, 101, 97)
        want = np.empty((101, 97))
        for py in range(q):
            for px in range(q):
                ny, nx = len(range(py, 101, q)), len(range(px, 97, q))
                want[py::q, px::q] = twins.place_separable(s, ty[py], tx[px], r0[py], c0[px], ny, nx)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_place_polyphase_scales_last_and_writes_into_out():
    # The scale is the last product (scale 1 changes no bit); `out` receives the image in place and a wrong
    # buffer is refused rather than silently copied.
    rng = np.random.default_rng(8)
    s = rng.random((80, 90))
    ty, tx = rng.normal(size=(2, 24)), rng.normal(size=(2, 23))
    r0, c0 = np.array([-3, 2]), np.array([1, -4])
    plain = _core.place_polyphase(s, ty, tx, r0, c0, 123, 131)
    out = np.full((123, 131), np.nan)
    got = _core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 2.5, out)
    assert got is out
    assert np.array_equal(out, plain * 2.5)
    assert np.array_equal(_core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 1.0), plain)
    for bad in (np.empty((123, 131), np.float32), np.empty((131, 123)), np.empty((123, 262))[:, ::2]):
        with pytest.raises(ValueError, match="out must be"):
            _core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 1.0, bad)


def test_place_polyphase_writes_row_sums_and_unaligned_rows_for_any_thread_count():
    # The placement also gives each row's sum (the ledger's recorded flux) while the row is in cache, and streams
    # its rows into `out` at any alignment: the same values, the same bits for 1 and 2 threads (rows are handed
    # to whichever worker is free).
    rng = np.random.default_rng(9)
    s = rng.random((80, 90))
    ty, tx = rng.normal(size=(2, 24)), rng.normal(size=(2, 23))
    r0, c0 = np.array([-3, 2]), np.array([1, -4])
    before = _core.num_threads()
    runs = []
    try:
        for threads in (1, 2, 2):
            _core.set_num_threads(threads)
            fresh = _core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 1.5)
            # `out` starts one row into a larger array: rows at every alignment.
            out, sums = np.full((124, 131), np.nan)[1:], np.full(123, np.nan)
            _core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 1.5, out, sums)
            runs.append((fresh, out, sums))
    finally:
        _core.set_num_threads(before)
    fresh, out, sums = runs[0]
    assert np.array_equal(out, fresh)
    np.testing.assert_allclose(sums, out.sum(axis=1), rtol=1e-13)
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(other, runs[0], strict=True))
    with pytest.raises(ValueError, match="row_sums must be"):
        _core.place_polyphase(s, ty, tx, r0, c0, 123, 131, 1.0, out, np.empty(122))


def test_render_result_is_read_only_and_a_one_source_scene_is_its_component():
    # A one-source scene is the component itself (no copy of the image), the recorded flux is the image's sum
    # (the placement's row sums), and neither array can be changed in place: a caller that wants to modify
    # the image copies it, so the component and the scene can never disagree.
    from icl.optics import Detector, Pupil, Scene, Source, render

    res = render(Scene((Source(x_arcmin=1.0, flux=2.0),), Pupil(), Detector(n=96)))
    assert np.shares_memory(res.scene, res.components) and np.array_equal(res.scene, res.components[0])
    assert res.ledgers[0]["recorded"] == pytest.approx(float(res.scene.sum()), rel=1e-13)
    for arr in (res.scene, res.components):
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] += 1.0
    two = render(Scene((Source(), Source(id="L2", x_arcmin=2.0)), Pupil(), Detector(n=64)))
    assert np.array_equal(two.scene, two.components.sum(axis=0)) and not two.scene.flags.writeable
    image = res.scene.copy()
    image[0, 0] += 1.0  # a copy is the caller's own


def test_place_polyphase_in_single_precision_is_close_and_deterministic():
    # single=True: samples, taps and the filter sums in float (twice the lanes), the scale and the image in
    # double. Within float rounding of the double placement, and the same bits for 1 and 2 threads.
    rng = np.random.default_rng(11)
    s = rng.random((90, 100))
    ty, tx = rng.normal(size=(2, 18)), rng.normal(size=(2, 17))
    r0, c0 = np.array([-3, 2]), np.array([1, -4])
    double = _core.place_polyphase(s, ty, tx, r0, c0, 150, 161, 2.5)
    before = _core.num_threads()
    runs = []
    try:
        for threads in (1, 2):
            _core.set_num_threads(threads)
            runs.append(_core.place_polyphase(s, ty, tx, r0, c0, 150, 161, 2.5, single=True))
    finally:
        _core.set_num_threads(before)
    assert np.array_equal(runs[0], runs[1]) and runs[0].dtype == np.float64
    scale = np.abs(ty).sum(axis=1).max() * np.abs(tx).sum(axis=1).max() * 2.5  # bound on |terms| per pixel
    assert np.abs(runs[0] - double).max() <= 1e-6 * scale
    assert not np.array_equal(runs[0], double)  # the float path really ran


def test_field_energy_is_the_sum_of_squared_magnitudes():
    # The far-field engine's Parseval total (grid_energy) from the C++ lane sum; odd sizes take the tail path.
    rng = np.random.default_rng(10)
    for shape in ((284, 284), (7, 5), (1, 1)):
        p = rng.normal(size=shape) + 1j * rng.normal(size=shape)
        assert _core.field_energy(p) == pytest.approx(float(np.sum(np.abs(p) ** 2)), rel=1e-13)
    assert _core.field_energy(np.zeros((3, 3), complex)) == 0.0


def test_filtered_disk_coverage_matches_twin_and_keeps_the_area():
    # Coverage on 4x finer cells, filtered and decimated onto the grid (icl.optics.sampling.edge_filter).
    from icl.optics.sampling import edge_filter

    filt = edge_filter()
    taps, sub = np.array(filt.taps), filt.sub
    r, du = 0.18e-3, 2.2e-5
    cx, cy = 0.013e-3, -0.021e-3
    n = 2 * math.ceil(r / du) + 2 + 2 * filt.spread
    got = _core.disk_coverage_filtered(cx, cy, r, n, du, list(taps), sub)
    k = (taps.size - sub + 2 * sub - 1) // (2 * sub) + 1
    w = sub * (n + 2 * k)
    fine = twins.disk_coverage(cx, cy, r, w, du / sub)
    off = sub * k + (sub - taps.size) // 2
    start = off + sub * np.arange(n)
    idx = start[:, None] + np.arange(taps.size)[None, :]  # [grid cell, tap] -> fine index
    want = np.array([[taps @ fine[np.ix_(idx[i], idx[j])] @ taps for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL_TWIN)
    assert got.sum() * du * du == pytest.approx(math.pi * r * r, rel=1e-12)


def test_single_precision_render_stays_within_its_rounding():
    # The default render transforms in single precision: against double it moves by float rounding (about
    # 1e-7 of the peak, 1e-7 in relative L1), the covariances hold to that level, and a full period (MTF)
    # stays in double.
    from icl.optics import ICL, Detector, Pupil, Sampling, Scene, Source, render
    from icl.optics.render import psf_samples

    pupil = Pupil(icl=ICL(cylinder_d=0.6, axis_deg=20.0, decentre_mm=(0.1, -0.05), hole_mm=0.36))
    det = Detector(n=64)
    smp, dbl = Sampling(support_arcmin=6.0), Sampling(support_arcmin=6.0, single_precision_fft=False)
    a = render(Scene((Source(x_arcmin=0.3, y_arcmin=-0.2),), pupil, det), smp).scene
    a64 = render(Scene((Source(x_arcmin=0.3, y_arcmin=-0.2),), pupil, det), dbl).scene
    assert 0 < np.abs(a - a64).max() <= 1e-6 * a64.max()
    assert np.abs(a - a64).sum() <= 1e-6 * a64.sum()
    rotated = Pupil(icl=ICL(cylinder_d=0.6, axis_deg=110.0, decentre_mm=(0.05, 0.1), hole_mm=0.36))
    b = render(Scene((Source(x_arcmin=0.2, y_arcmin=0.3),), rotated, det), smp).scene
    np.testing.assert_allclose(b, np.rot90(a, -1), rtol=0, atol=1e-6 * a.max())
    m = psf_samples(Pupil(), 550.0, 4.0, 128, Sampling(fft_factor=1.0)).grid.m
    full = psf_samples(Pupil(), 550.0, 4.0, m, Sampling(fft_factor=1.0))
    assert full.samples.sum() == pytest.approx(full.grid_energy, rel=1e-12)  # Parseval: double precision


def test_trace_in_place_gives_the_same_bits_and_refuses_copies():
    # In place overwrites the batch with exactly what the copying call returns; an array that would need a
    # converted copy (wrong type, not contiguous, read-only) is refused, since its update would be lost.
    from icl.eye import navarro_1985, paraxial, trace
    from icl.eye.trace import TraceOptions
    from icl.eye.wavefront import pupil_rays

    eye = navarro_1985()
    rng = np.random.default_rng(10)
    r, phi = np.sqrt(rng.uniform(0, 1, 3001)) * 1.7, rng.uniform(0, 2 * np.pi, 3001)
    z_pupil = paraxial(eye, None, 550.0).entrance_pupil_z
    rays = pupil_rays(r * np.cos(phi), r * np.sin(phi), (0.0, 0.0), z_pupil)
    steps = eye.steps(550.0)
    want = trace(steps, rays)
    got = rays.copy()
    assert trace(steps, got, in_place=True) is got
    assert all(np.array_equal(a, b) for a, b in zip(want.arrays(), got.arrays(), strict=True))
    surfaces, opts = [s.to_core() for s in steps], TraceOptions().to_core()
    arrays = list(rays.copy().arrays())
    wrong = [(0, arrays[0].astype(np.float32)), (1, np.repeat(arrays[1], 2)[::2]), (8, arrays[8].astype(int))]
    for k, bad in wrong:
        with pytest.raises(TypeError):
            _core.trace_rays_inplace(surfaces, opts, *arrays[:k], bad, *arrays[k + 1 :])
    frozen = arrays[2].copy()
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        _core.trace_rays_inplace(surfaces, opts, *arrays[:2], frozen, *arrays[3:])

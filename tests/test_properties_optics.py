"""Property tests of the renderer: linearity, shift and rotation covariance, no energy created."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from icl.optics import ICL, Detector, Pupil, Sampling, Scene, Source, render

N = 64
STEP = 4 / 60  # pixel pitch in arcmin
# One discretisation for every render being compared, with double-precision transforms: the covariances then
# hold to the placement filters' 1e-10 (single-precision transforms add their own rounding, 1e-7 of the peak;
# tests/test_optics_kernels.py bounds it).
SAMPLING = Sampling(support_arcmin=6.0, single_precision_fft=False)
FAST = settings(max_examples=12, deadline=None)

coord = st.floats(-1.0, 1.0, allow_nan=False)
pupils = st.builds(
    lambda hole, cyl, axis, du, dv, power: Pupil(icl=ICL(power_d=power, cylinder_d=cyl, axis_deg=axis,
                                                        decentre_mm=(du, dv), hole_mm=hole)),
    st.sampled_from([0.0, 0.36]), st.floats(0, 1.0), st.floats(0, 180), st.floats(-0.2, 0.2),
    st.floats(-0.2, 0.2), st.floats(-8.5, -7.5))


def _render(pupil, *sources):
    return render(Scene(tuple(sources), pupil, Detector(n=N)), SAMPLING)


@FAST
@given(pupils, coord, coord, st.floats(0.0, 10.0))
def test_linear_in_flux(pupil, x, y, flux):
    one = _render(pupil, Source(x_arcmin=x, y_arcmin=y)).scene
    scaled = _render(pupil, Source(x_arcmin=x, y_arcmin=y, flux=flux)).scene
    np.testing.assert_allclose(scaled, flux * one, rtol=1e-12, atol=0)


@FAST
@given(pupils, coord, coord, st.integers(-6, 6), st.integers(-6, 6))
def test_integer_pixel_shift_moves_the_image(pupil, x, y, kx, ky):
    a = _render(pupil, Source(x_arcmin=x, y_arcmin=y)).scene
    b = _render(pupil, Source(x_arcmin=x + kx * STEP, y_arcmin=y + ky * STEP)).scene
    # Away from the edges, b is a shifted by (ky, kx) pixels; the placement filters of different
    # sub-sample phases agree to their design tolerance (1e-10 of the response).
    core = (slice(8, N - 8), slice(8, N - 8))
    shifted = np.roll(a, (ky, kx), axis=(0, 1))
    np.testing.assert_allclose(b[core], shifted[core], rtol=0, atol=1e-9 * a.max())


@FAST
@given(st.floats(0, 1.0), st.floats(0, 180), st.floats(-0.2, 0.2), st.floats(-0.2, 0.2), coord, coord,
       st.sampled_from([0.0, 0.36]))
def test_cylinder_axis_rotation_covariance(cyl, axis, du, dv, x, y, hole):
    # Rotating the whole eye and the source by +90 degrees rotates the image by +90 degrees: with row
    # = +y, B[i, j] = A[N - 1 - j, i], i.e. np.rot90(A, -1). Pixel centres map onto pixel centres.
    a = _render(Pupil(icl=ICL(cylinder_d=cyl, axis_deg=axis, decentre_mm=(du, dv), hole_mm=hole)),
                Source(x_arcmin=x, y_arcmin=y)).scene
    b = _render(Pupil(icl=ICL(cylinder_d=cyl, axis_deg=axis + 90, decentre_mm=(-dv, du), hole_mm=hole)),
                Source(x_arcmin=-y, y_arcmin=x)).scene
    np.testing.assert_allclose(b, np.rot90(a, -1), rtol=0, atol=1e-9 * a.max())


@FAST
@given(pupils, st.sampled_from(["clear", "black", "index_matched"]), coord, coord)
def test_energy_is_never_created(pupil, hole, x, y):
    icl = pupil.icl
    pupil = Pupil(icl=ICL(icl.power_d, icl.cylinder_d, icl.axis_deg, icl.decentre_mm, icl.optic_zone_mm,
                          0.36, hole))
    res = _render(pupil, Source(x_arcmin=x, y_arcmin=y, spectrum=((450.0, 0.3), (650.0, 0.7))))
    led = res.ledgers[0]
    assert res.scene.min() >= -1e-12 * res.scene.max()
    assert led["recorded"] <= led["source_flux"] - led["blocked_by_aperture"] + 1e-12
    assert led["outside_window"] >= 0 and led["beyond_grid"] >= 0

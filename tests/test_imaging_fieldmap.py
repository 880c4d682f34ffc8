"""Off-axis PSF maps and patch-blended field-dependent rendering, on a synthetic non-isoplanatic eye."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from icl.imaging.fieldmap import field_deviations, patch_error, render_patched
from icl.optics import Detector, Extent, Pupil, Scene, Source, render
from icl.optics.image_source import ImageMap

CLEAR = Pupil(3.2, 0.0, None)


@dataclass(frozen=True)
class SeidelPupil:
    """Test eye: clear 3.2 mm pupil with field-dependent distortion tilt and astigmatism.

    ``W = dist * |theta|^3 (u . e) + astig * |theta|^2 (u . e)^2 / R^2`` (m), e the field direction.
    """

    x_deg: float
    y_deg: float
    dist: float = 0.0  # rad per deg^3 of field
    astig: float = 0.0  # m of wavefront at the pupil edge per deg^2
    diameter_mm: float = 3.2

    def field(self, n, du, wavelength):
        base = CLEAR.field(n, du, wavelength)
        c = (np.arange(n) - (n - 1) / 2.0) * du
        u, v = c[None, :], c[:, None]
        r = math.hypot(self.x_deg, self.y_deg)
        ex, ey = (self.x_deg / r, self.y_deg / r) if r else (0.0, 1.0)
        proj = u * ex + v * ey
        w = self.dist * r**3 * proj + self.astig * r**2 * proj**2 / (self.diameter_mm * 5e-4) ** 2
        return base * np.exp(2j * np.pi * w / wavelength)

    def blocked_fraction(self):
        return 0.0


def test_isoplanatic_eye_has_no_field_deviation():
    devs = field_deviations(lambda x, y: CLEAR, [(0, 0), (5, 0), (0, 10)], 550.0, 4.0, [30.0], period=256)
    for d in devs:
        assert d.tv_nominal < 1e-12 and d.tv_translated < 1e-12
        assert d.shift_arcmin == pytest.approx((0.0, 0.0), abs=1e-9)
        assert d.flux_ratio == pytest.approx(1.0, rel=1e-12)


def test_distortion_is_a_pure_translation():
    # A tilt W = a u moves the pattern to theta = +a (docs/conventions.md): at 10 deg along +x with
    # 2e-7 rad/deg^3 the shift is 2e-4 rad = 0.6875 arcmin, and the shape does not change.
    eye = lambda x, y: SeidelPupil(x, y, dist=2e-7)  # noqa: E731
    (d,) = field_deviations(eye, [(10.0, 0.0)], 550.0, 4.0, [30.0], period=256)
    assert d.shift_arcmin[0] == pytest.approx(2e-4 * 180 * 60 / math.pi, abs=0.01)  # parabola refinement
    assert abs(d.shift_arcmin[1]) < 1e-6
    assert d.tv_nominal > 0.3  # translated on-axis PSF at the nominal place is far off ...
    assert d.tv_translated < 0.02  # ... and right once moved (residual: sub-sample peak estimate)


def test_astigmatism_splits_tangential_and_sagittal():
    eye = lambda x, y: SeidelPupil(x, y, astig=2e-9)  # 0.4 waves at 10 deg  # noqa: E731
    freqs = np.array([20.0, 40.0])
    d0, d10 = field_deviations(eye, [(0.0, 0.0), (0.0, 10.0)], 550.0, 4.0, freqs, period=512)
    np.testing.assert_allclose(d0.mtf_tangential, d0.mtf_sagittal, atol=1e-9)
    # Aberration along the field direction (y) lowers the tangential MTF, leaves the sagittal one.
    assert np.all(d10.mtf_tangential < d10.mtf_sagittal - 0.05)
    np.testing.assert_allclose(d10.mtf_sagittal, d0.mtf_sagittal, atol=2e-3)
    assert d10.tv_translated > 0.05 and d10.strehl_ratio < 0.8


def test_patched_render_equals_plain_render_when_isoplanatic():
    det = Detector(96, 4.0)
    img = ImageMap(np.arange(12.0).reshape(3, 4) + 1, 20.0)
    srcs = (Source("a", 1.3, -2.2), Source("b", -2.0, 1.1, flux=0.5, extent=Extent("image", image=img)),
            Source("c", 0.2, 0.4, extent=Extent("disk", 0.8)))
    comps, scene = render_patched(srcs, det, lambda x, y: CLEAR, patch_arcmin=1.5)
    ref = render(Scene(srcs, CLEAR, det))
    np.testing.assert_allclose(comps, ref.components, atol=1e-14)
    np.testing.assert_allclose(scene, ref.scene, atol=1e-14)


def test_patch_error_shrinks_with_patch_size():
    # Strong field dependence near the axis keeps the renders small: 1.4 waves at 0.25 deg.
    eye = lambda x, y: SeidelPupil(x, y, astig=1.25e-5)  # noqa: E731
    det = Detector(64, 4.0)
    big = patch_error(eye, 8.0, (6.0, 0.0), det)
    small = patch_error(eye, 2.0, (9.0, 0.0), det)
    assert small < big / 4  # bilinear blending: error ~ patch^2 (measured ratio in docs/imaging.md)
    assert big > 1e-3

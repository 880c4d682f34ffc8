"""Curved retina, the tracer's root choice, and the second ray path (optiland) on identical rays."""

import math

import numpy as np
import pytest
from icl._paths import cases_dir
from icl.eye import TraceOptions, escudero_sanz_1999, trace
from icl.eye.optiland_check import NOT_EXPRESSED, compare, uniform_pupil
from icl.eye.package import load_package_dir
from icl.eye.trace import MISSED, Placement, Rays, Step, Surface
from icl.eye.wavefront import pupil_rays

NO_WEIGHTS = TraceOptions(apertures=False, fresnel=False)


def _rms_um(x, y):
    return float(np.sqrt(np.mean((x - x.mean()) ** 2 + (y - y.mean()) ** 2))) * 1e3


def test_concave_surface_is_met_on_the_vertex_sheet_ahead_of_the_ray():
    # A sphere of radius -12 mm with its vertex at z = 16.3: rays from z = 0 start beyond its centre of
    # curvature (z = 4.3). Both roots lie ahead; the far root (z ~ -7.7 side) is behind the start for
    # the axial ray, the near-sheet root is at the vertex. Before the fix the root of smallest |t| was
    # taken: the far side, behind the ray.
    retina = Step(Surface("retina", -12.0, offset=16.3), Placement(), 1.336, 1.336)
    rays = Rays.start([0.0, 1.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [0.0, 0.02, 0.0], [0.0, 0.0, 0.0],
                      [1.0, 1.0, -1.0])
    out = trace([retina], rays, NO_WEIGHTS)
    assert out.flags[0] == 0 and out.z[0] == pytest.approx(16.3, abs=1e-12)
    # Off axis: on the sphere, on the vertex side of its centre (z > 4.3) and ahead of the ray.
    assert out.flags[1] == 0 and out.z[1] > 4.3
    assert math.hypot(out.x[1], out.y[1], out.z[1] - 4.3) == pytest.approx(12.0, abs=1e-12)
    # Travelling away from the surface: both intersections are behind it, flagged missed.
    assert out.flags[2] == MISSED


def test_curved_retina_spot_of_the_escudero_sanz_eye():
    # 1e5 uniform random pupil rays at 550 nm on the -12 mm retina 16.3203 mm behind the lens: every ray
    # lands on the vertex side; the spot is a few micrometres (it was 1233 um with the far-side root).
    eye = escudero_sanz_1999()
    u, v = uniform_pupil(100_000, eye.pupil_diameter_mm)
    out = trace(eye.steps(550.0) + [eye.retina_step(550.0)], pupil_rays(u, v, (0.0, 0.0), 0.0), NO_WEIGHTS)
    assert np.all(out.flags == 0)
    assert np.all(np.abs(out.z - eye.retina_z) < 1e-5)
    assert 3.7 < _rms_um(out.x, out.y) < 3.9


def test_optiland_is_installed_for_the_checks():
    # The second ray path is part of the test extra (make test installs it).
    import optiland  # noqa: F401


def test_same_rays_same_spot_as_optiland_on_the_curved_retina():
    pytest.importorskip("optiland")
    c = compare(escudero_sanz_1999())
    assert c.rays == 100_000
    assert abs(c.rms_spot_um[0] - c.rms_spot_um[1]) < 1e-3
    assert c.rms_spot_um[0] == pytest.approx(3.78, abs=0.01)
    assert c.max_hit_difference_um < 1e-6
    assert c.power_d[0] == pytest.approx(c.power_d[1], abs=1e-9)
    assert c.efl_mm[0] == pytest.approx(c.efl_mm[1], abs=1e-9)
    assert c.back_focal_z_mm[0] == pytest.approx(c.back_focal_z_mm[1], abs=1e-7)
    assert c.max_opd_difference_waves < 1e-6


def test_data_package_eye_with_icl_in_optiland():
    # The example package's eye and ICL: everything but the hole is expressed and agrees.
    pytest.importorskip("optiland")
    pkg = load_package_dir(cases_dir() / "examples" / "eye")
    u, v = uniform_pupil(20_000, pkg.eye.pupil_diameter_mm, seed=3)
    c = compare(pkg.eye, pkg.implant, 550.0, u, v)
    assert c.not_expressed == NOT_EXPRESSED
    assert 0 < c.rays < 20_000  # the hole's rays are left out of both
    assert c.power_d[0] == pytest.approx(c.power_d[1], abs=1e-9)
    assert c.efl_mm[0] == pytest.approx(c.efl_mm[1], abs=1e-9)
    assert c.back_focal_z_mm[0] == pytest.approx(c.back_focal_z_mm[1], abs=1e-7)
    assert abs(c.rms_spot_um[0] - c.rms_spot_um[1]) < 1e-6
    assert c.max_opd_difference_waves < 1e-6

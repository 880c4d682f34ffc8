"""Physics anchors of the thick eye: paraxial focus, plate shift, Navarro 1985 power, path energies."""


import pytest
from icl.eye import Placement, Rays, Step, Surface, TraceOptions, navarro_1985, paraxial, trace
from icl.eye.ledger import path_ledger
from icl.eye.media import AQUEOUS
from icl.eye.paraxial import correcting_icl, retina_for_excess
from icl.eye.pupil import ThickPupil

H = 1e-5  # mm: paraxial ray height; aberrations scale as (H/R)^2 ~ 1e-12


def axis_crossing(out: Rays) -> float:
    return float(out.z[0] - out.x[0] * out.n[0] / out.l[0])


@pytest.mark.parametrize("n1,n2,radius", [(1.0, 1.3374, 7.8), (1.0, 1.5, -20.0), (1.336, 1.45, 10.5)])
def test_single_sphere_focal_length(n1, n2, radius):
    rays = Rays.start(H, 0.0, -1.0, 0.0, 0.0, 1.0)
    out = trace([Step(Surface("s", radius), Placement(), n1, n2)], rays)
    assert axis_crossing(out) == pytest.approx(n2 * radius / (n2 - n1), rel=1e-9)


def test_flat_plate_shifts_focus():
    t, n = 1.0, 1.5
    rays = Rays.start(H, 0.0, -1.0, 0.0, 0.0, 1.0)
    lens = Step(Surface("lens", 50.0), Placement(), 1.0, n)
    back = Step(Surface("lens_back"), Placement(z=0.0), n, 1.0)
    plate = [Step(Surface("p1"), Placement(z=5.0), 1.0, n), Step(Surface("p2"), Placement(z=5.0 + t), n, 1.0)]
    no_plate = axis_crossing(trace([lens, back], rays))
    with_plate = axis_crossing(trace([lens, back, *plate], rays))
    assert with_plate - no_plate == pytest.approx(t * (1 - 1 / n), rel=1e-6)  # paraxial: O(H^2 / f^2)


def test_navarro_1985_power_and_focal_length():
    # Navarro et al. (1985) with their dispersion model at 550 nm: 60.666 D (EFL 16.4837 mm).
    par = paraxial(navarro_1985(), None, 550.0)
    assert par.power_d == pytest.approx(60.666, abs=5e-4)
    assert par.efl_mm == pytest.approx(1000 / 60.666, abs=2e-4)
    # The same power from a real ray of small height: P = n' sin(u') / h.
    rays = Rays.start(H, 0.0, -1.0, 0.0, 0.0, 1.0)
    out = trace(navarro_1985().steps(550.0), rays)
    n_vit = navarro_1985().surfaces[-1][1].index(550.0)
    assert -out.l[0] * n_vit / H * 1000 == pytest.approx(par.power_d, rel=1e-8)


@pytest.fixture(scope="module")
def myopic_eye_with_icl():
    e0 = navarro_1985()
    eye = e0.with_vitreous(retina_for_excess(e0, 8.0))
    return eye, correcting_icl(eye, hole_mm=0.36, thickness_mm=0.1)


def test_hole_energy_is_its_area_fraction(myopic_eye_with_icl):
    eye, imp = myopic_eye_with_icl
    led = path_ledger(eye, imp, "hole", 550.0, n_side=401, options=TraceOptions(fresnel=False))
    fp = ThickPupil(eye, imp).footprints(550.0)["hole"][0]
    area = (fp.radius / (eye.pupil_diameter_mm / 2)) ** 2
    # Ray sampling: 401^2 cells; the hole holds ~2000 of them, so the count is good to ~1 %.
    assert led["transmitted"] == pytest.approx(area, rel=0.02)
    assert abs(led["residual"]) < 1e-9


def test_ghost_energy_is_product_of_reflectances(myopic_eye_with_icl):
    eye, imp = myopic_eye_with_icl
    led = path_ledger(eye, imp, "ghost_icl", 550.0, n_side=201)
    main = path_ledger(eye, imp, "lens", 550.0, n_side=201)
    ni, na = imp.material.index(550.0), AQUEOUS.index(550.0)  # the Navarro aqueous around the implant
    r = ((ni - na) / (ni + na)) ** 2
    # Ghost = main-path light x R_back x R_front (normal incidence; the beam is within ~10 deg of normal).
    assert led["transmitted"] / main["transmitted"] == pytest.approx(r * r, rel=0.02)
    for x in (led, main):
        assert abs(x["residual"]) < 1e-9


def test_hole_fill_changes_only_the_hole_path(myopic_eye_with_icl):
    # An index-matched fill (the implant's own material) refracts in the hole; the lens and edge paths
    # keep the eye's aqueous around the implant.
    from dataclasses import replace

    from icl.eye.model import path_steps

    eye, imp = myopic_eye_with_icl
    filled = replace(imp, hole_medium=imp.material)
    ni, na = imp.material.index(550.0), AQUEOUS.index(550.0)
    hole = [s for s in path_steps(eye, filled, "hole", 550.0) if s.surface.name.startswith("icl")]
    assert [(s.n1, s.n2) for s in hole] == [(na, ni), (ni, na)]
    for path in ("lens", "edge"):
        assert path_steps(eye, filled, path, 550.0) == path_steps(eye, imp, path, 550.0)

"""Physics of the professional references against independent computations: the thick tracer's retinal
spots, Prentice's rule, hand formulas (Fresnel, Airy, the defocus matrix) and the engine's own ledger."""

import itertools
import math

import numpy as np
import pytest
from icl.keys import ReleaseKey
from icl.pro import references as ref
from icl.pro import thick as th
from icl.pro.generate import (
    BUILDERS,
    F01_FAULTS,
    Ctx,
    base_eye,
    family,
    fit_icl,
    make_package,
    suspect_ledger,
)
from icl.pro.package import scene_from_package

KEY = ReleaseKey.from_seed(3)


@pytest.fixture(scope="module")
def eye_family():
    e = base_eye("E00", KEY, False)
    return e, fit_icl(e, family("F00", KEY, False))


# Instances built directly by the template builders (exact inputs: no held-out measurement noise), over
# three base eyes (one out of distribution) and two design families.
COMBOS = [("E00", "F00", False), ("E01", "F01", False), ("X00", "X01", True)]


@pytest.fixture(scope="module")
def built():
    out = {}
    for t in ("B05", "C03", "F01", "F03"):
        for k, (eid, fid, ood) in enumerate(COMBOS):
            e = base_eye(eid, KEY, ood)
            f = fit_icl(e, family(fid, KEY, ood))
            out[(t, k)] = BUILDERS[t](Ctx(KEY.rng("test", t, k), e, f, eid, fid, ood))
    return out


def _instances(built, template):
    return [(k, b) for (t, k), b in sorted(built.items(), key=lambda kv: kv[0]) if t == template]


def test_one_visual_frame_for_sources_and_prisms(eye_family):
    """The traced eye puts a +2' source and a minus ICL decentred +0.1 mm on the same side of the retina
    (-x); both references show them on the visual +x side: the source at +2', the pattern at -P c (with
    motion), in the thin and in the thick engine alike."""
    from icl.eye.wavefront import spot

    e, f = eye_family
    assert f["thin_power"] < 0
    cases = {"decentre": dict(decentre_x=0.1), "source": dict(sources=[("L1", 2.0, 0.0, [[550.0, 1.0]])])}
    retina, thin, thick = {}, {}, {}
    host = make_package(e, f, "E00", "F00", hole_model="solid")
    eye0, icl0 = th.thick_eye(host)
    x0 = spot(eye0, icl0, "lens", 8, (0.0, 0.0), 550.0)[0].mean()
    for name, kw in cases.items():
        pkg = make_package(e, f, "E00", "F00", hole_model="solid", **kw)
        eye, icl = th.thick_eye(pkg)
        src = pkg["illumination"]["sources"][0]
        field = (src["x_arcmin"]["value"], src["y_arcmin"]["value"])
        retina[name] = spot(eye, icl, "lens", 8, field, 550.0)[0].mean() - x0
        img, _, axis = ref.render_psf(scene_from_package(pkg))
        thin[name] = ref.centroid_arcmin(img, axis)
        img, _, axis = th.render_thick(pkg)
        thick[name] = ref.centroid_arcmin(img, axis)
    # Independent: the traced retinal images lie on the same (-x) side.
    assert retina["decentre"] < -0.01 and retina["source"] < -0.005
    prentice = ref.prentice_shift_arcmin(f["thin_power"], 0.1)
    assert prentice > 3.0  # minus lens: toward the decentre
    assert thin["decentre"][0] == pytest.approx(prentice, rel=0.02)
    assert thick["decentre"][0] == pytest.approx(prentice, rel=0.06)
    assert thin["source"][0] == pytest.approx(2.0, abs=0.05) and thick["source"][0] == pytest.approx(
        2.0, abs=0.1
    )
    for c in (thin, thick):
        assert abs(c["decentre"][1]) < 1e-6 and abs(c["source"][1]) < 1e-6


def test_prentice_references_follow_their_psf(built):
    """B05.2 (Prentice, with motion) against the centroid of the B05 reference PSF of the same instance."""
    for k, b in _instances(built, "B05"):
        if COMBOS[k][2]:
            continue  # the OOD pupil passes the zone edge: its uncorrected light does not shift with the prism
        axis = (np.arange(b.psf["base"].shape[0]) - (b.psf["base"].shape[0] - 1) / 2) * 0.1
        got = ref.centroid_arcmin(b.psf["base"], axis)
        want = b.refs["B05.2"]["value"]
        for g, w in zip(got, want, strict=True):
            assert g == pytest.approx(w, abs=0.03 * max(abs(w), 1.0))


def test_c03_axis_follows_the_defocus_matrix(built):
    """The second-moment axis of the C03 reference equals the eigen-direction of larger defocus of the thin
    wavefront (hand formula), is stable under 1e-4 noise and independent of memory order."""
    rng = np.random.default_rng(0)
    for _, b in _instances(built, "C03"):
        pkg = b.cases["base"]
        s = pkg["eye"]["thin_eye_excess"]["value"] + pkg["implant"]["thin_power"]["value"]
        c, a = pkg["implant"]["cylinder"]["value"], math.radians(pkg["implant"]["cylinder_axis"]["value"])
        n_perp = np.array([-math.sin(a), math.cos(a)])
        hess = -(s * np.eye(2) + c * np.outer(n_perp, n_perp))
        w, v = np.linalg.eigh(hess)
        major = v[:, int(np.argmax(np.abs(w)))]
        want = math.degrees(math.atan2(major[1], major[0])) % 180.0
        got = b.refs["C03.2"]["value"]
        assert abs((got - want + 90) % 180 - 90) < 3.0, (got, want)
        img = b.psf["base"]
        axis = (np.arange(img.shape[0]) - (img.shape[0] - 1) / 2) * 0.1
        noisy = img + 1e-4 * img.max() * rng.standard_normal(img.shape)
        assert abs((ref.orientation_deg(noisy, axis) - got + 90) % 180 - 90) < 1.0
        flipped = ref.orientation_deg(np.ascontiguousarray(img.T), axis)  # x <-> y: angle -> 90 - angle
        assert abs((flipped - (90.0 - got) + 90) % 180 - 90) < 1e-6


def test_fresnel_at_an_angle_conserves_energy():
    """Unpolarised reflectance against the transmittances computed from the amplitude transmission
    coefficients (R + T = 1 for each polarisation), and the normal-incidence limit."""
    for n1, n2, deg in ((1.0, 1.376, 20.0), (1.45, 1.3374, 30.0), (1.3374, 1.42, 0.0)):
        ti = math.radians(deg)
        tt = math.asin(n1 / n2 * math.sin(ti))
        ci, ct = math.cos(ti), math.cos(tt)
        ts, tp = 2 * n1 * ci / (n1 * ci + n2 * ct), 2 * n1 * ci / (n2 * ci + n1 * ct)
        t = 0.5 * (ts**2 + tp**2) * (n2 * ct) / (n1 * ci)
        assert ref.fresnel_unpolarised(n1, n2, deg) + t == pytest.approx(1.0, abs=1e-12)
    assert ref.fresnel_unpolarised(1.0, 1.5, 0.0) == pytest.approx(ref.fresnel_r(1.0, 1.5), abs=1e-15)


def test_airy_encircled_energy_by_quadrature(built):
    """F03.3 against a radial quadrature of the Airy intensity (2 J1(v) / v)^2."""
    from scipy.integrate import quad
    from scipy.special import j1

    for _, b in _instances(built, "F03"):
        pupil = b.cases["base"]["eye"]["pupil_diameter"]["value"]
        d = min(pupil, b.cases["base"]["implant"]["optic_zone_diameter"]["value"])  # the limiting aperture
        v = math.pi * d * 1e-3 * b.task["encircled_radius_arcmin"] / ref.RAD_TO_ARCMIN / 550e-9
        # (2 J1(v)/v)^2 integrates to 4 pi over the plane in v units: EE = (1/2) int_0^v (2 J1(t)/t)^2 t dt.
        num = 0.5 * quad(lambda t: (2 * j1(t) / t) ** 2 * t, 1e-12, v, limit=200)[0]
        assert b.refs["F03.3"]["value"] == pytest.approx((d / pupil) ** 2 * num, abs=1e-8)
    r1 = ref.airy_radius_arcmin(ref.AIRY_DARK[0], 550, 3)
    assert ref.encircled_energy_airy(r1, 550, 3) == pytest.approx(0.8378, abs=1e-4)


def test_thin_hole_fraction_is_the_engines_and_the_thick_footprint_is_magnified(eye_family):
    """Stated thin model: the black disk blocks (d / D)^2 of the pupil in the engine's ledger. The thick eye
    blocks the hole's traced footprint, magnified by the cornea: (d / (m D))^2 with m the paraxial
    beam-height ratio at the ICL front (about 0.91)."""
    from icl.eye.compare import height_ratio

    e, f = eye_family
    pkg = make_package(e, f, "E00", "F00", hole_model="black", thin_power=e["refraction"])
    d, pupil = f["hole"], e["pupil_diameter"]
    _, led, _ = ref.render_psf(scene_from_package(pkg))
    assert led["blocked_by_aperture"] == pytest.approx((d / pupil) ** 2, rel=1e-3)
    eye, _ = th.thick_eye(pkg)
    z_icl = e["anterior_chamber_depth"] - f["vault"] - f["central_thickness"]
    m = height_ratio(eye, z_icl)
    assert 0.88 < m < 0.94
    _, led, _ = th.render_thick(pkg)
    assert led["blocked_by_aperture"] == pytest.approx((d / (m * pupil)) ** 2, rel=0.02)


def test_min_rms_focus_and_stated_thick_model():
    """C05 references: the solid optic has no Zernike defocus at the chosen power (paraxial focus keeps
    about 0.3 waves); task.json states surfaces, stop, Fresnel and focus; every case is traced (the OOD
    instance too, with its 2.5 mm pupil)."""
    for eid, fid, ood in (COMBOS[0], COMBOS[2]):
        e = base_eye(eid, KEY, ood)
        f = fit_icl(e, family(fid, KEY, ood))
        b = BUILDERS["C05"](Ctx(KEY.rng("test", "C05", eid), e, f, eid, fid, ood))
        model = b.task["model"]
        assert {"surfaces", "stop", "fresnel", "focus", "dispersion", "visual_frame"} <= set(model)
        assert "off" in model["fresnel"] and "ICL anterior vertex" in model["stop"]
        assert abs(th.solid_wavefront_zernike(b.cases["solid_on"])["defocus"]) < 2e-3
        assert set(b.engines.values()) == {th.ENGINE} and len(b.engines) == 8
        if ood:
            assert b.cases["solid_on"]["eye"]["pupil_diameter"]["value"] == 2.5
    e = base_eye("E00", KEY, False)
    f = fit_icl(e, family("F00", KEY, False))
    paraxial = th.solid_wavefront_zernike(
        make_package(e, f, "E00", "F00", hole_model="solid", thin_power=e["refraction"])
    )
    assert abs(paraxial["defocus"]) > 0.1


def test_f01_fault_sets_have_distinct_signatures(built):
    """Every set of one or two faults gives its own suspect ledger (by more than the F01.1 tolerance in
    some entry), for the true ledger of each built F01 instance."""
    sets = [list(s) for k in (1, 2) for s in itertools.combinations(sorted(F01_FAULTS), k)]
    for _, b in _instances(built, "F01"):
        true, gain = b.refs["F01.2"]["true_ledger"], b.refs["F01.2"]["gain"]
        assert true["blocked"] > 0.01 and true["outside_window"] > 0.05
        ledgers = [suspect_ledger(true, s, gain) for s in sets]
        for (s1, l1), (s2, l2) in itertools.combinations(zip(sets, ledgers, strict=True), 2):
            assert max(abs(l1[k] - l2[k]) for k in l1) > 0.005, (s1, s2)
        assert b.task["suspect_ledger"] == suspect_ledger(true, b.refs["F01.2"]["value"], gain)


def _first_dark_ring_rendered(pkg: dict, wavelength_nm: float) -> float:
    """First minimum of the rendered PSF's profile along +-x (0.5-arcsec pixels, parabola through the
    three samples around the discrete minimum)."""
    import copy

    q = copy.deepcopy(pkg)
    src = q["illumination"]["sources"][0]
    src["spectrum"]["value"] = [[wavelength_nm, 1.0]]
    q["illumination"]["sources"] = [src]
    scene = scene_from_package(q)
    scene["detector"].update(n=176, pitch_arcsec=0.5)
    img, _, axis = ref.render_psf(scene)
    prof = 0.25 * (img[87] + img[88] + img[87, ::-1] + img[88, ::-1])  # rows at y = -+0.25 arcsec, x mirrored
    x = axis[88:]
    p = prof[88:]
    i = int(np.argmax((p[1:-1] < p[:-2]) & (p[1:-1] <= p[2:]))) + 1  # first local minimum
    y0, y1, y2 = p[i - 1], p[i], p[i + 1]
    step = x[1] - x[0]
    return float(x[i] + 0.5 * step * (y0 - y2) / (y0 - 2 * y1 + y2))


def test_dark_rings_and_encircled_energy_use_the_limiting_aperture():
    """Issue 29 item 2: where the pupil (5.5-6.5 mm) exceeds the 4.6 mm optic zone (out of distribution), the
    corrected core is the optic zone's Airy pattern: C01.2, C04.2 and F03.1 equal the rendered dark rings
    within their 0.01 arcmin tolerance, and F03.3 the rendered encircled energy of the incident flux.
    Before, the references used the pupil (C01: 0.35 against a rendered 0.46 arcmin)."""
    e = base_eye("X00", KEY, True)
    f = fit_icl(e, family("X01", KEY, True))
    for t in ("C01", "C04", "F03"):
        b = BUILDERS[t](Ctx(KEY.rng("test", t, 9), e, f, "X00", "X01", True))
        pkg = b.cases["base"]
        assert pkg["eye"]["pupil_diameter"]["value"] > pkg["implant"]["optic_zone_diameter"]["value"] + 0.5
        lams = [w for w, _ in pkg["illumination"]["sources"][0]["spectrum"]["value"]]
        want = {"C01": [b.refs["C01.2"]["value"]] if t == "C01" else None, "C04": b.refs.get("C04.2", {}).get("value"),
                "F03": [b.refs["F03.1"]["value"][0]] if t == "F03" else None}[t]
        for lam, r in zip(lams, want):
            assert _first_dark_ring_rendered(pkg, lam) == pytest.approx(r, abs=0.01), (t, lam)
        if t == "F03":
            img, _, axis = ref.render_psf(scene_from_package(pkg))
            got = ref.encircled(img, axis, b.task["encircled_radius_arcmin"])
            assert got == pytest.approx(b.refs["F03.3"]["value"], abs=0.005)


def test_e01_states_what_it_withholds():
    """Issue 29 item 5: E01's package stated a centred, fully correcting ICL (decentre 0 +- 0.02 mm) while the
    observation was rendered decentred with a residual; what the observation is to find is now unknown, and so
    are the anterior radius and the vault that E01.2 scores not identifiable (the thin-phase image fixes the
    thin power only; the paraxial solve needs the vault)."""
    from icl.pro.generate import E01_QUERIES

    e = base_eye("E00", KEY, False)
    b = BUILDERS["E01"](Ctx(KEY.rng("test", "E01", 0), e, fit_icl(e, family("F00", KEY, False)), "E00", "F00"))
    imp = b.cases["base"]["implant"]
    for name in ("decentre_x", "decentre_y", "thin_power", "anterior_radius", "vault"):
        assert imp[name]["value"] is None and imp[name]["status"] == "unknown", name
    assert b.refs["E01.1"]["truth"]["decentre_mm"][0] != 0.0
    assert E01_QUERIES["vault_mm"] == E01_QUERIES["icl_anterior_radius_mm"] == "not_identifiable"
    assert "vault" in b.task["identifiability"]


def test_the_residual_sign_shows_with_a_clear_hole(eye_family):
    """Issue 29 item 6: C02 and E02 called the residual's sign undeterminable; with the clear hole the hole's
    uncorrected light adds coherently to the optic's, so +R and -R give different PSFs (not so with a solid
    optic, whose defocus PSF is even in R)."""
    e, f = eye_family
    k = -e["refraction"]

    def psf(res: float, hole_model: str) -> np.ndarray:
        pkg = make_package(e, f, "E00", "F00", hole_model=hole_model, thin_power=res - k)
        return ref.render_psf(scene_from_package(pkg))[0]

    for res in (0.3, 0.6):
        a, b = psf(res, "clear"), psf(-res, "clear")
        assert np.abs(a - b).sum() / b.sum() > 0.05
        a, b = psf(res, "solid"), psf(-res, "solid")
        assert np.abs(a - b).sum() / b.sum() < 1e-6

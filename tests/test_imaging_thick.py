"""Field deviations of the thick eye (reduced size) and `icl render` with an image extent."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.eye.package import load_package_dir
from icl.imaging.fieldmap import field_deviations
from icl.imaging.thick import iris_pupil, thick_pupil_at, wavefront_terms
from icl.io import load_npz
from icl.optics import Detector, Scene, Source, render
from icl.optics.image_source import write_map_npz
from icl.optics.model import Pupil


@pytest.fixture(scope="module")
def pkg():
    return load_package_dir(cases_dir() / "examples" / "eye")


def test_thick_eye_deviation_grows_with_field(pkg):
    # 128 samples at 8 arcsec (+-8.5 arcmin): the 10 deg PSF (EE80 radius 4.3 arcmin at full size) fits.
    eye = thick_pupil_at(pkg.eye, pkg.implant, 550.0)
    d0, d5, d10 = field_deviations(eye, [(0.0, 0.0), (5.0, 0.0), (10.0, 0.0)], 550.0, 8.0, np.array([10.0]),
                                   period=128)
    # On axis the field's PSF is the on-axis PSF: nothing to deviate (round-off only).
    assert d0.tv_nominal < 1e-12 and d0.tv_translated < 1e-12
    assert d0.shift_arcmin == pytest.approx((0.0, 0.0), abs=1e-9)
    # Full-size measurements (docs/imaging.md): L1 = 2 TV after re-centring 0.70 (5 deg), 1.27 (10 deg).
    assert 0.2 < d5.tv_translated < d10.tv_translated
    assert d5.tv_nominal < d10.tv_nominal
    assert d10.strehl_ratio < d5.strehl_ratio < 1.0
    # The shift is along the field (+x), none across it (the eye is symmetric about y = 0).
    assert d10.shift_arcmin[0] > 0.5 and abs(d10.shift_arcmin[1]) < 1e-6
    # The hole wall vignettes more off axis, so a little less flux reaches the retina.
    assert d10.flux_ratio < d5.flux_ratio < 1.0


def test_thick_eye_wavefront_terms(pkg):
    t0 = wavefront_terms(pkg.eye, pkg.implant, 0.0, 0.0)
    t10 = wavefront_terms(pkg.eye, pkg.implant, 10.0, 0.0)
    t10y = wavefront_terms(pkg.eye, pkg.implant, 0.0, 10.0)
    # Centred eye: no tilt, astigmatism or coma on axis (round-off in the fit).
    assert max(abs(t0[k]) for k in ("tilt", "astigmatism", "coma")) < 1e-5
    # Off axis the plane retina adds defocus and the eye adds coma along the field direction.
    assert t10["defocus"] < t0["defocus"] - 0.3 and t10["coma"] > 0.05
    # Rotational symmetry: the same terms in the field's own frame for a field along +y.
    for k in ("defocus", "astigmatism", "coma", "spherical"):
        assert t10y[k] == pytest.approx(t10[k], abs=1e-6)


def test_iris_pupil_is_the_model_circle_on_axis_without_implant(pkg):
    # On axis the paraxial entrance pupil is the iris image to first order; the cornea's pupil
    # aberration shrinks the real one slightly (measured 3.185 vs 3.2 mm).
    p = iris_pupil(pkg.eye, None, 0.0, 0.0)
    assert p["width_tangential_mm"] == pytest.approx(p["width_sagittal_mm"], abs=1e-9)
    assert p["width_tangential_mm"] == pytest.approx(3.2, rel=0.01)
    # Off axis it stretches along the field direction.
    p20 = iris_pupil(pkg.eye, None, 20.0, 0.0)
    assert p20["width_tangential_mm"] > p20["width_sagittal_mm"] + 0.02


def test_icl_render_reads_an_image_extent(tmp_path):
    from icl.cli import main

    lamp = np.zeros((3, 5))
    lamp[1, :] = 1.0
    lamp[0, 2] = 2.0
    write_map_npz(tmp_path / "lamp.npz", lamp, 15.0)
    spec = {"pupil": {"diameter_mm": 3.2, "eye_excess_d": 8.0, "icl": {"power_d": -8.0, "hole_mm": 0.36}},
            "detector": {"n": 64, "pitch_arcsec": 4.0},
            "sources": [{"id": "lamp", "x_arcmin": 0.4, "y_arcmin": -0.3, "flux": 2.0,
                         "extent": {"kind": "image", "path": "lamp.npz"}}]}
    (tmp_path / "scene.json").write_text(json.dumps(spec))
    res = CliRunner().invoke(main, ["render", str(tmp_path / "scene.json"), "-o", str(tmp_path / "out.npz")])
    assert res.exit_code == 0, res.output
    got = load_npz(tmp_path / "out.npz",
                   required=["components", "scene", "x_arcmin", "y_arcmin", "angular_pixel_arcsec"])
    # The command renders what the library renders from the same file (relative path resolved
    # against the scene file).
    ref = render(Scene.from_dict(spec, file=str(tmp_path / "scene.json")))
    np.testing.assert_array_equal(got["scene"], ref.scene)
    # The map is not a point: the extended source differs from a point of the same flux.
    point = render(Scene((Source("p", 0.4, -0.3, flux=2.0),), Pupil.from_dict(spec["pupil"], "pupil"),
                         Detector(64, 4.0))).scene
    assert np.abs(got["scene"] - point).sum() > 0.1 * point.sum()
    # Its light is where the map is: row 0 is the lowest (-y), so the weight-2 cell there moves the
    # centroid by -(2/7) * 15 arcsec = -0.0714 arcmin; the 4.3 arcmin window cuts the halo a little
    # differently for the two (measured -0.0694).
    y = got["y_arcmin"]
    cy = float((got["scene"].sum(axis=1) * y).sum() / got["scene"].sum())
    cy_point = float((point.sum(axis=1) * y).sum() / point.sum())
    assert cy - cy_point == pytest.approx(-2.0 / 7.0 * 0.25, abs=0.005)
    ledger = json.loads((tmp_path / "out.npz.ledger.json").read_text())
    assert ledger["sources"]["lamp"]["source_flux"] == pytest.approx(2.0)


def test_icl_render_names_a_missing_map_file(tmp_path):
    from icl.cli import main

    spec = {"sources": [{"id": "lamp", "extent": {"kind": "image", "path": "absent.npz"}}]}
    (tmp_path / "scene.json").write_text(json.dumps(spec))
    res = CliRunner().invoke(main, ["render", str(tmp_path / "scene.json"), "-o", str(tmp_path / "out.npz")])
    assert res.exit_code != 0
    assert "absent.npz" in res.output

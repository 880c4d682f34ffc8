"""``icl eye-trace`` on the example package, in process (click's CliRunner)."""

import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.eye.package import example_package
from icl.io import load_npz

EXAMPLE = cases_dir() / "examples" / "eye"
ARGS = [f"--{k}={EXAMPLE / (k + '.json')}" for k in ("eye", "implant", "illumination", "detector")]


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("eye") / "run"
    res = CliRunner().invoke(main, ["eye-trace", *ARGS, "--output", str(out)])
    assert res.exit_code == 0, res.output
    return out, res.output


def test_writes_the_four_results_and_a_manifest(traced):
    out, text = traced
    assert {p.name for p in out.iterdir()} == {
        "psf_linear.npz",
        "energy.json",
        "paths.npz",
        "metrics.json",
        "manifest.json",
    }
    assert "recorded on the detector" in text
    psf = load_npz(
        out / "psf_linear.npz",
        required={
            "psf",
            "components",
            "component_names",
            "x_arcmin",
            "y_arcmin",
            "angular_pixel_arcsec",
            "wavelength_nm",
        },
    )
    assert psf["psf"].shape == (128, 128) and float(psf["angular_pixel_arcsec"]) == 4.0
    assert list(psf["component_names"]) == ["primary", "ghost_icl", "ghost_icl_lens"]
    np.testing.assert_allclose(psf["components"].sum(axis=0), psf["psf"], rtol=0, atol=1e-15)
    # docs/conventions.md axes: x_j = (j - (N-1)/2) * pitch.
    assert psf["x_arcmin"][0] == pytest.approx(-(127 / 2) * 4 / 60, rel=1e-14)
    metrics = json.loads((out / "metrics.json").read_text())
    energy = json.loads((out / "energy.json").read_text())
    assert metrics["total_recorded"] == pytest.approx(float(psf["psf"].sum()), rel=1e-12)
    # The primary component is the wave render: its recorded flux is the render ledger's.
    wave = energy["sources"]["L1"]["wave_primary"]
    assert wave["recorded"] == pytest.approx(float(psf["components"][0].sum()), rel=1e-12)
    assert abs(wave["numerical_residual"]) < 1e-9
    # Every path's ray ledger closes to 1e-9 and the incident flux is the source flux.
    assert energy["max_abs_residual"] < 1e-9
    for p, led in energy["sources"]["L1"]["paths"].items():
        assert led["incident"] == pytest.approx(1.0, rel=1e-12), p
    # Ghost weight = product of two reflectances: ~(0.041^2)^2 ~ 2.4e-6 of the flux through the optic.
    assert 1e-6 < energy["sources"]["L1"]["paths"]["ghost_icl"]["outside_detector"] < 5e-6
    # The implanted eye is focused: its paraxial focus lies on the retina (package solved at 550 nm).
    par = metrics["paraxial"]
    assert par["back_focal_z_with_icl_mm"] == pytest.approx(par["retina_z_mm"], abs=1e-6)


def test_ray_sample_holds_branch_weights(traced):
    out, _ = traced
    rays = load_npz(
        out / "paths.npz",
        required={
            "source_index",
            "path_index",
            "u_mm",
            "v_mm",
            "x_mm",
            "y_mm",
            "z_mm",
            "l",
            "m",
            "n",
            "opd_mm",
            "weight",
            "flags",
            "path_names",
            "source_ids",
        },
    )
    names = list(rays["path_names"])
    assert names == ["lens", "hole", "edge", "ghost_icl", "ghost_icl_lens"]
    lens = rays["path_index"] == names.index("lens")
    hole = rays["path_index"] == names.index("hole")
    alive = rays["flags"] == 0
    # A ray is in exactly one primary path; the hole (0.36 mm) takes the centre ray only on a 21-point grid.
    assert np.all(alive[lens] ^ alive[hole])
    assert np.all(rays["weight"][lens & alive] > 0.95)  # four interfaces + two ICL faces: ~3 % Fresnel loss
    ghost = (rays["path_index"] == names.index("ghost_icl")) & alive
    assert np.all(rays["weight"][ghost] < 1e-5)
    np.testing.assert_allclose(rays["l"] ** 2 + rays["m"] ** 2 + rays["n"] ** 2, 1.0, rtol=1e-13)


def test_same_inputs_same_bytes(traced, tmp_path):
    out, _ = traced
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["eye-trace", *ARGS, "--output", str(again)]).exit_code == 0
    for name in ("psf_linear.npz", "paths.npz", "energy.json", "metrics.json"):
        a, b = (out / name).read_bytes(), (again / name).read_bytes()
        if name == "metrics.json":  # it records the input paths, which are the same here
            a, b = json.loads(a), json.loads(b)
        assert a == b, name


def test_ablation_of_the_hole_path(tmp_path):
    res = CliRunner().invoke(main, ["eye-trace", *ARGS, "--paths", "lens", "--output", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    psf = load_npz(
        tmp_path / "a" / "psf_linear.npz",
        required={
            "psf",
            "components",
            "component_names",
            "x_arcmin",
            "y_arcmin",
            "angular_pixel_arcsec",
            "wavelength_nm",
        },
    )
    assert list(psf["component_names"]) == ["primary"]
    energy = json.loads((tmp_path / "a" / "energy.json").read_text())
    assert set(energy["sources"]["L1"]["paths"]) == {"lens"}
    # Without the hole's light the detector records less than the lens path's transmitted share (~0.954).
    assert float(psf["psf"].sum()) < energy["sources"]["L1"]["paths"]["lens"]["transmitted"]


def test_bad_input_exits_2_naming_file_and_field(tmp_path):
    pkg = copy.deepcopy(example_package())
    pkg["implant"]["vault"]["distance"]["status"] = "unknown"
    for name, obj in pkg.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(obj))
    args = [f"--{k}={tmp_path / (k + '.json')}" for k in ("eye", "implant", "illumination", "detector")]
    res = CliRunner().invoke(main, ["eye-trace", *args, "--output", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert f"{tmp_path / 'implant.json'}: vault.distance.value" in res.output
    res = CliRunner().invoke(
        main, ["eye-trace", *ARGS, "--paths", "lens,mirror", "--output", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "--paths" in res.output
    assert not (tmp_path / "o").exists()

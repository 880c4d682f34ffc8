"""``icl render`` in-process: outputs, ledger file and clear errors for bad specs."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.io import load_npz
from icl.optics import Scene


def test_render_example(tmp_path):
    out = tmp_path / "example.npz"
    res = CliRunner().invoke(main, ["render", str(cases_dir() / "examples" / "scene.json"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    arrays = load_npz(out, required=["components", "scene", "angular_pixel_arcsec", "x_arcmin", "y_arcmin"])
    assert arrays["components"].shape == (2, 512, 512)
    np.testing.assert_array_equal(arrays["scene"], arrays["components"].sum(axis=0))
    assert float(arrays["angular_pixel_arcsec"]) == 4.0
    np.testing.assert_allclose(arrays["x_arcmin"][[0, -1]], [-255.5 * 4 / 60, 255.5 * 4 / 60])
    ledger = json.loads((tmp_path / "example.npz.ledger.json").read_text())
    assert abs(ledger["total"]["numerical_residual"]) < 1e-12
    assert ledger["sources"]["L2"]["source_flux"] == pytest.approx(0.5)


def test_scene_json_round_trip():
    spec = json.loads((cases_dir() / "examples" / "scene.json").read_text())
    scene = Scene.from_dict(spec)
    assert Scene.from_dict(scene.to_dict()) == scene


@pytest.mark.parametrize(
    "patch,field",
    [
        ({"sources": []}, "sources"),
        ({"pupil": {"diameter_mm": -1}}, "pupil.diameter_mm"),
        ({"pupil": {"icl": {"hole": "glass"}}}, "pupil.icl.hole"),
        ({"pupil": {"colour": 1}}, "pupil"),
        ({"sources": [{"id": "a/b"}]}, "sources[0].id"),
        ({"sources": [{"flux": float("nan")}]}, None),
        ({"sources": [{"spectrum": [[550, 1, 2]]}]}, "sources[0].spectrum[0]"),
        ({"sources": [{"extent": {"kind": "disk"}}]}, "sources[0].extent.diameter_arcmin"),
        ({"detector": {"n": 3}}, "detector.n"),
    ],
    ids=[
        "no-sources",
        "negative-pupil",
        "bad-hole",
        "unknown-field",
        "path-id",
        "nan",
        "spectrum",
        "disk",
        "tiny",
    ],
)
def test_bad_specs_name_file_and_field(tmp_path, patch, field):
    spec = {"sources": [{"id": "L1"}]}
    spec.update(patch)
    path = tmp_path / "bad.json"
    text = json.dumps(spec).replace("NaN", "NaN")
    path.write_text(text)
    res = CliRunner().invoke(main, ["render", str(path), "-o", str(tmp_path / "o.npz")])
    assert res.exit_code == 2
    assert str(path) in res.output
    if field:
        assert field in res.output
    assert not (tmp_path / "o.npz").exists()

"""Image-extent sources, far-apart sources, the fixed display mapping and the scene/mtf commands."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from icl.errors import InputError
from icl.imaging.display import DisplayMapping, to_rgb8
from icl.optics import Detector, Extent, Pupil, Scene, Source, render
from icl.optics.image_source import ImageMap, write_map_npz

PUP = Pupil(3.2, 8.0)
DET = Detector(96, 4.0)


@pytest.mark.parametrize("pos", [(0.0, 0.0), (1.37, -2.11)], ids=["centre", "offset"])
def test_one_tiny_cell_is_a_point(pos):
    point = render(Scene((Source("p", *pos),), PUP, DET)).scene
    cell = Extent("image", image=ImageMap(np.ones((1, 1)), 1e-6))
    img = render(Scene((Source("p", *pos, extent=cell),), PUP, DET)).scene
    # Points take the engine's decimated far-field grid and short least-squares taps, the map the
    # full-rate grid and the tapered kernel: two discretisations, measured 1.2e-8 apart (peak 1e-2).
    np.testing.assert_allclose(img, point, atol=1e-5 * point.max())


def test_fine_map_of_a_disk_matches_the_disk_extent():
    d, q, ss = 3.0, 0.5, 8
    n = int(np.ceil(d * 60 / q)) + 2
    c = (np.arange(n * ss) - (n * ss - 1) / 2) * q / 60 / ss
    cover = (np.hypot(c[None, :], c[:, None]) <= d / 2).reshape(n, ss, n, ss).mean(axis=(1, 3))
    src = dict(x_arcmin=2.3, y_arcmin=1.1)
    img = render(Scene((Source("d", **src, extent=Extent("image", image=ImageMap(cover, q))),), PUP, DET)).scene
    disk = render(Scene((Source("d", **src, extent=Extent("disk", d)),), PUP, DET)).scene
    # The 8x8-supersampled edge coverage differs from the exact disk by ~1/(8 n) of the edge cells:
    # measured max 2.4e-8 against a peak of 5.8e-4.
    assert np.abs(img - disk).max() < 1e-4 * disk.max()


def test_map_flux_orientation_and_linearity():
    m = np.zeros((5, 9))
    m[4, 8] = 1.0  # top-right cell: +y row, +x column
    res = render(Scene((Source("w", flux=2.0, extent=Extent("image", image=ImageMap(m, 40.0))),), Pupil(3.2, 0.0, None),
                       Detector(128, 4.0)))
    img = res.scene
    i, j = np.unravel_index(np.argmax(img), img.shape)
    assert res.y_arcmin[i] == pytest.approx(2 * 40 / 60, abs=0.1) and res.x_arcmin[j] == pytest.approx(4 * 40 / 60, abs=0.1)
    led = res.ledgers[0]
    assert led["recorded"] + led["outside_window"] + led["beyond_grid"] == pytest.approx(2.0, rel=1e-12)


def test_far_apart_sources_each_render_as_alone():
    det = Detector(256, 12.0)  # 51 arcmin across
    a, b = Source("a", -18.0, 12.0), Source("b", 19.0, -15.0, extent=Extent("disk", 1.0))
    both = render(Scene((a, b), PUP, det))
    for k, s in enumerate((a, b)):
        alone = render(Scene((s,), PUP, det))
        # Alone, the support covers only this source's offset, so the FFT grid differs; the two
        # renders agree to the engine's sampling error (measured below 1e-7 of the peak).
        np.testing.assert_allclose(both.components[k], alone.scene, atol=1e-6 * alone.scene.max())
    # No wrap-around: far from both sources (the opposite corners) each component is tiny but positive.
    assert 0 < both.components[0][5, 250] < 1e-4 * both.components[0].max()
    assert both.ledger["recorded"] > 1.9


def test_image_extent_json_round_trip_and_errors(tmp_path):
    write_map_npz(tmp_path / "m.npz", np.array([[1.0, 2.0], [0.0, 1.0]]), 30.0)
    spec = {"sources": [{"id": "w", "extent": {"kind": "image", "path": "m.npz"}}], "detector": {"n": 32}}
    f = tmp_path / "s.json"
    f.write_text(json.dumps(spec))
    scene = Scene.from_dict(json.loads(f.read_text()), file=str(f))
    assert scene.sources[0].extent.image.shape == (2, 2)
    assert scene.to_dict()["sources"][0]["extent"] == {"kind": "image", "path": "m.npz"}
    inline = {"kind": "image", "map": [[1, 1]], "pitch_arcsec": 10}
    assert Extent.from_dict(inline, "e").image == ImageMap([[3, 3]], 10.0)  # only the shape counts
    bad = [({"kind": "image", "map": [[1, -1]], "pitch_arcsec": 1}, "e.map"),
           ({"kind": "image", "map": [[0, 0]], "pitch_arcsec": 1}, "e.map"),
           ({"kind": "image", "map": [[1]], "pitch_arcsec": 0}, "e.pitch_arcsec"),
           ({"kind": "image", "map": [[1]]}, "e.pitch_arcsec"),
           ({"kind": "image"}, "e.path"),
           ({"kind": "disk", "diameter_arcmin": 1, "path": "x"}, "e.path")]
    for d, field in bad:
        with pytest.raises(InputError) as exc:
            Extent.from_dict(d, "e", "s.json")
        assert exc.value.field == field and exc.value.file == "s.json"
    with pytest.raises(InputError) as exc:
        Extent.from_dict({"kind": "image", "path": "missing.npz"}, "e", str(f))
    assert "missing.npz" in str(exc.value)


def test_display_mapping_is_fixed():
    comp = np.zeros((1, 4, 4))
    comp[0, 0, 0] = 1.0
    mapping = DisplayMapping(white=2.0, knee=0.01)
    a = to_rgb8(comp, np.ones((1, 3)), 60.0, mapping)
    b = to_rgb8(comp * 0.5, np.ones((1, 3)), 60.0, mapping)
    assert a[-1, 0, 0] == round(255 * np.log1p(100) / np.log1p(200))  # row 0 (+y low) shown at the bottom
    assert b[-1, 0, 0] < a[-1, 0, 0]  # no per-image normalisation
    assert to_rgb8(comp * 10, np.ones((1, 3)), 60.0, mapping)[-1, 0, 0] == 255


def test_scene_command_writes_variants_and_figure(tmp_path):
    from icl.cli import main

    spec = {"detector": {"n": 48, "pitch_arcsec": 6.0},
            "sources": [{"id": "a", "x_arcmin": 1.0, "flux": 100.0}],
            "variants": {"clear": {"icl": None, "eye_excess_d": 0.0}, "hole": {"icl": {"hole_mm": 0.36}}},
            "order": ["hole", "clear"]}
    f = tmp_path / "spec.json"
    f.write_text(json.dumps(spec))
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["scene", str(f), "--output", str(out), "--figure", str(tmp_path / "fig.png")])
    assert r.exit_code == 0, r.output
    for v in ("clear", "hole"):
        assert (out / v / "preview.png").stat().st_size > 0
        met = json.loads((out / v / "metrics.json").read_text())
        assert met["exposure"]["same_for_all_variants"] is True
    first = (out / "clear" / "retinal_linear.npz").read_bytes()
    assert CliRunner().invoke(main, ["scene", str(f), "--output", str(out), "--force"]).exit_code == 0
    assert (out / "clear" / "retinal_linear.npz").read_bytes() == first  # deterministic
    spec["variants"]["bad"] = {"diameter_mm": -1}
    f.write_text(json.dumps(spec))
    r = CliRunner().invoke(main, ["scene", str(f), "--output", str(out)])
    assert r.exit_code == 2 and "variants.bad.diameter_mm" in r.output


def test_mtf_command(tmp_path):
    from icl.cli import main

    f = tmp_path / "m.json"
    f.write_text(json.dumps({"pupil": {"icl": None, "eye_excess_d": 0.0}, "spectrum": [[550.0, 1.0]],
                             "freqs_cpd": [0.0, 50.0]}))
    r = CliRunner().invoke(main, ["mtf", str(f), "--output", str(tmp_path / "o.json")])
    assert r.exit_code == 0, r.output
    o = json.loads((tmp_path / "o.json").read_text())
    np.testing.assert_allclose(o["mtf_radial"], o["mtf_diffraction_limit_shortest_wavelength"], atol=1e-3)
    assert o["per_wavelength"]["550"]["strehl"]["from_psf"] == pytest.approx(1.0, abs=1e-12)

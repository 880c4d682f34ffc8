"""One documented frame for every public image (docs/conventions.md, "Frames").

The observer sees a source at +x toward +x, and a minus optic decentred toward +x moves its pattern toward
+x ("with motion"): light deviated by the optic toward -x lands beside the source's retinal spot and the
inverted retinal image is seen toward +x. The ``visual`` frame draws both so; the ``halo`` frame is the halo
track's stated sign convention, which draws the optic's prism the other way.
"""

import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.eye.ghosts import retinal_angles
from icl.eye.package import load_package_dir
from icl.eye.pupil import ThickPupil
from icl.eye.run import run
from icl.halo.cases import halo_scene, load_cases
from icl.io import load_json, write_json
from icl.optics import ICL, Detector, Pupil, Scene, Source, render
from icl.optics.mft import render_mft
from icl.optics.render import PointReflected, propagated_pupil

EXAMPLE = cases_dir() / "examples" / "eye"


def _core_x(img: np.ndarray, axis: np.ndarray) -> float:
    """x of the centroid within 1 arcmin of the brightest pixel (the pattern's core)."""
    x, y = np.meshgrid(axis, axis)
    iy, ix = np.unravel_index(np.argmax(img), img.shape)
    w = np.hypot(x - x[iy, ix], y - y[iy, ix]) < 1.0
    return float((img * x)[w].sum() / img[w].sum())


def test_eye_trace_draws_a_source_and_a_decentred_minus_icl_toward_plus_x():
    """Before, the source at +2 arcmin was drawn at +1.95 and the minus ICL decentred +0.1 mm at -2.94."""
    pkg = load_package_dir(EXAMPLE)
    assert pkg.implant.decentre_mm == (0.0, 0.0)
    src = dataclasses.replace(pkg, sources=(dataclasses.replace(pkg.sources[0], x_arcmin=2.0),))
    dec = dataclasses.replace(pkg, implant=dataclasses.replace(pkg.implant, decentre_mm=(0.1, 0.0)))
    for p, low, high in ((src, 1.9, 2.1), (dec, 2.5, 3.5)):
        res = run(p, paths=("lens",))
        x = _core_x(res.psf["psf"], res.psf["x_arcmin"])
        assert low < x < high, x
        assert res.metrics["frame"] == "visual" and "with motion" in res.metrics["frame_definition"]


def test_eye_trace_writes_its_frame(tmp_path):
    args = [f"--{k}={EXAMPLE / (k + '.json')}" for k in ("eye", "implant", "illumination", "detector")]
    res = CliRunner().invoke(main, ["eye-trace", *args, "--output", str(tmp_path / "out"), "--paths", "lens"])
    assert res.exit_code == 0, res.output
    assert load_json(tmp_path / "out" / "metrics.json")["frame"] == "visual"


def test_ghost_angles_are_the_point_reflection_of_the_halo_frame():
    pkg = load_package_dir(EXAMPLE)
    src = Source(x_arcmin=1.5, y_arcmin=-0.5)
    vis = retinal_angles(pkg.eye, pkg.implant, "ghost_icl_lens", src, 550.0, 21, frame="visual")
    halo = retinal_angles(pkg.eye, pkg.implant, "ghost_icl_lens", src, 550.0, 21, frame="halo")
    np.testing.assert_allclose(vis[0] - 1.5, -(halo[0] - 1.5), atol=1e-9)
    np.testing.assert_allclose(vis[1] + 0.5, -(halo[1] + 0.5), atol=1e-9)
    np.testing.assert_array_equal(vis[2], halo[2])


def test_icl_render_states_its_frame_and_reads_the_halo_convention(tmp_path):
    """A scene JSON is drawn in the visual frame unless it names ``"frame": "halo"``; the ledger says which."""
    base = {"pupil": {"icl": {"decentre_mm": [0.2, 0.0]}}, "detector": {"n": 256},
            "sources": [{"id": "L1"}]}
    xs = {}
    for name, extra in (("visual", {}), ("halo", {"frame": "halo"})):
        write_json(tmp_path / f"{name}.json", {**base, **extra})
        out = tmp_path / f"{name}.npz"
        res = CliRunner().invoke(main, ["render", str(tmp_path / f"{name}.json"), "-o", str(out)])
        assert res.exit_code == 0, res.output
        ledger = load_json(tmp_path / f"{name}.npz.ledger.json")
        assert ledger["frame"] == name and ledger["scene"]["frame"] == name
        with np.load(out) as arrays:
            xs[name] = _core_x(arrays["scene"], arrays["x_arcmin"])
    assert xs["visual"] == pytest.approx(5.5004, abs=0.02) and xs["halo"] == pytest.approx(-5.5004, abs=0.02)


def test_unknown_frame_is_refused():
    from icl.errors import InputError

    with pytest.raises(InputError, match="frame"):
        Scene.from_dict({"sources": [{}], "frame": "retina"})


def test_halo_scenes_keep_the_tracks_convention():
    cases, _ = load_cases()
    assert all(c.scene.frame == "halo" for case in cases for c in case.conditions)
    h09 = next(case for case in cases if case.id == "H09")
    cond = h09.conditions[1]
    assert cond.prism_arcmin()[0] == pytest.approx(-5.5004, abs=1e-4)
    with pytest.raises(Exception, match="own frame"):
        halo_scene({**cond.scene_json, "frame": "visual"})


def test_point_reflection_of_a_thick_pupil_is_its_reflected_implant_and_field():
    """The engine reflects any pupil model by reversing its samples; for a centred host eye that is the
    implant decentred the other way, seen from the opposite field (what the professional references did
    before the frame moved into the engine)."""
    pkg = load_package_dir(EXAMPLE)
    imp = dataclasses.replace(pkg.implant, decentre_mm=(0.08, -0.03))
    a = ThickPupil(pkg.eye, imp, (1.0, 0.5), ("lens", "hole"), fresnel=False)
    b = ThickPupil(pkg.eye, dataclasses.replace(imp, decentre_mm=(-0.08, 0.03)), (-1.0, -0.5), ("lens", "hole"),
                   fresnel=False)
    n, du, lam = 96, 4.0e-5, 550e-9
    fa, fb = PointReflected(a).field(n, du, lam), b.field(n, du, lam)
    assert np.abs(fa - fb).max() < 1e-6 * np.abs(fb).max()


def test_fft_and_mft_reflect_alike():
    """The FFT engine reflects a thin pupil by its decentre, the matrix-Fourier solver by the far-field
    offsets: two ways to the same visual image."""
    pupil = Pupil(diameter_mm=3.0, icl=ICL(decentre_mm=(0.15, -0.05), hole_mm=0.36, optic_opd_um=13.3))
    for frame in ("visual", "halo"):
        scene = Scene((Source(x_arcmin=0.7),), pupil, Detector(n=64, pitch_arcsec=6.0), frame)
        assert (propagated_pupil(scene) is pupil) == (frame == "halo")
        fft = render(scene).scene
        idx = np.arange(0, 64, 3)
        mft = render_mft(scene, idx, idx)[0]
        ref = fft[np.ix_(idx, idx)]
        assert np.abs(mft - ref).sum() / ref.sum() < 1e-5, frame

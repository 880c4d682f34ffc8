"""The thick eye's second wave path (icl.eye.far_field: traced pupil at the matrix-Fourier solver's own
nodes) against the FFT engine's thick references, and a mis-sampled thick reference caught and kept out of
ranking."""

import numpy as np
import pytest
from icl.crosscheck import attach, crosscheck, crosscheck_images, not_ranked_reason
from icl.eye.far_field import ThickMftSampling, footprints, render_thick_mft
from icl.keys import ReleaseKey
from icl.optics import Sampling, render
from icl.optics.mft import MftSampling
from icl.pro import thick as th
from icl.pro.generate import base_eye, family, fit_icl, make_package

KEY = ReleaseKey.from_seed(3)
PAIR_TOL = 0.002  # the smallest PSF tolerance of C05 and D02 (their pair checks)
IDX = np.arange(1, 128, 4)  # every 4th row and column of the 128 x 128 reference (keeps the tests fast)


@pytest.fixture(scope="module")
def cases():
    e = base_eye("E00", KEY, False)
    f = fit_icl(e, family("F00", KEY, False))
    out = {}
    for model in ("clear", "black", "solid"):
        pkg = make_package(e, f, "E00", "F00", hole_model=model, pupil_diameter=3.2, decentre_x=0.08,
                           sources=[("L1", 2.1, -0.6, [[550.0, 1.0]])])
        scene = th.thick_scene(pkg)
        out[model] = (scene, render(scene).scene)
    return out


def test_thick_second_path_finds_the_footprints_by_itself(cases):
    # Its own bisection: the footprints lie where the FFT engine's pupil model (a separate search) puts
    # them, to 1e-9 mm; the hole's traced footprint is round to 1e-5 mm (its wall shades an oblique beam).
    scene, _ = cases["clear"]
    lam = 550.0
    own = footprints(scene.pupil, lam)
    other = scene.pupil.footprints(lam)
    for path in ("hole", "lens"):
        for a, b in zip(own[path], other[path], strict=True):
            assert a.side == b.side
            assert abs(a.radius - b.radius) < 1e-9 and abs(a.cu - b.cu) < 1e-9 and abs(a.cv - b.cv) < 1e-9
    assert own["hole"][0].roundness < 1e-5
    # The hole's footprint is the 0.36 mm hole magnified by the cornea (about 0.40 mm on the entrance pupil).
    assert 0.19 < own["hole"][0].radius < 0.21


def test_thick_second_path_converges_in_its_pupil_nodes(cases):
    scene, _ = cases["clear"]
    coarse, stats = render_thick_mft(scene, IDX, IDX)
    fine, fine_stats = render_thick_mft(scene, IDX, IDX, ThickMftSampling(MftSampling(3.0, 20, 4)))
    assert np.abs(coarse - fine).sum() / fine.sum() < 1e-6
    assert fine_stats[0]["nodes"] > stats[0]["nodes"] and stats[0]["transmission_mismatch"] == 0


@pytest.mark.parametrize("model", ["clear", "black", "solid"])
def test_correct_thick_reference_passes_and_is_ranked(cases, model):
    scene, img = cases[model]
    rec = crosscheck(scene, img, {"full_l1": PAIR_TOL}, summed=True, stride=4)
    assert [m["name"] for m in rec["methods"]] == ["icl.eye.pupil.ThickPupil + icl.optics.render",
                                                   "icl.eye.far_field + icl.optics.mft"]
    assert "optiland" in rec["methods"][1]["tracer"]
    full = rec["metrics"]["full_l1"]
    assert full["tolerance"] == PAIR_TOL and full["limit"] == pytest.approx(PAIR_TOL / 3)
    # Both paths resolve the far field to ~1e-6 (the FFT engine with filtered thick coverages, plain ones gave
    # 2-3e-4: the cells' sinc in the wings).
    assert rec["ranked"] and full["ok"] and full["value"] < 1e-5
    assert rec["second_path"]["transmission_mismatch"] == 0 and rec["second_path"]["pupil_nodes"] > 1000
    assert not_ranked_reason(attach({}, {"cases": {"a": rec}, "ranked": True, "reason": None})) is None


def test_misampled_thick_reference_is_caught_and_marked_not_ranked(cases):
    # The FFT engine's thick pupil traced on too coarse a grid (one ray per node, about 40 samples across
    # the 3.2 mm pupil, 5 across the hole) with an FFT period no longer than the window (its periodic
    # copies fold in): the reference is wrong by more than a third of the pair tolerance, and the second
    # path says so.
    scene, good = cases["clear"]
    bad = render(scene, Sampling(fft_factor=1.0, min_pupil_samples=32, min_period_arcmin=24.0)).scene
    assert np.abs(bad - good).sum() / good.sum() > PAIR_TOL / 3
    doc = attach({}, crosscheck_images({"clear": scene}, {"clear": bad}, {"full_l1": PAIR_TOL}, "-"))
    case = doc["crosscheck"]["cases"]["clear"]
    assert not case["ranked"] and case["metrics"]["full_l1"]["value"] > PAIR_TOL / 3
    assert "full_l1" in not_ranked_reason(doc) and "case clear" in doc["not_ranked"]


def test_misampled_second_path_is_caught_too(cases):
    # Too few quadrature nodes on the second path (half a node per cycle): the disagreement is found
    # whichever side is wrong.
    scene, img = cases["clear"]
    for smp in (ThickMftSampling(MftSampling(0.5, 2, 3)), MftSampling(0.5, 2, 3)):
        rec = crosscheck(scene, img, {"full_l1": PAIR_TOL}, summed=True, stride=4, sampling=smp)
        assert not rec["ranked"] and "full_l1" in rec["reason"]

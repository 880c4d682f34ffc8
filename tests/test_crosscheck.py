"""The second wave solver (matrix Fourier transform) against the Airy pattern and the FFT engine, the
reference cross-check, and scorers leaving a reference that fails it out of the ranking."""

import numpy as np
import pytest
from analytic import airy_pixel_flux
from icl.crosscheck import attach, crosscheck, not_ranked_reason
from icl.halo.cases import load_cases
from icl.halo.evaluate import TERMS, ReferenceCondition, condition_errors, evaluate
from icl.halo.release import build_reference
from icl.optics import ICL, Detector, Pupil, Sampling, Scene, Source, render
from icl.optics.mft import MftSampling, render_mft
from icl.optics.render import psf_samples

SCALES = {k: s for k, (_, s) in TERMS.items()}


def _conditions():
    return {c.id: c for case in load_cases()[0] for c in case.conditions}


@pytest.mark.parametrize("lam_nm,d_mm", [(450, 4.8), (650, 2.8)])
def test_mft_gives_the_airy_pattern_on_every_pixel(lam_nm, d_mm):
    # Clear pupil, source off the pixel grid: the pixel-integrated Airy pattern (8 x 8 Gauss per pixel).
    src = Source(x_arcmin=0.37, y_arcmin=-0.21, spectrum=((float(lam_nm), 1.0),))
    scene = Scene((src,), Pupil(diameter_mm=d_mm, eye_excess_d=0.0, icl=None), Detector(n=96))
    img = render_mft(scene)[0]
    x = scene.detector.axis_arcmin
    ref = airy_pixel_flux(x, x, 4.0, lam_nm * 1e-9, d_mm * 1e-3, centre=(0.37, -0.21))
    assert np.abs(img - ref).max() <= 1e-7 * ref.max()
    assert np.abs(img - ref).sum() / ref.sum() <= 1e-6


def test_mft_converges_spectrally_in_its_pupil_nodes():
    # Decentred hole, cylinder, off-axis source: the pupil quadrature follows every edge exactly.
    pupil = Pupil(icl=ICL(hole_mm=0.36, cylinder_d=0.35, axis_deg=20, decentre_mm=(0.15, 0.10)))
    scene = Scene((Source(x_arcmin=3.0, y_arcmin=-2.0),), pupil, Detector(n=512))
    idx = np.arange(2, 512, 16)
    coarse = render_mft(scene, idx, idx, MftSampling(nodes_per_cycle=2.0))
    fine = render_mft(scene, idx, idx, MftSampling(nodes_per_cycle=3.0, min_nodes=20))
    assert np.abs(coarse - fine).sum() / fine.sum() < 1e-9
    # ... and the FFT engine agrees with it to its own convergence level (docs/convergence.md).
    fft = render(scene).components[:, idx][:, :, idx]
    assert np.abs(fft - fine).sum() / fine.sum() < 1e-4


def test_every_halo_reference_records_its_crosscheck():
    ref = build_reference(_conditions()["H11_b"])
    check = ref.record["crosscheck"]
    assert check["ranked"] and not_ranked_reason(ref.record) is None
    assert [m["name"] for m in check["methods"]] == ["icl.optics.render", "icl.optics.mft"]
    for name in ("full_l1", "halo_l1", "energy", "centroid_arcmin"):
        m = check["metrics"][name]
        assert m["tolerance"] == SCALES[name] and m["limit"] == pytest.approx(SCALES[name] / 3)
        assert m["ok"] and m["value"] < 1e-4


def test_misampled_reference_is_caught_marked_not_ranked_and_left_out_of_the_ranking(tmp_path):
    conds = _conditions()
    good = [build_reference(conds["H05_a"]), build_reference(conds["H05_b"])]
    bad = [build_reference(conds["H02_a"]), build_reference(conds["H02_b"])]
    # Re-render H02_b with a PSF support window far too small (4 arcmin instead of the detector's
    # 17 arcmin half-width plus the source offsets): its wings are cut off.
    psf_samples.cache_clear()
    short = render(bad[1].condition.scene, Sampling(support_arcmin=4.0))
    psf_samples.cache_clear()
    check = crosscheck(bad[1].condition.scene, short.components, SCALES)
    assert not check["ranked"]
    assert "energy" in check["reason"] and not check["metrics"]["energy"]["ok"]
    attach(bad[1].record, check)
    assert not_ranked_reason(bad[1].record) == check["reason"]
    bad[1].result.components = short.components
    # A perfect submission of every condition; the evaluator ranks the good case only.
    refs = []
    for case_id, pair in (("H05", good), ("H02", bad)):
        items = []
        for r in pair:
            c = r.condition
            items.append(ReferenceCondition(c.id, case_id, c.scene, r.result.components, r.result.x_arcmin,
                                            r.record))
            comps = r.result.components
            np.savez(tmp_path / f"{c.id}.npz", components=comps, scene=comps.sum(0),
                     angular_pixel_arcsec=np.float64(4.0))
        refs.append((case_id, items))
    doc = evaluate(tmp_path, tmp_path, loaded=refs)
    assert list(doc["cases"]) == ["H05"]
    assert doc["not_ranked"] == {"H02": {"H02_b": check["reason"]}}
    assert doc["halo_development_score"] == pytest.approx(100.0)


@pytest.mark.parametrize("cid", ["H05_b", "H11_b"])
def test_evaluator_numbers_agree_on_both_solvers_images(cid):
    # The ring measurer, the polar profiles and every other term of the halo evaluator, computed on the
    # second solver's full image against the reference (FFT engine): each error below a third of its scale.
    ref = build_reference(_conditions()[cid])
    c = ref.condition
    rc = ReferenceCondition(c.id, c.case, c.scene, ref.result.components, ref.result.x_arcmin, ref.record)
    errors = condition_errors(rc, render_mft(c.scene))
    if c.calibration_ring:
        assert "ring" in errors
    for name, err in errors.items():
        assert err <= SCALES[name] / 3, (name, err)
        assert err < 1e-3 * SCALES[name], (name, err)


def test_forensics_genuine_images_carry_their_crosscheck_and_a_failed_one_is_left_out(tmp_path):
    from icl.forensics.evaluate import evaluate as forensics_evaluate
    from icl.forensics.generate import NOISE_SIGMA, write_release
    from icl.io import load_json, write_json

    rel = tmp_path / "rel"
    write_release(rel, 5, counts={"genuine": 4, "NH": 5, "DUP": 1, "SPL": 2})
    labels = load_json(rel / "private" / "labels.json")
    genuine = sorted(i for i, lab in labels.items() if lab["kind"] == "genuine")
    for i in genuine:
        m = labels[i]["crosscheck"]["metrics"]["max_abs"]
        assert labels[i]["crosscheck"]["ranked"] and m["tolerance"] == NOISE_SIGMA
        # The solvers agree to about 1e-7 of the peak (docs/model.md): 0.2-3e-9 here, a fifth of the noise.
        assert m["value"] < NOISE_SIGMA / 5
    # One genuine image re-rendered with a far too small PSF window: caught against the detector noise.
    victim = genuine[0]
    scene = Scene.from_dict(labels[victim]["detail"]["true_scene"])
    psf_samples.cache_clear()
    short = render(scene, Sampling(support_arcmin=1.0)).scene
    psf_samples.cache_clear()
    check = crosscheck(scene, short, {"max_abs": NOISE_SIGMA}, summed=True)
    assert not check["ranked"] and "max_abs" in check["reason"]
    attach(labels[victim], check)
    write_json(rel / "private" / "labels.json", labels)
    sub = tmp_path / "sub.json"
    write_json(sub, {"scores": {i: {"NH": 0.5, "DUP": 0.5, "SPL": 0.5} for i in labels}})
    doc = forensics_evaluate(rel, sub)
    assert doc["not_ranked"] == {victim: check["reason"]}
    assert doc["items"]["NH"]["negatives"] == len(genuine) - 1

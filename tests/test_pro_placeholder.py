"""The lazy participant (placeholders shaped to what the scorer reads, no physics) earns nothing it has no
evidence for: every formerly free check scores 0, no gate passes, and it stays at the constant floor."""

import pytest
from icl.pro.baselines import runner
from icl.pro.generate import generate
from icl.pro.score import score_run

# Templates holding the checks a placeholder used to pass: intervals (A05, E02, E03), sets (A04, A05, F01),
# coverage (E06), rotation (D04), convergence (F02), second methods (F04, F06), anatomy (A01), energy (C01).
TEMPLATES = ["A01", "A04", "A05", "C01", "D04", "E02", "E03", "E06", "F01", "F02", "F04", "F06"]
FORMERLY_FREE = {"A04.1", "A04.2", "A05.1", "A05.2", "D04.1", "E02.1", "E02.2", "E03.1", "E03.2", "E06.1", "F01.2",
                 "F02.1", "F04.2", "F06.1"}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    d = tmp_path_factory.mktemp("lazy")
    rel = d / "rel"
    generate(rel, per_template=4, seed=13, progress=False, only=TEMPLATES)
    out = {}
    for strategy in ("placeholder", "constant"):
        run = d / strategy
        runner.run(strategy, rel / "inputs" / "test", run)
        out[strategy] = score_run(rel, run, "test", run_ok=True)
    return out


def test_placeholders_earn_no_free_check(scored):
    free = [(c["instance"], c["check"], c["score"], c["reason"]) for c in scored["placeholder"]["checks"]
            if c["check"] in FORMERLY_FREE and c["score"]]
    assert not free, free


def test_placeholders_pass_no_gate_they_have_no_evidence_for(scored):
    gates = scored["placeholder"]["gates"]
    for g in ("G1", "G4", "G5"):
        assert gates[g]["pass"] is not True, (g, gates[g])


def test_placeholder_stays_at_the_constant_floor(scored):
    assert scored["placeholder"]["professional_score"] <= scored["constant"]["professional_score"] + 2.0


def test_a_psf_off_by_a_tenth_fails_forward_psf_checks(tmp_path):
    """C02.1, F03.4 and D05.1 are graded on the stated package with the registered 0.02 L1: a PSF with 0.1
    relative L1 of error (which the pupil's noise budget used to admit) fails them on the held-out split."""
    import numpy as np
    from icl.io import load_npz, write_npz
    from icl.pro.reference_answers import write_reference_run

    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=17, progress=False, only=["C02", "D05", "F03"])
    out = tmp_path / "ref"
    write_reference_run(rel, out)
    for p in out.glob("results/*/*/psf_linear.npz"):
        a = load_npz(p, required=("psf",), optional=("x_arcmin", "y_arcmin"), allow_extra=True)
        psf = a["psf"]
        checker = np.indices(psf.shape).sum(axis=0) % 2 * 2.0 - 1.0
        wrong = psf * (1.0 + 0.1 * checker)  # exactly 0.1 relative L1 away, about the same flux
        write_npz(p, **{**{k: a[k] for k in a}, "psf": wrong})
    r = score_run(rel, out, "test", run_ok=True)
    psf_checks = {(c["instance"], c["check"]): c for c in r["checks"] if c["check"] in ("C02.1", "D05.1", "F03.4")}
    assert psf_checks and all(c["score"] == 0.0 for c in psf_checks.values()), psf_checks


def test_manifest_check_reads_the_frozen_submission_manifest(tmp_path):
    """F06.3 on a harness run reads the submission's manifest as frozen in sets.json, never the manifest the
    program wrote into its OUTPUT (a placeholder program writes one that passes)."""
    import json
    import shutil

    from icl.pro.reference_answers import write_reference_run
    from icl.sandbox.signing import artifact_hashes, sign

    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=19, progress=False, only=["F06"])
    out = tmp_path / "plain"
    write_reference_run(rel, out)
    ids = [p.name for p in (rel / "inputs" / "test").iterdir()]

    def harness_run(name, submitted):
        run = tmp_path / name
        shutil.copytree(out, run / "set-0")
        record = sign({"ok": True, "exit_status": 0, "violations": [], "track": "from-scratch",
                       "effective_track": "from-scratch",
                       "artifacts": artifact_hashes(run / "set-0")})
        doc = {"sets": [{"set": "cold", "instances": ids, "output": "set-0", "record": record}]}
        if submitted is not None:
            doc["submission_manifest"] = submitted
        (run / "sets.json").write_text(json.dumps(sign(doc)))
        return run

    def f063(run):
        r = score_run(rel, run, "test")
        return {c["instance"]: c["score"] for c in r["checks"] if c["check"] == "F06.3"}

    frozen = {"format": "icl-pro-submission/1", "random_seeds": {"noise": 3}, "versions": {"submission": "1"}}
    assert set(f063(harness_run("frozen", frozen)).values()) == {1.0}
    # The program's own OUTPUT/manifest.json passes in a plain OUTPUT but counts for nothing in a harness run.
    assert set(f063(out).values()) == {1.0}
    assert set(f063(harness_run("none", None)).values()) == {0.0}
    assert set(f063(harness_run("seedless", {"versions": {"submission": "1"}})).values()) == {0.0}


def test_b01_refraction_with_the_icl_is_not_a_round_guess(tmp_path):
    # A refraction of 0 (the placeholder's answer) passed B01.3 in 3 of 4 instances of a keyed release, the
    # families' residual targets being 0, 0, -0.25 and +0.25 D; B01 now draws 0.15-0.6 D of either sign.
    from icl.io import load_json

    rel = tmp_path / "rel"
    generate(rel, per_template=8, seed=23, progress=False, only=["B01"])
    values = [load_json(p)["checks"]["B01.3"]["value"] for p in (rel / "private" / "references").glob("*.json")]
    assert len(values) == 9 and all(0.15 - 1e-9 <= abs(v) <= 0.6 + 1e-9 for v in values), values

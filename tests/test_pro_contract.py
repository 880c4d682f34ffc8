"""Professional submission contract: a complete submission passes; each defect is reported by file and field."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from icl.io import write_json, write_npz
from icl.pro.cli_harness import COMMANDS
from icl.pro.contract import Issue, manifest_schema, validate_results, validate_submission
from icl.pro.harness import tree_sha256

N = 16  # image side of the test results: small, and even so the origin falls between pixels
PITCH = 4.0  # arcsec, the halo-track pitch


def _png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _axis(n: int = N) -> np.ndarray:
    return (np.arange(n) - (n - 1) / 2) * PITCH / 60.0


def write_case(folder: Path) -> None:
    """Write the six result files of one case, all valid."""
    psf = np.zeros((1, N, N))
    psf[0, N // 2, N // 2] = 0.9
    common = {"x_arcmin": _axis(), "y_arcmin": _axis(), "angular_pixel_arcsec": np.float64(PITCH)}
    write_npz(folder / "psf_linear.npz", psf=psf, wavelength_nm=np.array([550.0]),
              fov_arcmin=np.array([N * PITCH / 60, N * PITCH / 60]), units=np.array("source_flux_per_pixel"),
              normalisation=np.array("source_flux"), **common)
    write_npz(folder / "retinal_linear.npz", image=psf[0] * 3.0, units=np.array("source_flux_per_pixel"),
              components=np.stack([psf[0], 2 * psf[0]]), source_ids=np.array(["L1", "L2"]), **common)
    write_npz(folder / "paths.npz", points_mm=np.zeros((3, 4, 3)), weights=np.array([1.0, 0.5, 0.04]),
              branch=np.array([0, 0, 1]))
    write_json(folder / "energy.json", {"units": "source_flux", "incident": 1.0, "reflected": 0.04,
                                        "transmitted": 0.9, "absorbed": 0.01, "blocked": 0.05, "clipped": 0.0,
                                        "numerical_residual": 0.0})
    write_json(folder / "metrics.json", {"halo_radius_arcmin": "not_detected", "strehl": 0.8})
    (folder / "preview.png").write_bytes(_png())


def make_submission(root: Path) -> Path:
    """A minimal submission that satisfies every clause of the contract."""
    write_json(root / "manifest.json", {
        "format": "icl-pro-submission/1",
        "track": "from-scratch",
        "model": {"name": "thin-eye", "version": "0.1", "description": "thin-phase eye with a holed optic"},
        "tools": [{"name": "python", "version": "3.11"}],
        "versions": {"submission": "1.0"},
        "dependencies": [{"name": "numpy", "version": "2.0", "source": "pypi"}],
        "random_seeds": {"noise": 20261027},
        "compute_budget": {"cpus": 4, "memory_gb": 8, "build_minutes": 90, "run_minutes_per_case": 20},
    })
    (root / "source").mkdir()
    (root / "source" / "solver.py").write_text("print('solve')\n")
    (root / "run").write_text("#!/bin/sh\nexec python3 \"$(dirname \"$0\")/source/solver.py\" \"$1\" \"$2\"\n")
    (root / "run").chmod(0o755)
    write_json(root / "model" / "eye.json", {"cornea": {"radius_mm": {
        "value": 7.8, "unit": "mm", "source": "synthetic design", "uncertainty": 0.05, "status": "synthetic"}}})
    write_json(root / "experiments.json", {"experiments": [
        {"id": "hole-black", "kind": "intervention", "description": "black central disk",
         "files": ["results/C05"]}]})
    (root / "report.md").write_text("# Findings\n\nThe hole transmits light.\n")
    write_case(root / "results" / "C05")
    return root


@pytest.fixture
def sub(tmp_path: Path) -> Path:
    return make_submission(tmp_path / "sub")


def _where(report) -> set[tuple[str, str]]:
    return {(i.file, i.field) for i in report.issues}


def test_complete_submission_is_valid(sub: Path) -> None:
    report = validate_submission(sub)
    assert report.issues == []
    assert report.ok and report.cases == ["C05"]
    assert validate_results(sub / "results").ok


def test_schema_file_is_a_valid_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(manifest_schema())


def test_empty_folder_lists_every_missing_item(tmp_path: Path) -> None:
    report = validate_submission(tmp_path)
    assert {i.file for i in report.issues} == {"manifest.json", "run", "source", "model/eye.json",
                                                 "experiments.json", "report.md", "results"}
    assert all(i.message.startswith("missing") for i in report.issues)


def test_all_defects_are_collected_not_just_the_first(sub: Path) -> None:
    case = sub / "results" / "C05"
    (case / "preview.png").write_bytes(b"GIF89a not a png at all.............")
    energy = json.loads((case / "energy.json").read_text())
    energy["reflected"] = 0.2  # books 1.16 of an incident 1.0
    write_json(case / "energy.json", energy)
    (sub / "run").chmod(0o644)
    (case / "metrics.json").write_text("{not json")
    report = validate_submission(sub)
    assert _where(report) == {("results/C05/preview.png", ""), ("results/C05/energy.json", "numerical_residual"),
                              ("run", ""), ("results/C05/metrics.json", "")}
    assert not report.ok


def test_manifest_schema_errors_name_the_field(sub: Path) -> None:
    m = json.loads((sub / "manifest.json").read_text())
    m["compute_budget"]["cpus"] = 0
    m["random_seeds"]["noise"] = -1
    del m["dependencies"]
    m["surprise"] = 1
    write_json(sub / "manifest.json", m)
    where = _where(validate_submission(sub))
    assert where == {("manifest.json", "compute_budget.cpus"), ("manifest.json", "random_seeds.noise"),
                     ("manifest.json", "")}  # missing and unknown top-level keys are root-level errors
    messages = " ".join(i.message for i in validate_submission(sub).issues)
    assert "dependencies" in messages and "surprise" in messages


def test_psf_grid_units_and_values(sub: Path) -> None:
    f = sub / "results" / "C05" / "psf_linear.npz"
    psf = np.zeros((2, N, N))
    psf[1, 0, 0] = np.nan
    write_npz(f, psf=psf, x_arcmin=_axis() * 2, y_arcmin=_axis(N - 1), angular_pixel_arcsec=np.float64(PITCH),
              fov_arcmin=np.array([1.0, 1.0]), wavelength_nm=np.array([550.0]), units=np.array("counts"),
              normalisation=np.array("peak"))
    where = _where(validate_submission(sub))
    rel = "results/C05/psf_linear.npz"
    assert {(rel, "psf"), (rel, "units"), (rel, "normalisation")} <= where
    # NaN stops the grid checks for the psf (they are meaningless), so fix it and look at the grid.
    psf[1, 0, 0] = 0.0
    write_npz(f, psf=psf, x_arcmin=_axis() * 2, y_arcmin=_axis(N - 1), angular_pixel_arcsec=np.float64(PITCH),
              fov_arcmin=np.array([1.0, 1.0]), wavelength_nm=np.array([550.0]),
              units=np.array("source_flux_per_pixel"), normalisation=np.array("source_flux"))
    where = _where(validate_submission(sub))
    assert where == {(rel, "x_arcmin"), (rel, "y_arcmin"), (rel, "fov_arcmin"), (rel, "wavelength_nm")}


def test_display_mapped_retina_and_missing_npz_key(sub: Path) -> None:
    case = sub / "results" / "C05"
    write_npz(case / "retinal_linear.npz", image=np.zeros((N, N), np.uint8), x_arcmin=_axis(),
              y_arcmin=_axis(), angular_pixel_arcsec=np.float64(PITCH), units=np.array("source_flux_per_pixel"))
    write_npz(case / "paths.npz", points_mm=np.zeros((3, 4, 3)), weights=np.array([1.0, -0.5, 0.0]))
    issues = {(i.file, i.field): i.message for i in validate_submission(sub).issues}
    assert "floating-point" in issues[("results/C05/retinal_linear.npz", "image")]
    assert issues[("results/C05/paths.npz", "branch")] == "missing array"


def test_pickled_npz_is_refused(sub: Path) -> None:
    f = sub / "results" / "C05" / "paths.npz"
    np.savez(f, points_mm=np.zeros((1, 2, 3)), weights=np.ones(1), branch=np.array([{"a": 1}], dtype=object))
    issues = validate_submission(sub).issues
    assert [(i.file, i.field) for i in issues] == [("results/C05/paths.npz", "branch")]
    assert "pickle" in issues[0].message


def test_eye_parameters_need_provenance(sub: Path) -> None:
    write_json(sub / "model" / "eye.json", {"cornea": {"radius_mm": {"value": 7.8, "unit": "mm"}},
                                            "lens": [{"thickness_mm": {"value": 0.1, "unit": "mm", "source": "x",
                                                                       "uncertainty": None, "status": "guess"}}]})
    assert _where(validate_submission(sub)) == {
        ("model/eye.json", "cornea.radius_mm.source"), ("model/eye.json", "cornea.radius_mm.uncertainty"),
        ("model/eye.json", "cornea.radius_mm.status"), ("model/eye.json", "lens[0].thickness_mm.status")}


def test_links_out_of_the_submission_and_traversal_are_refused(sub: Path, tmp_path: Path) -> None:
    secret = tmp_path / "private"
    secret.mkdir()
    (secret / "answer.json").write_text("{}")
    case = sub / "results" / "C05"
    (case / "metrics.json").unlink()
    (case / "metrics.json").symlink_to(secret / "answer.json")
    (sub / "source" / "peek").symlink_to(secret)
    (sub / "source" / "inside").symlink_to(sub / "source" / "solver.py")  # inside the tree: fine
    write_json(sub / "experiments.json", {"experiments": [
        {"id": "a", "kind": "ablation", "description": "x", "files": ["../private/answer.json", "/etc/passwd"]}]})
    issues = {(i.file, i.field): i.message for i in validate_submission(sub).issues}
    assert issues == {
        ("results/C05/metrics.json", ""): "symbolic link points outside the submission",
        ("source/peek", ""): "symbolic link points outside the submission",
        ("experiments.json", "experiments[0].files[0]"):
            "path '../private/answer.json' leaves the submission (absolute, '..' or backslash)",
        ("experiments.json", "experiments[0].files[1]"):
            "path '/etc/passwd' leaves the submission (absolute, '..' or backslash)",
    }


def test_special_files_are_never_opened(sub: Path) -> None:
    fifo = sub / "results" / "C05" / "energy.json"
    fifo.unlink()
    os.mkfifo(fifo)  # opening it would block the validator forever
    issues = validate_submission(sub).issues
    assert [(i.file, i.message) for i in issues] == [
        ("results/C05/energy.json", "special file (device, FIFO or socket) is refused")]


def test_bad_case_ids_and_missing_folder(tmp_path: Path) -> None:
    sub = make_submission(tmp_path / "s")
    (sub / "results" / ".hidden").mkdir()
    (sub / "results" / "notes.txt").write_text("x")
    where = _where(validate_submission(sub))
    assert where == {("results/.hidden", ""), ("results/notes.txt", "")}
    report = validate_submission(tmp_path / "absent")
    assert [str(i) for i in report.issues] == [".: cannot read the submission folder: No such file or directory"]


def test_issue_text_names_file_and_field() -> None:
    assert str(Issue("energy.json", "incident", "missing")) == "energy.json: incident: missing"
    assert str(Issue("report.md", "", "is empty")) == "report.md: is empty"


def test_cli_validate(sub: Path) -> None:
    cmd = next(c for c in COMMANDS if c.name == "pro-validate")
    runner = CliRunner()
    ok = runner.invoke(cmd, [str(sub), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["ok"] is True
    assert json.loads(ok.output)["code_sha256"] == tree_sha256(sub)
    assert json.loads(ok.output)["track_check"]["counts_for"] == "from-scratch"
    # A valid from-scratch submission with opaque content is told where it will count, before any run.
    (sub / "source" / "weights.dat").write_bytes(bytes(range(256)) * 64)
    moved = runner.invoke(cmd, [str(sub)])
    assert moved.exit_code == 0 and "counts as reference-assisted" in moved.output
    assert "source/weights.dat" in moved.output
    (sub / "source" / "weights.dat").unlink()
    (sub / "report.md").write_text("   \n")
    bad = runner.invoke(cmd, [str(sub)])
    assert bad.exit_code == 1
    assert "report.md" in bad.output and "is empty" in bad.output


def test_eye_json_takes_the_uncertainty_objects_the_inputs_give(sub: Path) -> None:
    # Issue 31 item 2: E06's packages give {"range", "distribution"} uncertainties, which the validator refused.
    given = {"value": -8.0, "unit": "D", "source": "synthetic ICL design family DF01", "status": "estimated",
             "uncertainty": {"range": [-8.4, -7.7], "distribution": "uniform"}}
    write_json(sub / "model" / "eye.json", {"implant": {"thin_power": given}})
    assert validate_submission(sub).issues == []
    bad = dict(given, uncertainty={"range": [1.0, 0.0], "distribution": "uniform"})
    write_json(sub / "model" / "eye.json", {"implant": {"thin_power": bad, "x": dict(given, uncertainty=-1)}})
    assert _where(validate_submission(sub)) == {("model/eye.json", "implant.thin_power.uncertainty"),
                                                ("model/eye.json", "implant.x.uncertainty")}


def test_package_uncertainties_follow_the_same_schema() -> None:
    from icl.pro.package import uncertainty_problem

    assert uncertainty_problem(None) is None and uncertainty_problem(0.02) is None
    assert uncertainty_problem({"range": [-1, 1], "distribution": "that of thin_power"}) is None
    assert uncertainty_problem({"range": [-1], "distribution": "uniform"})
    assert uncertainty_problem(float("nan")) and uncertainty_problem("0.1")


def test_provenance_is_audited_per_instance(tmp_path: Path) -> None:
    """Issue 31 item 1: one run's model/eye.json serves every instance; each instance's provenance, copied
    verbatim under instances.<id>, passes A04.2 in every instance, while the same claims at the top level are
    audited against every instance and fail where that instance marks the parameter unknown."""
    from icl.pro.score import InstanceScorer

    measured = {"value": 3.6, "unit": "mm", "source": "synthetic base eye BE01 (perturbed)", "uncertainty": 0.02,
                "status": "measured"}
    unknown = {"value": None, "unit": "mm", "source": "not measured", "uncertainty": None, "status": "unknown"}
    filler = {f"p{i}": {"value": 1.0, "unit": "1", "source": "s", "uncertainty": None, "status": "synthetic"}
              for i in range(8)}
    refs = {"A04-00": {"guarded": [], "input_sources": [measured["source"]]},
            "A04-01": {"guarded": ["eye.lens_thickness"], "input_sources": ["not measured"]}}

    def grades(model: dict) -> dict:
        run = tmp_path / "run"
        write_json(run / "model" / "eye.json", model)
        return {iid: InstanceScorer(tmp_path, run, iid, {}).k_provenance(None, r)[0] for iid, r in refs.items()}

    per_instance = {"shared": filler, "instances": {"A04-00": {"eye": {"lens_thickness": measured}},
                                                    "A04-01": {"eye": {"lens_thickness": unknown}}}}
    assert grades(per_instance) == {"A04-00": 1.0, "A04-01": 1.0}
    assert grades({"shared": filler, "eye": {"lens_thickness": measured}}) == {"A04-00": 1.0, "A04-01": 0.0}

"""Two tracks, enforced: what a from-scratch program can import, and vendored reference code found.

The similarity threshold is shown to separate the package's own modules, renamed and reformatted, from two
honest independent solvers (``hostile_submissions/honest_fft`` and ``honest_rays``).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import icl
import pytest
from icl.pro.contract import validate_results, validate_submission
from icl.sandbox import layout as layout_mod
from icl.sandbox.boards import board_entry, leaderboards
from icl.sandbox.harness import available_mechanisms, run_submission
from icl.sandbox.provenance import THRESHOLD, classify_track, compare_code, scan_submission
from small_limits import SMALL

sys.path.insert(0, str(Path(__file__).parent))
from hostile_submissions.vendored import build as build_vendored  # noqa: E402

HOSTILE = Path(__file__).parent / "hostile_submissions"
MECHANISMS = available_mechanisms()
VENDORED_RUN = """#!/bin/sh
# Hostile: declared from-scratch, imports a renamed, reformatted copy of the reference package.
PYTHONPATH=/submission/source exec python3 -c 'import optikit' && echo ran > "$2/ran.txt"
"""


@pytest.fixture(scope="module")
def vendored(tmp_path_factory) -> Path:
    """Two subpackages (the optics engine and the halo track): the default run's copy."""
    return build_vendored(tmp_path_factory.mktemp("vendored") / "sub", VENDORED_RUN, only=("optics", "halo"))


@pytest.fixture(scope="module")
def vendored_whole(tmp_path_factory) -> Path:
    return build_vendored(tmp_path_factory.mktemp("vendored_whole") / "sub", VENDORED_RUN)


@pytest.fixture
def io(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "in" / "C01").mkdir(parents=True)
    (tmp_path / "in" / "C01" / "scene.json").write_text(json.dumps({"flux": 1.0, "hole_mm": 0.36}))
    return {"input": tmp_path / "in", "output": tmp_path / "out"}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_from_scratch_cannot_import_the_package_reference_assisted_can(io, mechanism: str) -> None:
    seen = {}
    for track in ("from-scratch", "reference-assisted"):
        out = io["output"].with_name(track)
        rec = run_submission(
            HOSTILE / "probe", io["input"], out, limits=SMALL, mechanism=mechanism, track=track
        )
        assert rec.ok and rec.track == rec.effective_track == track
        seen[track] = json.loads((out / "probe.json").read_text())
    assert seen["from-scratch"]["numpy"] == seen["from-scratch"]["scipy"] == "imported"
    assert seen["from-scratch"]["icl"].startswith("refused") and seen["from-scratch"]["icl._core"].startswith(
        "refused"
    )
    assert seen["reference-assisted"]["icl"] == seen["reference-assisted"]["icl._core"] == "imported"
    # Only the allow-list (with the package's own requirements on the reference-assisted track).
    assert seen["from-scratch"]["copydetect"].startswith("refused")
    assert seen["from-scratch"]["pytest"].startswith("refused") and seen["reference-assisted"][
        "pytest"
    ].startswith("refused")


def test_a_non_venv_python_shows_only_the_allow_list(tmp_path: Path, monkeypatch) -> None:
    # A Python installed outside /usr whose own site-packages holds the reference package (what a plain
    # `pip install` into a non-venv interpreter gives): its site-packages is masked, the package not bound.
    prefix = tmp_path / "python"
    site_dir = prefix / "lib" / "python3.11" / "site-packages"
    (site_dir / "icl").mkdir(parents=True)
    (site_dir / "icl" / "_core.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    monkeypatch.setattr(sys, "base_prefix", str(prefix))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(layout_mod.site, "getsitepackages", lambda: [str(site_dir)])
    mounts, path = layout_mod.python_view.__wrapped__("from-scratch")
    assert ("ro", str(prefix.resolve())) in {(m.kind, m.dest) for m in mounts}
    assert ("mask", str(site_dir.resolve())) in {(m.kind, m.dest) for m in mounts}
    sources = [m.source for m in mounts if m.kind == "ro" and m.dest.startswith(layout_mod.SITE_MOUNT)]
    assert sources and not any("/icl" in s.split("site-packages")[-1] for s in sources)
    names = {Path(m.dest).name for m in mounts if m.dest.startswith(layout_mod.SITE_MOUNT + "/")}
    assert "numpy" in names and not names & {"icl", "pytest", "copydetect", "_editable_skbc_icl_bench.pth"}
    # The mask comes after the prefix bind, so it covers it.
    order = [m.dest for m in mounts]
    assert order.index(str(site_dir.resolve())) > order.index(str(prefix.resolve()))
    ref, _ = layout_mod.python_view.__wrapped__("reference-assisted")
    assert f"{layout_mod.SITE_MOUNT}/icl/__init__.py" in {m.dest for m in ref}


def test_a_harness_run_from_a_non_venv_python_hides_the_package(io) -> None:
    # The harness itself run by the base interpreter (not a venv), finding icl and numpy on PYTHONPATH.
    import site
    import subprocess

    python = Path(sys.base_prefix) / "bin" / "python3"
    path = [str(Path(icl.__file__).parent.parent), *site.getsitepackages()]
    code = (
        "import json, sys\n"
        "from icl.sandbox.harness import Limits, run_submission\n"
        "assert sys.prefix == sys.base_prefix\n"
        "r = run_submission(sys.argv[1], sys.argv[2], sys.argv[3], limits=Limits(cpus=1, timeout_s=60))\n"
        "print(json.dumps(r.ok))\n"
    )
    res = subprocess.run(
        [str(python), "-c", code, str(HOSTILE / "probe"), str(io["input"]), str(io["output"])],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0 and res.stdout.strip() == "true", res.stderr[-2000:]
    seen = json.loads((io["output"] / "probe.json").read_text())
    assert (
        seen["numpy"] == "imported"
        and seen["icl"].startswith("refused")
        and seen["icl._core"].startswith("refused")
    )


def test_vendored_package_is_moved_to_reference_assisted_and_scores_0_on_from_scratch(vendored, io) -> None:
    rec = run_submission(vendored, io["input"], io["output"], limits=SMALL)
    assert rec.track == "from-scratch" and rec.effective_track == "reference-assisted"
    ev = rec.track_evidence
    assert len(ev["hits"]) >= 10 and ev["hash_matches"] == []  # found by similarity alone: nothing byte-equal
    top = ev["code"][0]
    assert top["similarity"] >= 0.8 and top["pairs"][0]["reference"].startswith(
        str(Path(icl.__file__).parent)
    )
    assert "declared from-scratch, counted as reference-assisted" in rec.messages[0]
    # The run itself was not refused (the copy lacks the compiled core, so it fails to import: either way)
    # and the evidence is in the written record.
    written = json.loads((Path(rec.logs["dir"]) / "run_record.json").read_text())
    assert (
        written["effective_track"] == "reference-assisted" and written["track_evidence"]["hits"] == ev["hits"]
    )
    entry = board_entry("vendor", 98.75, [written])
    assert entry["boards"]["from-scratch"]["score"] == 0.0
    assert "reference-assisted" in entry["boards"]["from-scratch"]["reason"]
    assert entry["boards"]["reference-assisted"]["score"] == 98.75
    boards = leaderboards(
        [entry, board_entry("honest", 45.0, [{"track": "from-scratch", "effective_track": "from-scratch"}])]
    )
    assert [r["name"] for r in boards["from-scratch"]] == ["honest", "vendor"]
    assert [r["name"] for r in boards["reference-assisted"]] == ["vendor"]


def _similarities(sub: Path, at_least: int) -> None:
    files = sorted(sub.rglob("*.py"))
    rows = [compare_code(str(f), f.read_text(), "python") for f in files]
    big = [r for r in rows if r["tokens"] >= 400]
    assert len(big) >= at_least and min(r["similarity"] for r in big) >= THRESHOLD
    copied = sum(r["copied_tokens"] for r in rows) / sum(r["tokens"] for r in rows)
    assert copied > 0.7


@pytest.mark.slow
def test_every_vendored_module_of_the_whole_package_scores_above_the_threshold(vendored_whole) -> None:
    _similarities(vendored_whole, 80)


def test_vendored_modules_score_above_the_threshold_honest_solvers_below(vendored) -> None:
    _similarities(vendored, 10)
    for honest in ("honest_fft", "honest_rays"):
        report = scan_submission(HOSTILE / honest)
        assert report["hits"] == [] and report["code_files"] >= 1
        assert max(r["similarity"] for r in report["code"]) < THRESHOLD / 4


def test_compiled_core_is_found_by_hash_under_any_name(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    (sub / "source" / "fast").mkdir(parents=True)
    core = Path(importlib.util.find_spec("icl._core").origin)
    shutil.copy(core, sub / "source" / "fast" / "kernels.so")
    (sub / "run").write_text("#!/bin/sh\nexit 0\n")
    track, ev = classify_track(sub)
    assert track == "reference-assisted"
    assert ev["hash_matches"] == [
        {"file": "source/fast/kernels.so", "reference": str(core), "sha256": ev["hash_matches"][0]["sha256"]}
    ]


def test_a_module_and_the_core_in_archives_are_found(tmp_path: Path) -> None:
    import tarfile
    import zipfile

    sub = tmp_path / "sub"
    sub.mkdir()
    src = Path(icl.__file__).parent / "optics" / "render.py"
    with zipfile.ZipFile(sub / "deps.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("lib/painter.py", src.read_text().replace("def ", "def  "))
    core = Path(importlib.util.find_spec("icl._core").origin)
    with tarfile.open(sub / "wheels.tar.gz", "w:gz") as tf:
        tf.add(core, arcname="pkg/fast.so")
    track, ev = classify_track(sub)
    assert track == "reference-assisted"
    assert ev["hits"] == ["deps.zip!lib/painter.py", "wheels.tar.gz!pkg/fast.so"]
    assert ev["hash_matches"][0]["reference"] == str(core)


@pytest.mark.parametrize("name", ["honest_fft", "honest_rays"])
def test_honest_solvers_run_from_scratch_and_stay_there(io, name: str) -> None:
    rec = run_submission(HOSTILE / name, io["input"], io["output"], limits=SMALL)
    assert rec.ok, (rec.messages, (Path(rec.logs["dir"]) / "stderr.log").read_text()[-2000:])
    assert rec.track == rec.effective_track == "from-scratch" and rec.track_evidence["hits"] == []
    assert validate_results(io["output"]).issues == []
    assert board_entry(name, 45.0, [rec.to_dict()])["boards"] == {
        "from-scratch": {"score": 45.0, "reason": ""}
    }


def test_manifest_track_is_required_and_read(tmp_path: Path, io) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(HOSTILE / "probe", sub)
    manifest = {
        "format": "icl-pro-submission/1",
        "model": {"name": "m", "version": "1", "description": "d"},
        "tools": [],
        "versions": {"submission": "1"},
        "dependencies": [],
        "random_seeds": {},
        "compute_budget": {"cpus": 1, "memory_gb": 1, "build_minutes": 0, "run_minutes_per_case": 1},
    }
    (sub / "manifest.json").write_text(json.dumps(manifest))
    issues = [
        (i.file, i.field, i.message) for i in validate_submission(sub).issues if i.file == "manifest.json"
    ]
    assert issues == [("manifest.json", "track", 'missing: declare "from-scratch" or "reference-assisted"')]
    (sub / "manifest.json").write_text(json.dumps({**manifest, "track": "open"}))
    assert [i.field for i in validate_submission(sub).issues if i.file == "manifest.json"] == ["track"]
    (sub / "manifest.json").write_text(json.dumps({**manifest, "track": "reference-assisted"}))
    assert not [i for i in validate_submission(sub).issues if i.file == "manifest.json"]
    rec = run_submission(sub, io["input"], io["output"], limits=SMALL)
    assert rec.track == rec.effective_track == "reference-assisted"
    assert json.loads((io["output"] / "probe.json").read_text())["icl"] == "imported"

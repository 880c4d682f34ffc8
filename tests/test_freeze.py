"""Frozen releases: every scorer refuses a release whose task texts, references or scoring code changed.

The scoring-code test runs the scorer from a copy of the package (with its compiled core), edits one of the
copy's scoring files after the freeze, and reads the refusal from the command's own error line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.board.cli import SCORERS
from icl.cli import main
from icl.errors import InputError
from icl.freeze import FrozenChanged, check_release, code_files, freeze_release, load_freeze
from icl.keys import KEY_BYTES, ReleaseKey

SECRET = ReleaseKey(bytes(range(KEY_BYTES)), rebuildable=False)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pro_release(tmp_path_factory):
    from icl.pro.generate import generate

    d = tmp_path_factory.mktemp("frozen") / "rel"
    generate(d, per_template=4, key=SECRET, progress=False, only=["A01", "C01"])
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _score(release: Path, run: Path) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["pro-score", str(release), str(run), "--name", "x"])
    return res.exit_code, res.output


def test_freeze_then_unchanged_release_scores(pro_release, tmp_path):
    rel = _copy(pro_release, tmp_path / "rel")
    res = CliRunner().invoke(main, ["release-freeze", str(rel)])
    assert res.exit_code == 0, res.output
    doc = load_freeze(rel)
    parts = doc["parts"]
    assert "private/release.key" not in parts["reference"]  # its hash would confirm a guessed key
    assert any(f.startswith("private/references/") for f in parts["reference"])
    assert "catalog.json" in parts["task"] and "manifest.json" in parts["task"]
    assert any(f.startswith("inputs/test/") and f.endswith("task.json") for f in parts["task"])
    assert "icl/pro/score.py" in parts["code"] and "icl/freeze.py" in parts["code"]
    status = check_release(rel)
    assert status["frozen"] and status["freeze_sha256"] == doc["freeze_sha256"]
    (tmp_path / "run").mkdir()
    code, out = _score(rel, tmp_path / "run")
    assert code == 0, out
    # A second freeze is refused unless forced: scores against the first would silently change meaning.
    res = CliRunner().invoke(main, ["release-freeze", str(rel)])
    assert res.exit_code == 2 and "already frozen" in res.output
    assert CliRunner().invoke(main, ["release-freeze", str(rel), "--check"]).exit_code == 0


@pytest.mark.parametrize("what", ["reference", "task"])
def test_changed_reference_or_task_text_is_refused_with_the_file_named(pro_release, tmp_path, what):
    rel = _copy(pro_release, tmp_path / "rel")
    freeze_release(rel, SCORERS["pro"])
    if what == "reference":
        target = sorted((rel / "private" / "references").glob("C01-*.json"))[0]
    else:
        target = sorted((rel / "inputs" / "test").glob("C01-*/task.json"))[0]
    doc = json.loads(target.read_text())
    doc["edited"] = True
    target.write_text(json.dumps(doc))
    (tmp_path / "run").mkdir()
    code, out = _score(rel, tmp_path / "run")
    rel_name = target.relative_to(rel).as_posix()
    assert code == 2 and f"{what} {rel_name} changed" in out, out
    with pytest.raises(FrozenChanged) as err:
        check_release(rel)
    assert err.value.changes == [{"part": what, "file": rel_name, "change": "changed"}]
    assert CliRunner().invoke(main, ["release-freeze", str(rel), "--check"]).exit_code == 2


def test_added_and_removed_files_are_named(pro_release, tmp_path):
    rel = _copy(pro_release, tmp_path / "rel")
    freeze_release(rel, SCORERS["pro"])
    victim = sorted((rel / "private" / "psf").rglob("*.npz"))[0]
    victim.unlink()
    (rel / "inputs" / "test" / "extra.json").write_text("{}")
    with pytest.raises(FrozenChanged) as err:
        check_release(rel)
    got = {(c["part"], c["file"], c["change"]) for c in err.value.changes}
    assert got == {
        ("reference", victim.relative_to(rel).as_posix(), "missing"),
        ("task", "inputs/test/extra.json", "added"),
    }


def test_edited_freeze_record_and_planted_link_are_refused(pro_release, tmp_path):
    rel = _copy(pro_release, tmp_path / "rel")
    freeze_release(rel, SCORERS["pro"])
    doc = json.loads((rel / "freeze.json").read_text())
    ref = next(iter(doc["parts"]["reference"]))
    doc["parts"]["reference"][ref] = "0" * 64  # made to match a changed file, without a new hash
    (rel / "freeze.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="freeze_sha256 does not match"):
        check_release(rel)
    rel2 = _copy(pro_release, tmp_path / "rel2")
    os.symlink("/etc/passwd", rel2 / "inputs" / "link.json")
    with pytest.raises(InputError, match="not a regular file"):
        freeze_release(rel2, SCORERS["pro"])


def test_disputed_reference_is_out_for_every_submission(pro_release, tmp_path):
    from icl.pro.evaluate import select_instances
    from icl.pro.score import score_submission

    rel = _copy(pro_release, tmp_path / "rel")
    ids = select_instances(rel, 2)
    res = CliRunner().invoke(
        main, ["release-freeze", str(rel), "--dispute", f"{ids[0]}=two solvers disagree"]
    )
    assert res.exit_code == 0, res.output
    (tmp_path / "run").mkdir()
    s = score_submission(rel, [tmp_path / "run"], "x", instances=ids, bootstrap_n=20)
    assert s["freeze"]["frozen"] and s["freeze"]["disputed"] == {ids[0]: "two solvers disagree"}
    nr = s["run_details"][0]["not_ranked"]
    assert list(nr) == [ids[0]] and "disputed reference frozen out at the freeze" in nr[ids[0]]
    assert ids[0] not in s["run_details"][0]["instances"]


def test_scoring_code_closure_follows_lazy_imports():
    pro = code_files(SCORERS["pro"])
    # k_solutions re-renders E01 answers: the renderer and the compiled kernels are scoring code too.
    assert {
        "icl/pro/score.py",
        "icl/pro/results_schema.py",
        "icl/io.py",
        "icl/pro/generate.py",
        "icl/optics/render.py",
    } <= set(pro)
    assert any(f.startswith("icl/_core") for f in pro)
    halo = code_files(SCORERS["halo"])
    assert "icl/halo/evaluate.py" in halo and not any(f.startswith("icl/pro/") for f in halo)
    forensics = code_files(SCORERS["forensics"])
    assert "icl/contest/safety.py" in forensics and "icl/halo/evaluate.py" not in forensics


def _package_copy(dst: Path) -> Path:
    import importlib.util

    import icl

    pkg = Path(icl.__file__).parent
    shutil.copytree(pkg, dst / "icl", ignore=shutil.ignore_patterns("__pycache__", "_core*.so"))
    core = Path(importlib.util.find_spec("icl._core").origin)
    shutil.copy2(core, dst / "icl" / core.name)
    if not (dst / "icl" / "cases").is_dir():  # an editable install keeps the case data beside the package
        from icl._paths import cases_dir

        shutil.copytree(cases_dir(), dst / "icl" / "cases")
    return dst


def _icl(pkg_root: Path, *args: str) -> subprocess.CompletedProcess:
    # The copy comes first on the path, and an editable install's import hook is set aside so that it is used.
    code = (
        f"import sys; sys.path.insert(0, {str(pkg_root)!r}); "
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__module__]; "
        "import icl; assert icl.__file__.startswith(sys.path[0]), icl.__file__; "
        "from icl.cli import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=pkg_root,
        timeout=300,
    )


def test_changed_scoring_file_is_refused_by_the_scorers(pro_release, tmp_path):
    pkg = _package_copy(tmp_path / "pkg")
    rel = _copy(pro_release, tmp_path / "rel")
    (tmp_path / "run").mkdir()
    got = _icl(pkg, "release-freeze", str(rel))
    assert got.returncode == 0, got.stderr
    assert _icl(pkg, "pro-score", str(rel), str(tmp_path / "run")).returncode == 0
    # The operator (or anyone) edits the scorer after the freeze: a tolerance, a weight, a comment.
    score_py = pkg / "icl" / "pro" / "score.py"
    score_py.write_text(score_py.read_text().replace("ROUND_OFF = 1e-9", "ROUND_OFF = 1e-6"))
    got = _icl(pkg, "pro-score", str(rel), str(tmp_path / "run"))
    assert got.returncode == 2 and "code icl/pro/score.py changed" in got.stderr, got.stderr
    got = _icl(pkg, "release-freeze", str(rel), "--check")
    assert got.returncode == 2 and "icl/pro/score.py" in got.stderr


def _fake_release(root: Path, public: str, private: dict[str, bytes]) -> Path:
    (root / "public").mkdir(parents=True)
    (root / "public" / public).write_text('{"cases": [], "images": []}')
    for name, data in private.items():
        (root / "private" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "private" / name).write_bytes(data)
    return root


def test_halo_and_forensics_scorers_refuse_a_changed_reference(tmp_path):
    from icl.forensics.evaluate import evaluate as forensics_evaluate
    from icl.halo.evaluate import evaluate as halo_evaluate

    halo = _fake_release(
        tmp_path / "halo", "halo_cases.json", {"H01_a.npz": b"reference", "test/H01_t1_a.json": b"{}"}
    )
    freeze_release(halo, SCORERS["halo"])
    (halo / "private" / "test" / "H01_t1_a.json").write_bytes(b'{"moved": 1}')
    with pytest.raises(FrozenChanged, match="reference private/test/H01_t1_a.json changed"):
        halo_evaluate(halo, tmp_path / "sub", split="test")
    res = CliRunner().invoke(
        main,
        [
            "halo-evaluate",
            "--release",
            str(halo),
            "--submission",
            str(tmp_path / "sub"),  # not tmp_path: no output lies inside a folder the command reads
            "--output",
            str(tmp_path / "score.json"),
            "--split",
            "test",
        ],
    )
    assert res.exit_code == 2 and "private/test/H01_t1_a.json" in res.output
    fx = _fake_release(tmp_path / "fx", "forensics_cases.json", {"labels.json": b"{}"})
    freeze_release(fx, SCORERS["forensics"])
    (fx / "private" / "labels.json").write_bytes(b'{"img": {}}')
    with pytest.raises(FrozenChanged, match="reference private/labels.json changed"):
        forensics_evaluate(fx, tmp_path / "sub.json")

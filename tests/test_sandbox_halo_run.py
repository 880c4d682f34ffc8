"""``icl halo-run``: a halo submission in the sandbox sees a release's public part and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.errors import InputError
from icl.halo.run import run_halo
from icl.sandbox.boards import board_entry
from icl.sandbox.harness import available_mechanisms
from test_halo_release import shared_release

HOSTILE = Path(__file__).parent / "hostile_submissions"


@pytest.fixture
def fake_release(tmp_path: Path) -> Path:
    """The layout of a release, with answers that must stay out of reach."""
    rel = tmp_path / "release"
    (rel / "public").mkdir(parents=True)
    (rel / "public" / "halo_cases.json").write_text('{"cases": []}')
    (rel / "public" / "hint.txt").write_text(str(rel))  # as if the host path were guessed
    (rel / "private" / "test").mkdir(parents=True)
    (rel / "private" / "H01_a.npz").write_bytes(b"SECRET-REFERENCE")
    (rel / "private" / "release.key").write_text("00" * 32)
    (rel / "gallery").mkdir()
    (rel / "gallery" / "index.html").write_text("<html>answers</html>")
    return rel


@pytest.mark.parametrize("mechanism", available_mechanisms())
def test_from_scratch_halo_submission_gets_neither_the_package_nor_the_answers(
    fake_release, tmp_path, mechanism: str
) -> None:
    got = run_halo(
        fake_release,
        HOSTILE / "halo_snoop",
        tmp_path / "pred",
        cpus=1,
        memory="1G",
        timeout_s=60,
        mechanism=mechanism,
    )
    rec = got["record"]
    assert rec["ok"] and rec["track"] == rec["effective_track"] == "from-scratch"
    seen = json.loads((tmp_path / "pred" / "snoop.json").read_text())
    assert seen["input"] == ["halo_cases.json", "hint.txt"]
    assert seen["import icl"].startswith("refused")
    for path, what in seen.items():
        if "private" in path or "gallery" in path:
            assert isinstance(what, str) and what.startswith("refused"), (path, what)
    assert str(fake_release) not in seen["mountinfo"]
    assert "SECRET" not in (tmp_path / "pred" / "snoop.json").read_text()


def test_halo_run_needs_a_public_folder(tmp_path: Path) -> None:
    (tmp_path / "rel").mkdir()
    with pytest.raises(InputError, match="no public/ folder"):
        run_halo(tmp_path / "rel", HOSTILE / "halo_snoop", tmp_path / "pred")


def test_halo_run_needs_the_split_it_checks(fake_release, tmp_path: Path) -> None:
    # Said before the program runs, naming the missing file.
    with pytest.raises(InputError, match="no test split") as err:
        run_halo(fake_release, HOSTILE / "halo_snoop", tmp_path / "pred", split="test")
    assert err.value.file.endswith("halo_cases_test.json") and not (tmp_path / "pred").exists()


def test_reference_assisted_run_is_scored_on_its_board(tmp_path_factory, tmp_path: Path) -> None:
    release = shared_release(tmp_path_factory)
    score = tmp_path / "score.json"
    res = CliRunner().invoke(
        main,
        [
            "halo-run",
            "--release",
            str(release),
            "--submission",
            str(HOSTILE / "halo_reference"),
            "--output",
            str(tmp_path / "pred"),
            "--cpus",
            "1",
            "--memory",
            "2G",
            "--timeout",
            "300",
            "--score",
            str(score),
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["track"] == summary["effective_track"] == "reference-assisted"
    doc = json.loads(score.read_text())
    assert 0 < doc["halo_development_score"] < 60  # no-halo: right positions, no halo
    assert len(doc["cases"]) == 14 and all(c["conditions"] for c in doc["cases"].values())
    assert doc["boards"] == {"reference-assisted": {"score": doc["halo_development_score"], "reason": ""}}
    assert doc["run"]["ok"] and doc["run"]["track"] == "reference-assisted"

    # Declared from-scratch, the same program cannot import the package: the run fails and scores 0.
    got = run_halo(
        release,
        HOSTILE / "halo_reference",
        tmp_path / "pred2",
        track="from-scratch",
        cpus=1,
        memory="1G",
        timeout_s=120,
    )
    rec = got["record"]
    assert not rec["ok"] and "No module named 'icl'" in Path(rec["logs"]["dir"], "stderr.log").read_text()
    assert board_entry("h", 0.0, [rec])["boards"] == {"from-scratch": {"score": 0.0, "reason": ""}}

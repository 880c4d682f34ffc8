"""``icl halo-run`` says what went wrong, and every null in a halo score says why it is null."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.halo.evaluate import evaluate
from icl.io import write_npz
from test_halo_release import shared_release

HOSTILE = Path(__file__).parent / "hostile_submissions"
HOST_CPUS = len(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return shared_release(tmp_path_factory)


def _halo_run(release: Path, submission: str, out: Path, *extra: str):
    res = CliRunner().invoke(
        main,
        [
            "halo-run",
            "--release",
            str(release),
            "--submission",
            str(HOSTILE / submission),
            "--output",
            str(out / "pred"),
            "--memory",
            "2G",
            "--timeout",
            "120",
            "--score",
            str(out / "score.json"),
            *extra,
        ],
    )
    return res, json.loads(res.output)


def test_a_crash_reports_its_exit_status_the_end_of_stderr_and_the_log(release, tmp_path):
    # Asking for more cores than the host has is capped, with a note.
    res, summary = _halo_run(release, "halo_crash", tmp_path, "--cpus", str(HOST_CPUS + 7))
    assert res.exit_code == 1 and summary["ok"] is False
    assert summary["exit_status"] == 1 and "the program exited with status 1" in summary["reason"]
    log = Path(summary["stderr_log"])
    assert log.is_file() and str(log) in summary["reason"]
    assert summary["stderr_tail"][-1] == "ValueError: deliberate failure in the solver"
    assert "solver: reading the cases" in summary["stderr_tail"]
    assert summary["notes"] == [
        f"{HOST_CPUS + 7} cores requested, this host offers {HOST_CPUS}: the run gets {HOST_CPUS}"
    ]
    assert summary["limits"]["cpus"] == HOST_CPUS
    doc = json.loads((tmp_path / "score.json").read_text())
    assert doc["run"]["reason"] == summary["reason"] and doc["run"]["stderr_tail"] == summary["stderr_tail"]
    assert doc["boards"] == {"from-scratch": {"score": 0.0, "reason": summary["reason"]}}
    assert len(summary["invalid_conditions"]) == 28  # nothing was written: every condition is missing


def test_wrong_arrays_make_the_run_not_ok_with_a_reason_per_condition(release, tmp_path):
    res, summary = _halo_run(release, "halo_bad_arrays", tmp_path, "--cpus", "1")
    assert summary["exit_status"] == 0 and summary["violations"] == []  # the program itself ran fine
    assert res.exit_code == 1 and summary["ok"] is False
    bad = summary["invalid_conditions"]
    assert set(bad) == {"H01_a", "H02_a", "H03_a"}
    assert "shape (1, 256, 256), expected (1, 512, 512)" in bad["H01_a"]
    assert bad["H02_a"].startswith("missing condition file") and bad["H03_a"] == "NaN or Inf values"
    assert "3 of 28 conditions of the dev split are missing or invalid" in summary["reason"]
    doc = json.loads((tmp_path / "score.json").read_text())
    assert doc["run"]["ok"] is False and doc["run"]["invalid_conditions"] == bad
    assert doc["boards"]["from-scratch"]["reason"] == summary["reason"]


def _nulls(node, path=""):
    """Every (dotted path, parent) whose value is None."""
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else k
            if v is None:
                yield p, node
            else:
                yield from _nulls(v, p)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _nulls(v, f"{path}[{i}]")


@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_null_in_a_score_explains_itself(release, tmp_path, split):
    # Empty (valid, all-zero) arrays: no centroid, no ring; the test split has no fixation case.
    pub = json.loads(
        (release / "public" / ("halo_cases.json" if split == "dev" else "halo_cases_test.json")).read_text()
    )
    for case in pub["cases"]:
        for cond in case["conditions"]:
            comps = np.zeros((len(cond["scene"]["sources"]), 512, 512))
            write_npz(
                tmp_path / f"{cond['id']}.npz", components=comps, scene=comps[0], angular_pixel_arcsec=4.0
            )
    doc = evaluate(release, tmp_path, split=split)
    found = list(_nulls(doc))
    assert {"clinical_score", "professional_score"} <= {p for p, _ in found}
    if split == "test":
        assert "diagnostic_subscores.fixation_cases" in doc["null_reasons"]
    terms = [p for p, _ in found if p.endswith(".error")]
    assert any(".centroid_arcmin." in p for p in terms)
    assert any(".ring." in p for p in terms) == (split == "dev")
    for path, parent in found:
        if path.endswith(".error"):
            assert parent["reason"].endswith(": the term is 0") and parent["value"] == 0.0, (path, parent)
        else:
            assert doc["null_reasons"].get(path), path

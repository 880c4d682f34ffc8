"""Run records cannot be forged: the harness and the evaluator sign them with the evaluator key, and
``pro-score`` and the halo board's scorer refuse an unsigned or altered ``sets.json`` / ``run.json``, or an
OUTPUT changed since the run, naming the file. A genuine run still scores.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.board.queue import HALO_SET
from icl.board.rows import _halo_record, _score_halo
from icl.cli import main
from icl.errors import InputError
from icl.pro.evaluate import set_row, write_sets
from icl.pro.generate import generate
from icl.pro.score import load_sets
from icl.sandbox import signing
from icl.sandbox.harness import Limits, available_mechanisms, run_submission
from icl.sandbox.signing import sign

SMALL = Limits(cpus=1, memory_bytes=1024**3, timeout_s=60.0, processes=32, file_bytes=8 * 1024**2,
               tmp_bytes=4 * 1024**2, output_bytes=32 * 1024**2)
RUN = """#!/bin/sh
mkdir -p "$2/results/$1"
echo '{"note": "genuine"}' > "$2/results/notes.json"
"""


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rel")
    generate(out, per_template=4, only=["A01"], progress=False)
    return out


@pytest.fixture(scope="module")
def genuine(tmp_path_factory) -> dict[str, Path]:
    """One real sandboxed run, kept as a professional run (sets.json) and as a halo board run (run.json)."""
    tmp = tmp_path_factory.mktemp("genuine")
    sub = tmp / "sub"
    sub.mkdir()
    (sub / "run").write_text(RUN)
    (sub / "run").chmod(0o755)
    (tmp / "input").mkdir()
    (tmp / "input").chmod(0o755)
    pro = tmp / "pro"
    pro.mkdir()
    rec = run_submission(sub, tmp / "input", pro / "base", limits=SMALL, logs_dir=pro / "logs" / "base",
                         mechanism=available_mechanisms()[0], track="reference-assisted")
    assert rec.ok, rec.messages
    write_sets(pro, sub, rec.code_sha256_before, [set_row(pro, "base", [], rec.signed_dict())])
    halo = tmp / "halo"
    halo.mkdir()
    shutil.copytree(pro / "base", halo / HALO_SET)
    (halo / "run.json").write_text(json.dumps(sign({"set": HALO_SET, "record": rec.signed_dict()})))
    return {"pro": pro, "halo": halo}


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _pro_score(release: Path, run: Path) -> tuple[int, str]:
    got = CliRunner().invoke(main, ["pro-score", str(release), str(run), "--name", "x"])
    return got.exit_code, got.output + (got.stderr if got.stderr_bytes is not None else "")


def test_a_genuine_run_scores(release, genuine) -> None:
    assert load_sets(genuine["pro"])[0]["record"]["track"] == "reference-assisted"
    code, out = _pro_score(release, genuine["pro"])
    assert code == 0, out
    assert _halo_record(genuine["halo"])["ok"] is True


def test_a_forged_sets_json_is_refused(release, genuine, tmp_path) -> None:
    run = _copy(genuine["pro"], tmp_path / "forged")
    f = "f" * 64
    record = {"ok": True, "exit_status": 0, "violations": [], "track": "from-scratch",
              "effective_track": "from-scratch", "frozen_sha256": f, "code_sha256_before": f,
              "code_sha256_after": f, "artifacts": {}}
    (run / "sets.json").write_text(json.dumps({"format": "icl-pro-run-sets/1", "frozen_sha256": f, "sets": [
        {"set": "base", "instances": [], "output": "base", "record": record}]}))
    code, out = _pro_score(release, run)
    assert code == 2 and str(run / "sets.json") in out and "unsigned" in out, out
    halo = _copy(genuine["halo"], tmp_path / "forged-halo")
    (halo / "run.json").write_text(json.dumps({"set": HALO_SET, "record": record}))
    with pytest.raises(InputError, match="unsigned") as exc:
        _score_halo(str(release), [halo], "forged")
    assert exc.value.file == str(halo / "run.json")


def test_an_altered_sets_json_is_refused(release, genuine, tmp_path) -> None:
    run = _copy(genuine["pro"], tmp_path / "altered")
    doc = json.loads((run / "sets.json").read_text())
    doc["sets"][0]["record"]["track"] = doc["sets"][0]["record"]["effective_track"] = "from-scratch"
    (run / "sets.json").write_text(json.dumps(doc))
    code, out = _pro_score(release, run)
    assert code == 2 and str(run / "sets.json") in out and "altered after signing" in out, out
    # Re-signing the record alone does not help: the file's own signature covers it.
    doc["sets"][0]["record"] = {k: v for k, v in doc["sets"][0]["record"].items() if k != "signature"}
    (run / "sets.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="altered after signing"):
        load_sets(run)
    halo = _copy(genuine["halo"], tmp_path / "altered-halo")
    doc = json.loads((halo / "run.json").read_text())
    doc["record"]["effective_track"] = "from-scratch"
    doc["record"]["track"] = "from-scratch"
    (halo / "run.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="altered after signing") as exc:
        _score_halo(str(release), [halo], "altered")
    assert exc.value.file == str(halo / "run.json")


def test_an_output_changed_after_the_run_is_refused(genuine, tmp_path) -> None:
    run = _copy(genuine["pro"], tmp_path / "changed")
    (run / "base" / "results" / "notes.json").write_text('{"note": "better answers"}')
    with pytest.raises(InputError, match="results/notes.json changed since the run"):
        load_sets(run)
    (run / "base" / "results" / "notes.json").unlink()
    with pytest.raises(InputError, match="removed since the run"):
        load_sets(run)
    halo = _copy(genuine["halo"], tmp_path / "changed-halo")
    (halo / HALO_SET / "results" / "extra.json").write_text("{}")
    with pytest.raises(InputError, match="added since the run"):
        _halo_record(halo)


def test_another_key_and_a_loose_key_file_are_refused(genuine, tmp_path, monkeypatch) -> None:
    other = tmp_path / "other.key"
    monkeypatch.setenv(signing.KEY_ENV, str(other))
    with pytest.raises(InputError, match="no evaluator key"):  # a scorer never makes one
        load_sets(genuine["pro"])
    signing.evaluator_key()
    with pytest.raises(InputError, match="another evaluator key"):
        load_sets(genuine["pro"])
    assert stat.S_IMODE(other.stat().st_mode) == 0o600  # made on first use, private
    other.chmod(0o644)
    with pytest.raises(InputError, match="mode 0600"):
        signing.evaluator_key()


def test_a_key_inside_the_run_folders_is_refused(tmp_path, monkeypatch) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "run").write_text(RUN)
    (sub / "run").chmod(0o755)
    monkeypatch.setenv(signing.KEY_ENV, str(sub / "evaluator.key"))
    with pytest.raises(InputError, match="inside a run's folders"):
        run_submission(sub, tmp_path, tmp_path / "out", limits=SMALL)
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")

"""The harness writes its logs, records and collected output only into folders it owns.

A logs folder (or OUTPUT) is either created by the harness or an empty folder of the running user; it is
opened once without following links and every file in it is created with ``O_NOFOLLOW | O_CREAT |
O_EXCL``. A planted link, a linked folder, a folder of another user's or a non-empty folder is refused
before the submission runs, and whatever it points to is left as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.errors import OutputError
from icl.sandbox.harness import SANDBOX_UID, Limits, run_submission

HOSTILE = Path(__file__).parent / "hostile_submissions"
SMALL = Limits(cpus=1, memory_bytes=1024**3, timeout_s=20.0, processes=32, tmp_bytes=4 * 1024**2)
HOST_TEXT = "operator's file: must survive\n"


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    """An input folder with one case, and an operator's file and folder that a run must never touch."""
    (tmp_path / "input" / "C01").mkdir(parents=True)
    (tmp_path / "input" / "C01" / "scene.json").write_text('{"flux": 1.0}')
    (tmp_path / "host" / "folder").mkdir(parents=True)
    (tmp_path / "host" / "passwd").write_text(HOST_TEXT)
    (tmp_path / "host" / "folder" / "stdout.log").write_text(HOST_TEXT)
    return {"input": tmp_path / "input", "out": tmp_path / "out", "host": tmp_path / "host"}


def _pro_run(host: dict[str, Path], *extra: str):
    args = ["pro-run", "--submission", HOSTILE / "normal", "--input", host["input"], "--output", host["out"]]
    return CliRunner().invoke(main, [str(a) for a in (*args, "--cpus", "1", "--memory", "1G", *extra)])


def _host_untouched(host: dict[str, Path]) -> None:
    assert (host["host"] / "passwd").read_text() == HOST_TEXT
    assert (host["host"] / "folder" / "stdout.log").read_text() == HOST_TEXT
    assert sorted(p.name for p in (host["host"] / "folder").iterdir()) == ["stdout.log"]


def test_a_log_file_linked_to_a_host_file_is_refused(host):
    logs = host["out"].with_name("out.logs")
    logs.mkdir()
    (logs / "stdout.log").symlink_to(host["host"] / "passwd")
    res = _pro_run(host)
    assert res.exit_code == 2, res.output
    assert "out.logs" in res.output and "not empty" in res.output
    _host_untouched(host)
    assert not host["out"].exists() or not any(host["out"].iterdir())  # nothing ran


def test_a_logs_folder_linked_to_a_host_folder_is_refused(host):
    host["out"].with_name("out.logs").symlink_to(host["host"] / "folder", target_is_directory=True)
    res = _pro_run(host)
    assert res.exit_code == 2 and "symbolic link" in res.output, res.output
    _host_untouched(host)


def test_a_linked_logs_option_is_refused_too(host):
    link = host["host"].parent / "mylogs"
    link.symlink_to(host["host"] / "folder", target_is_directory=True)
    res = _pro_run(host, "--logs", str(link))
    assert res.exit_code == 2 and "symbolic link" in res.output, res.output
    _host_untouched(host)


def test_an_empty_folder_of_ours_is_used_and_one_of_another_user_is_not(host):
    rec = run_submission(HOSTILE / "normal", host["input"], host["out"], limits=SMALL)
    assert rec.ok, rec.messages
    logs = Path(rec.logs["dir"])
    assert sorted(p.name for p in logs.iterdir()) == ["run_record.json", "stderr.log", "stdout.log"]
    assert json.loads((logs / "run_record.json").read_text())["ok"] is True
    ours, theirs = host["out"].parent / "ours", host["out"].parent / "theirs"
    ours.mkdir()
    theirs.mkdir()
    root = host["out"].parent
    rec = run_submission(HOSTILE / "normal", host["input"], root / "o2", limits=SMALL, logs_dir=ours)
    assert rec.ok and (ours / "stdout.log").is_file()
    try:
        os.chown(theirs, SANDBOX_UID, SANDBOX_UID)
    except PermissionError:
        pytest.skip("changing a folder's owner needs root")  # the case exists only for a root harness
    with pytest.raises(OutputError, match="belongs to uid"):
        run_submission(HOSTILE / "normal", host["input"], root / "o3", limits=SMALL, logs_dir=theirs)
    assert list(theirs.iterdir()) == []


def test_a_file_planted_after_the_folder_was_claimed_is_never_written_through(tmp_path):
    from icl.io import OwnFolder

    target = tmp_path / "passwd"
    target.write_text(HOST_TEXT)
    folder = OwnFolder(tmp_path / "logs", "logs")
    (tmp_path / "logs" / "stdout.log").symlink_to(target)  # a race: planted between claim and write
    with pytest.raises(OutputError, match="only new files"):
        folder.write_bytes("stdout.log", b"submission output")
    assert target.read_text() == HOST_TEXT
    folder.write_bytes("record.json", b"1")
    folder.write_bytes("record.json", b"2")  # rewriting its own file renames a new one over it
    assert (tmp_path / "logs" / "record.json").read_bytes() == b"2"
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["record.json", "stdout.log"]
    folder.close()

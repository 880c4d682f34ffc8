"""Sandboxed harness: tiny hostile submissions are stopped, recorded and cannot touch the host.

Every test runs on each sandbox mechanism this host offers (``bwrap`` and the ``unshare`` fallback), so a
host without bubblewrap still exercises the fallback rather than skipping.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.io import sha256_file
from icl.pro.cli_harness import COMMANDS
from icl.pro.contract import validate_results
from icl.pro.harness import (
    SANDBOX_UID,
    Limits,
    RunRecord,
    available_mechanisms,
    parse_size,
    run_submission,
    tree_sha256,
)

HOSTILE = Path(__file__).parent / "hostile_submissions"
MECHANISMS = available_mechanisms()
# Small limits keep each hostile run to about a second; the timeout case sets its own wall limit.
SMALL = Limits(cpus=1, memory_bytes=1024**3, timeout_s=20.0, processes=32, file_bytes=8 * 1024**2,
               tmp_bytes=4 * 1024**2, output_bytes=32 * 1024**2)


def test_a_sandbox_mechanism_is_available() -> None:
    # Not a skip: without bwrap the fallback must be there, and every test below runs on it.
    assert "unshare" in MECHANISMS


@pytest.fixture(params=MECHANISMS)
def mechanism(request) -> str:
    return request.param


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """An evaluator's folder: input/ and, beside it, private/ with an answer the program must not see."""
    work = tmp_path / "work"
    (work / "input").mkdir(parents=True)
    (work / "private").mkdir()
    (work / "private" / "answer.json").write_text('{"halo_radius_arcmin": 3.14}')
    return {"work": work, "input": work / "input", "private": work / "private", "output": tmp_path / "out"}


def _run(name: str, layout: dict[str, Path], mechanism: str, limits: Limits = SMALL, **kw) -> RunRecord:
    return run_submission(HOSTILE / name, layout["input"], layout["output"], limits=limits, mechanism=mechanism,
                          **kw)


def _sandbox_pids() -> set[str]:
    out = subprocess.run(["ps", "-u", str(SANDBOX_UID), "-o", "pid="], capture_output=True, text=True).stdout
    return set(out.split())


def test_a_normal_run_writes_contract_results(layout, mechanism: str) -> None:
    for case, flux in (("C01", 1.0), ("C05", 2.5)):
        (layout["input"] / case).mkdir()
        (layout["input"] / case / "scene.json").write_text(json.dumps({"flux": flux}))
    rec = _run("normal", layout, mechanism)
    assert rec.ok and rec.exit_status == 0 and rec.violations == [] and rec.limits_hit == []
    assert rec.mechanism == mechanism and rec.network_packets == 0 and rec.usage_source == "wait4"
    out = layout["output"]
    # numpy imported inside the sandbox from the read-only site-packages, and wrote contract-valid results
    assert validate_results(out).issues == []
    assert sorted(rec.artifacts) == sorted(f"{c}/{f}" for c in ("C01", "C05") for f in (
        "energy.json", "metrics.json", "paths.npz", "preview.png", "psf_linear.npz", "retinal_linear.npz"))
    assert all(rec.artifacts[k] == sha256_file(out / k) for k in rec.artifacts)
    assert rec.code_sha256_before == rec.code_sha256_after == tree_sha256(HOSTILE / "normal")
    assert rec.cpu_s > 0 and rec.peak_rss_bytes > 1024**2  # a Python process with numpy: > 1 MiB resident
    logs = Path(rec.logs["dir"])
    assert (logs / "stdout.log").read_text().startswith("C01: flux 1.0\nC05: flux 2.5\nnumpy ")
    assert json.loads((logs / "run_record.json").read_text()) == json.loads(json.dumps(rec.signed_dict()))
    assert rec.to_dict()["ok"] is True


def test_artifacts_are_the_same_bytes_on_every_mechanism(tmp_path: Path) -> None:
    digests = []
    for i, mech in enumerate(MECHANISMS):
        (tmp_path / f"in{i}" / "C01").mkdir(parents=True)
        (tmp_path / f"in{i}" / "C01" / "scene.json").write_text('{"flux": 1.0}')
        rec = run_submission(HOSTILE / "normal", tmp_path / f"in{i}", tmp_path / f"out{i}", limits=SMALL,
                             mechanism=mech)
        digests.append(rec.artifacts)
    assert all(d == digests[0] and d for d in digests)


def test_b_network_is_cut_and_recorded(layout, mechanism: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    (layout["input"] / "port.txt").write_text(str(listener.getsockname()[1]))
    with listener:
        rec = _run("network", layout, mechanism)
        with pytest.raises(TimeoutError):
            listener.accept()  # the host's loopback service never heard from the sandbox
    seen = json.loads((layout["output"] / "network.json").read_text())
    assert all(v.startswith("refused") for v in seen.values()), seen
    assert rec.exit_status == 0 and not rec.ok
    assert rec.violations == ["network"] and rec.network_packets >= 3  # two TCP connects and one UDP send


def test_c_private_folder_beside_the_input_is_unreachable(layout, mechanism: str) -> None:
    (layout["input"] / "hint.txt").write_text(str(layout["private"]))
    rec = _run("private", layout, mechanism)
    assert rec.ok
    seen = json.loads((layout["output"] / "private.json").read_text())
    for path, what in seen.items():
        if path == "/root":  # only the Python installation is mounted there (pyenv-style hosts)
            assert what in ([".pyenv"], "refused: No such file or directory")
            continue
        assert isinstance(what, str) and what.startswith("refused"), (path, what)
    assert "3.14" not in (layout["output"] / "private.json").read_text()


def test_d_fork_bomb_is_stopped_and_host_unaffected(layout, mechanism: str) -> None:
    before = _sandbox_pids()  # other sandboxes of this host may be running: only ours must be gone
    rec = _run("forkbomb", layout, mechanism)
    born = json.loads((layout["output"] / "fork.json").read_text())["born"]
    assert born < SMALL.processes  # the program plus its children never pass the limit
    assert rec.exit_status == 1 and "processes" in rec.limits_hit and "processes" in rec.violations
    assert not rec.ok
    assert _sandbox_pids() <= before  # the sleeping children died with the sandbox
    assert rec.process_mechanism.startswith("cgroup-") and rec.peak_processes <= SMALL.processes


def test_e_writes_outside_output_fail(layout, mechanism: str) -> None:
    (layout["input"] / "hint.txt").write_text(str(layout["work"]))
    before = tree_sha256(layout["work"])
    rec = _run("write_outside", layout, mechanism)
    lines = (layout["output"] / "write.txt").read_text().splitlines()
    assert lines[-1] == "/tmp/allowed written"  # the private tmpfs is writable ...
    assert all(line.endswith("refused") for line in lines[:-1]) and len(lines) == 8  # ... nothing else
    assert tree_sha256(layout["work"]) == before
    assert sorted(rec.artifacts) == ["write.txt"] and rec.ok


def test_f_memory_limit(layout, mechanism: str) -> None:
    # The run's control group caps its total memory: the 16 GiB array is killed as it is touched.
    limits = Limits(**{**SMALL.__dict__, "memory_bytes": 256 * 1024**2})
    rec = _run("memory", layout, mechanism, limits=limits)
    assert rec.memory_mechanism.startswith("cgroup-") and rec.oom_kills >= 1 and rec.signal == "SIGKILL"
    assert rec.limits_hit == ["memory"] and rec.violations == ["memory"] and not rec.ok
    assert 0.9 * limits.memory_bytes <= rec.peak_memory_bytes <= limits.memory_bytes


def test_f_memory_limit_without_a_cgroup_is_per_process(layout) -> None:
    # The recorded last resort: RLIMIT_AS refuses the allocation itself.
    rec = _run("memory", layout, MECHANISMS[0], use_cgroup=False)
    assert rec.memory_mechanism == "rlimit_as" and rec.process_mechanism == "rlimit_nproc"
    assert rec.exit_status == 1 and rec.limits_hit == ["memory"] and rec.violations == ["memory"]
    assert rec.peak_memory_bytes is None and rec.peak_rss_bytes < SMALL.memory_bytes
    assert "Unable to allocate 16.0 GiB" in (Path(rec.logs["dir"]) / "stderr.log").read_text()


def test_g_wall_clock_limit_kills_everything(layout, mechanism: str) -> None:
    limits = Limits(cpus=1, memory_bytes=1024**3, timeout_s=1.5, processes=32)
    before = _sandbox_pids()
    rec = _run("timeout", layout, mechanism, limits=limits)
    assert rec.limits_hit == ["timeout"] and rec.violations == ["timeout"] and not rec.ok
    assert 1.5 <= rec.wall_s < 1.5 + 3.0  # killed within a few watchdog polls (0.05 s) plus teardown
    assert rec.signal == "SIGKILL" and rec.usage_source == "sampled"
    assert _sandbox_pids() <= before  # including the child that ignores SIGTERM


def test_h_disk_filling_is_bounded(layout, mechanism: str) -> None:
    rec = _run("disk", layout, mechanism)
    out = layout["output"]
    seen = json.loads((out / "disk.json").read_text())
    assert seen["big_file"] == "stopped after 8 MiB: [Errno 27] File too large"  # RLIMIT_FSIZE
    assert seen["tmp"].startswith("stopped after") and "No space left" in seen["tmp"]  # 4 MiB tmpfs
    assert (out / "big.bin").stat().st_size == SMALL.file_bytes
    assert {"file_size", "output_size"} <= set(rec.violations) and not rec.ok
    # The watchdog looks every 0.25 s; the program could have written 64 x 4 MiB = 256 MiB unchecked ...
    assert SMALL.output_bytes < rec.output_scan["apparent_bytes"] < 256 * 1024**2
    # ... but only the first 16 MiB (in path order) are hashed and kept, for diagnosis.
    assert sum(p.stat().st_size for p in out.iterdir()) <= 16 * 1024**2
    assert set(rec.artifacts) == {p.name for p in out.iterdir()}


def test_frozen_hash_refuses_changed_code(layout, tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(HOSTILE / "normal", sub)
    frozen = tree_sha256(sub)
    (sub / "run").write_text((sub / "run").read_text() + "# changed after freezing\n")
    rec = run_submission(sub, layout["input"], layout["output"], limits=SMALL, frozen_hash=frozen)
    assert rec.violations == ["code_not_frozen"] and rec.exit_status is None and not rec.ok
    assert rec.artifacts == {} and not any(layout["output"].iterdir())


def test_links_written_to_output_are_removed(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "run").write_text("#!/bin/sh\nln -s /etc/passwd \"$2/passwd\"\necho ok > \"$2/ok.txt\"\n")
    (sub / "run").chmod(0o755)
    (tmp_path / "in").mkdir()
    rec = run_submission(sub, tmp_path / "in", tmp_path / "out", limits=SMALL)
    assert rec.violations == ["output_entry"] and sorted(rec.artifacts) == ["ok.txt"]
    assert not (tmp_path / "out" / "passwd").is_symlink()


def test_tree_hash_sees_content_mode_and_links(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    h0 = tree_sha256(tmp_path)
    (tmp_path / "a").chmod(0o755)
    h1 = tree_sha256(tmp_path)
    (tmp_path / "l").symlink_to("a")
    h2 = tree_sha256(tmp_path)
    assert len({h0, h1, h2}) == 3 and tree_sha256(tmp_path) == h2


def test_parse_size() -> None:
    assert parse_size("8G") == 8 * 1024**3 and parse_size("512M") == 512 * 1024**2 and parse_size(4096) == 4096
    with pytest.raises(ValueError, match="not a size"):
        parse_size("eight")


def test_cli_run(layout) -> None:
    cmd = next(c for c in COMMANDS if c.name == "pro-run")
    (layout["input"] / "C01").mkdir()
    (layout["input"] / "C01" / "scene.json").write_text('{"flux": 1.0}')
    res = CliRunner().invoke(cmd, ["--submission", str(HOSTILE / "normal"), "--input", str(layout["input"]),
                                   "--output", str(layout["output"]), "--cpus", "1", "--memory", "1G",
                                   "--timeout", "20"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.output)
    assert record["ok"] is True and record["limits"]["memory_bytes"] == 1024**3
    res = CliRunner().invoke(cmd, ["--submission", str(HOSTILE / "memory"), "--input", str(layout["input"]),
                                   "--output", str(layout["output"].with_name("o2")), "--memory", "256M"])
    assert res.exit_code == 1 and json.loads(res.output)["violations"] == ["memory"]

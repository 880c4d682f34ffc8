"""A harness that holds: per-run cgroup limits, bounded output checks, safe modes, no host paths inside.

Each hostile run is stopped or recorded (never a harness crash) and is not ``ok``, so the scorer gives its
tasks 0 on every board. The runs use each sandbox mechanism this host offers where the mechanism matters.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from icl.sandbox import cgroups, harness
from icl.sandbox.boards import board_entry
from icl.sandbox.cgroups import RunGroup
from icl.sandbox.fstree import remove_tree, scan
from icl.sandbox.harness import SANDBOX_UID, Limits, RunRecord, available_mechanisms, run_submission

HOSTILE = Path(__file__).parent / "hostile_submissions"
MECHANISMS = available_mechanisms()
SMALL = Limits(
    cpus=1,
    memory_bytes=1024**3,
    timeout_s=30.0,
    processes=32,
    file_bytes=8 * 1024**2,
    tmp_bytes=4 * 1024**2,
    output_bytes=32 * 1024**2,
)


def _cgroup_usable() -> bool:
    group = RunGroup.create(1 << 30, 8) if os.geteuid() == 0 else None
    if group is not None:
        group.remove()
    return group is not None


needs_cgroup = pytest.mark.skipif(
    not _cgroup_usable(), reason="needs root and a cgroup hierarchy with memory and pids"
)


def _groups() -> set[Path]:
    own = cgroups._own_paths(Path("/proc/self/cgroup").read_text())
    found: set[Path] = set()
    for ctrl in ("memory", "pids"):
        d = cgroups.CGROUP_ROOT / ctrl / own.get(ctrl, "/").lstrip("/")
        if d.is_dir():
            found |= {p for p in d.iterdir() if p.name.startswith(cgroups.PREFIX)}
    return found


@pytest.fixture(autouse=True, scope="module")
def _no_stale_groups():
    before = _groups()  # another harness on this host may hold groups of its own
    yield
    # Every group a run of this module made is removed with it.
    assert not [p for p in _groups() - before if f"{cgroups.PREFIX}{os.getpid()}-" in p.name]


def test_leftover_groups_of_exited_makers_are_removed(tmp_path: Path) -> None:
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{cgroups.PREFIX}{gone.pid}-0a1b2c"
    live = tmp_path / f"{cgroups.PREFIX}{os.getpid()}-0a1b2c"
    busy = tmp_path / f"{cgroups.PREFIX}{gone.pid}-3d4e5f"
    unnamed = tmp_path / f"{cgroups.PREFIX}5b79e842f08c"  # no maker in the name: never touched
    for d in (dead, live, busy, unnamed):
        d.mkdir()
    (busy / "cgroup.procs").write_text("1\n")  # still holds a process: kept (rmdir would fail anyway)
    cgroups._remove_leftovers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (live, busy, unnamed))


@pytest.fixture
def io(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "work" / "input").mkdir(parents=True)
    (tmp_path / "work" / "private").mkdir()
    (tmp_path / "work" / "private" / "answer.json").write_text('{"secret": 1}')
    return {"input": tmp_path / "work" / "input", "output": tmp_path / "out", "work": tmp_path / "work"}


def _run(name: str, io: dict[str, Path], limits: Limits = SMALL, **kw) -> RunRecord:
    return run_submission(HOSTILE / name, io["input"], io["output"], limits=limits, **kw)


def _zero_on_from_scratch_board(rec: RunRecord) -> None:
    assert not rec.ok  # the scorer gives 0 to the tasks of a run that is not ok ...
    entry = board_entry("hostile", 0.0 if not rec.ok else 100.0, [rec.to_dict()])
    assert entry["boards"]["from-scratch"]["score"] == 0.0  # ... so the board shows 0


@needs_cgroup
def test_memory_of_forked_children_is_capped_in_total(io) -> None:
    # 8 children x 150 MiB: each is far below a per-process limit, together they pass 256 MiB.
    limits = Limits(**{**SMALL.__dict__, "memory_bytes": 256 * 1024**2})
    t0 = time.monotonic()
    rec = _run("fork_memory", io, limits)
    assert time.monotonic() - t0 < 20
    assert rec.memory_mechanism == rec.process_mechanism and rec.memory_mechanism.startswith("cgroup-v")
    assert rec.violations == ["memory"] and rec.limits_hit == ["memory"] and rec.oom_kills >= 1
    # Peak from the cgroup: the whole run's memory, at the cap (not one process's 150 MiB).
    assert 0.9 * limits.memory_bytes <= rec.peak_memory_bytes <= limits.memory_bytes
    assert not (io["output"] / "children.json").exists()  # the sandbox was stopped, not left to finish
    _zero_on_from_scratch_board(rec)


@needs_cgroup
def test_honest_nine_process_run_passes_beside_other_processes_of_the_sandbox_uid(io) -> None:
    # 14 unrelated processes of the sandbox uid on the host: a per-uid process limit of 16 would refuse
    # the run's forks; the run's own pids cgroup counts only the run.
    others = [
        subprocess.Popen(
            ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "sleep", "30"]
        )
        for _ in range(14)
    ]
    try:
        limits = Limits(**{**SMALL.__dict__, "processes": 16})
        rec = _run("nine_procs", io, limits)
        assert rec.ok, rec.messages
        assert (io["output"] / "done.txt").read_text() == "9 processes\n" and len(rec.artifacts) == 9
        assert 9 <= rec.peak_processes <= 16
        # The same run under the per-uid fallback fails, which is why the cgroup is used.
        fallback = run_submission(
            HOSTILE / "nine_procs", io["input"], io["output"].with_name("o2"), limits=limits, use_cgroup=False
        )
        assert not fallback.ok and "processes" in fallback.violations
    finally:
        for p in others:
            p.kill()
            p.wait()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_deep_output_nesting_is_a_violation_not_a_crash(io, mechanism: str) -> None:
    rec = _run("deep_output", io, mechanism=mechanism)
    # Seen by the watchdog during the run (the sandbox is killed) or by the check after exit.
    assert rec.violations == ["output_depth"] and rec.exit_status in (0, -9)
    assert rec.output_scan["depth"] > SMALL.output_depth
    assert set(rec.artifacts) <= {"answer.txt"}
    assert scan(io["output"], 64, 1000).depth == SMALL.output_depth  # only the allowed depth reached the host
    _zero_on_from_scratch_board(rec)


def test_deep_submission_is_refused_not_a_crash(io, tmp_path: Path) -> None:
    sub = tmp_path / "deep"
    (sub / "source").mkdir(parents=True)
    (sub / "run").write_text("#!/bin/sh\nexit 0\n")
    (sub / "run").chmod(0o755)
    fd = os.open(sub / "source", os.O_RDONLY)
    for _ in range(1500):
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    try:
        rec = run_submission(sub, io["input"], io["output"], limits=SMALL)
    finally:
        remove_tree(sub)  # pytest's own clean-up of old temporary folders recurses
    assert (
        rec.violations == ["submission_tree"] and rec.exit_status is None and "deeper than" in rec.messages[0]
    )


def test_sparse_files_written_before_a_quick_exit_are_caught_without_hashing_them(io) -> None:
    limits = Limits(**{**SMALL.__dict__, "file_bytes": 1024**3})
    t0 = time.monotonic()
    rec = _run("sparse", io, limits)
    assert time.monotonic() - t0 < 15  # nothing near 6 GiB was read
    # Seen by a watchdog poll (the sandbox is killed) or, when the program is quicker, after exit.
    assert rec.exit_status in (0, -9) and rec.violations == ["output_size"]
    assert rec.output_scan["apparent_bytes"] >= 1024**3 and rec.output_scan["allocated_bytes"] < 1024**2
    assert rec.artifacts == {} and not any(io["output"].iterdir())
    _zero_on_from_scratch_board(rec)


def test_output_is_checked_again_after_exit(tmp_path: Path) -> None:
    # What a program leaves between the last poll and its exit: six sparse 1 GiB files.
    staged, out = tmp_path / "staged", tmp_path / "out"
    staged.mkdir()
    out.mkdir()
    for i in range(6):
        with open(staged / f"sparse{i}.bin", "wb") as fh:
            fh.seek(1024**3 - 1)
            fh.write(b"\0")
    rec = RunRecord(mechanism="bwrap", command=[])
    t0 = time.monotonic()
    harness._collect(rec, Limits(), staged, out, (os.geteuid(), os.getegid()))
    assert time.monotonic() - t0 < 2  # the 6 GiB are not read (the output limit is 2 GiB)
    assert rec.violations == rec.limits_hit == ["output_size"] and "after exit" in rec.messages[0]
    assert rec.output_scan["apparent_bytes"] == 6 * 1024**3 and rec.artifacts == {}


def test_output_modes_are_normalised(io) -> None:
    rec = _run("modes", io)
    out = io["output"]
    modes = {p.relative_to(out).as_posix(): stat.S_IMODE(p.lstat().st_mode) for p in out.rglob("*")}
    assert modes == {"open": 0o755, "open/suid": 0o755, "shared.txt": 0o644, "tool": 0o755}
    assert stat.S_IMODE(out.stat().st_mode) & 0o7022 == 0  # the host folder itself was never the program's
    assert all(p.lstat().st_uid == os.geteuid() for p in out.rglob("*"))
    assert rec.ok and sorted(rec.artifacts) == ["open/suid", "shared.txt", "tool"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_network_attempts_are_recorded_under_every_mechanism(io, mechanism: str) -> None:
    rec = _run("network_quiet", io, mechanism=mechanism)
    assert rec.exit_status == 0 and rec.violations == ["network"] and rec.network_packets >= 2
    _zero_on_from_scratch_board(rec)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_mount_table_names_no_host_path_of_the_run(io, mechanism: str) -> None:
    (io["input"] / "hint.txt").write_text(str(io["work"] / "private"))
    rec = _run("probe", io, mechanism=mechanism)
    seen = json.loads((io["output"] / "probe.json").read_text())
    table = seen["/proc/self/mountinfo"] + seen["/proc/self/cgroup"]
    for host in (io["input"], io["work"], io["output"], HOSTILE / "probe", HOSTILE):
        assert str(host) not in table, host
    assert "icl-sandbox" not in seen["/proc/self/cgroup"]  # own cgroup namespace
    for path in (str(io["work"] / "private"), "/input/../private", "/submission/../private"):
        assert seen[path].startswith("refused"), (path, seen[path])
    assert rec.ok


def test_cgroup_v2_files(tmp_path: Path) -> None:
    # A v2 hierarchy (faked as files): limits go to memory.max / pids.max, counters come from memory.peak,
    # memory.events and pids.events.
    root = tmp_path / "cg"
    (root / "job").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "job" / "cgroup.subtree_control").write_text("memory pids\n")
    g = RunGroup.create(256 * 1024**2, 10, root=root, proc_cgroup="0::/job\n")
    assert g is not None and g.version == "v2" and g.memory == g.pids and g.memory.parent == root / "job"
    assert (g.memory / "memory.max").read_text() == str(256 * 1024**2)
    assert (g.memory / "pids.max").read_text() == "10"
    (g.memory / "memory.peak").write_text("1234\n")
    (g.memory / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 2\n")
    (g.memory / "pids.events").write_text("max 3\n")
    assert (g.peak_memory(), g.oom_kills(), g.memory_failures(), g.refused_forks()) == (1234, 2, 7, 3)


def test_cgroup_v1_files(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    for ctrl, probe in (("memory", "memory.usage_in_bytes"), ("pids", "cgroup.procs")):
        (root / ctrl / "job").mkdir(parents=True)
        (root / ctrl / probe).write_text("0\n")
    g = RunGroup.create(64 * 1024**2, 5, root=root, proc_cgroup="4:memory:/job\n8:pids:/\n")
    assert g is not None and g.version == "v1"
    assert g.memory.parent == root / "memory" / "job" and g.pids.parent == root / "pids"
    assert (g.memory / "memory.limit_in_bytes").read_text() == str(64 * 1024**2)
    (g.memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
    (g.memory / "memory.max_usage_in_bytes").write_text("99\n")
    assert (g.oom_kills(), g.peak_memory()) == (4, 99)
    assert RunGroup.create(1, 1, root=tmp_path / "none", proc_cgroup="") is None

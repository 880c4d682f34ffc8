"""Nothing writable is executable, no code from anonymous memory files, no host path in /proc/1/cmdline.

The attack in miniature: a ``/bin/sh`` submission copies an executable and a shared library from the
sandbox's read-only system into ``/tmp``, ``/dev/shm`` and OUTPUT and tries to run them (directly, through
the dynamic loader, through ``dlopen``), then runs one from an anonymous memory file and tries a user
namespace of its own (where it could mount an executable tmpfs). Every attempt is refused under every
mechanism; NumPy and SciPy still work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from icl.sandbox import harness
from icl.sandbox.harness import available_mechanisms, run_submission
from icl.sandbox.seccomp import ARCHES, build_filter
from small_limits import SMALL

HOSTILE = Path(__file__).parent / "hostile_submissions"
MECHANISMS = available_mechanisms()


@pytest.fixture
def io(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "input").mkdir()
    return {"input": tmp_path / "input", "output": tmp_path / "out"}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_code_written_at_run_time_never_runs(io, mechanism: str) -> None:
    rec = run_submission(HOSTILE / "exec_written", io["input"], io["output"], limits=SMALL, mechanism=mechanism)
    lines = (io["output"] / "attempts.txt").read_text().splitlines()
    attempts = dict(line.split(": ", 1) for line in lines)
    for place in ("/tmp", "/dev/shm", "/output"):
        for how in ("exec", "ld.so", "dlopen"):
            assert attempts[f"{how} {place}"] == "refused", (how, place)
    assert attempts["memfd"].startswith("refused") and attempts["userns"].startswith("refused")
    assert attempts["numpy"] == "8"  # the honest part ran
    assert rec.ok, rec.messages
    assert rec.hardening["writable_executable"] == [] and rec.hardening["seccomp"] == "installed"
    assert "memfd_create" in rec.hardening["seccomp_refuses"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_first_process_shows_no_host_path(io, tmp_path: Path, mechanism: str, monkeypatch) -> None:
    staging = tmp_path / "staging-root"
    staging.mkdir()
    monkeypatch.setenv(harness.STAGING_ENV, str(staging))
    rec = run_submission(HOSTILE / "probe", io["input"], io["output"], limits=SMALL, mechanism=mechanism)
    cmdline = json.loads((io["output"] / "probe.json").read_text())["/proc/1/cmdline"]
    assert rec.ok and cmdline
    for host in (staging, io["input"], io["output"], HOSTILE, "icl-sandbox", "--bind", "--ro-bind"):
        assert str(host) not in cmdline, (host, cmdline)


def test_a_host_without_the_filter_records_the_fallback(io, monkeypatch) -> None:
    monkeypatch.setattr(harness, "build_filter", lambda: None)
    rec = run_submission(HOSTILE / "exec_written", io["input"], io["output"], limits=SMALL, mechanism=MECHANISMS[0])
    attempts = (io["output"] / "attempts.txt").read_text()
    assert "memfd: ran" in attempts and "exec /tmp: refused" in attempts  # noexec still holds
    assert rec.hardening["seccomp"] == "not built for this architecture" and not rec.hardening["seccomp_refuses"]
    assert any(m.startswith("fallback: seccomp filter not installed") for m in rec.messages)


def test_filter_is_built_for_each_known_architecture_only() -> None:
    for machine in ARCHES:
        prog = build_filter(machine)
        assert prog and len(prog) % 8 == 0 and len(prog) // 8 < 256
    assert build_filter("sparc64") is None

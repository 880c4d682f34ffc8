"""One control group per sandboxed run: total memory and process count of everything the run starts.

A run's processes are put in a fresh group before the sandbox starts (the forked harness child joins it
before ``exec``), so every process the program creates is counted together, whatever its uid and however
many other sandboxes run beside it. Two layouts are supported:

cgroup v2 (``/sys/fs/cgroup`` is the unified hierarchy)
    ``memory.max``, ``memory.swap.max``, ``pids.max``; peak from ``memory.peak``, kills from
    ``memory.events`` (``oom_kill``), refused forks from ``pids.events`` (``max``).
cgroup v1 (``memory`` and ``pids`` controllers mounted separately)
    ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``), ``pids.max``; peak from
    ``memory.max_usage_in_bytes``, kills from ``memory.oom_control`` (``oom_kill``).

Groups are made below the harness's own group (its row in ``/proc/self/cgroup``), so the limits of whatever
runs the harness still bound the sandbox. On v2, where the harness's own group holds processes and so may
not delegate controllers, the group goes below the root instead.

A group is named after the process that made it (``icl-sandbox-<pid>-<random>``). A group outlives its run
only when the kernel keeps it busy past the removal's deadline (an exiting process not yet reaped on a
loaded host) or when the harness itself is killed; the next group made in the same place removes such
leftovers once they are empty and their maker is gone.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

#: Where the kernel's cgroup file systems are mounted.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Name prefix of the groups this module makes.
PREFIX = "icl-sandbox-"


def _own_paths(proc_cgroup: str) -> dict[str, str]:
    """Map each controller (``memory``, ``pids``, ``""`` for v2) to its group in ``/proc/self/cgroup``."""
    out: dict[str, str] = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for ctrl in parts[1].split(",") if parts[1] else [""]:
                out[ctrl] = parts[2]
    return out


def _read_int(path: Path, key: str | None = None) -> int | None:
    """Read an integer file (``max`` reads as None), or the value of ``key`` in a ``key value`` file."""
    try:
        text = path.read_text()
    except OSError:
        return None
    if key is None:
        text = text.strip()
        return int(text) if text.isdigit() else None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return None


@dataclass
class RunGroup:
    """The control group(s) of one run.

    Attributes
    ----------
    version : str
        ``"v2"`` or ``"v1"``.
    memory : Path
        The group holding the memory controller.
    pids : Path
        The group holding the pids controller (the same folder on v2).

    """

    version: str
    memory: Path
    pids: Path

    @property
    def mechanism(self) -> str:
        """How the limits are enforced, as recorded: ``cgroup-v2`` or ``cgroup-v1``."""
        return f"cgroup-{self.version}"

    @classmethod
    def create(
        cls, memory_bytes: int, processes: int, root: Path = CGROUP_ROOT, proc_cgroup: str | None = None
    ) -> RunGroup | None:
        """Make a fresh group with these limits; None when this host offers no usable cgroup.

        Parameters
        ----------
        memory_bytes : int
            Total memory of every process in the group (RAM and swap).
        processes : int
            Processes and threads the group may hold at once.
        root : Path
            Mount point of the cgroup file systems (a parameter for tests).
        proc_cgroup : str, optional
            Text of ``/proc/self/cgroup`` (read when None).

        """
        if proc_cgroup is None:
            try:
                proc_cgroup = Path("/proc/self/cgroup").read_text()
            except OSError:
                return None
        own = _own_paths(proc_cgroup)
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        if (root / "cgroup.controllers").is_file():
            return cls._create_v2(root, own.get("", "/"), name, memory_bytes, processes)
        if (root / "memory" / "memory.usage_in_bytes").is_file() and (
            root / "pids" / "cgroup.procs"
        ).is_file():
            return cls._create_v1(root, own, name, memory_bytes, processes)
        return None

    @classmethod
    def _create_v1(
        cls, root: Path, own: dict[str, str], name: str, memory_bytes: int, processes: int
    ) -> RunGroup | None:
        mem = root / "memory" / own.get("memory", "/").lstrip("/") / name
        pids = root / "pids" / own.get("pids", "/").lstrip("/") / name
        _remove_leftovers(mem.parent)
        _remove_leftovers(pids.parent)
        try:
            mem.mkdir()
            pids.mkdir()
            (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
            if (mem / "memory.memsw.limit_in_bytes").exists():  # swap accounting: RAM + swap together
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (pids / "pids.max").write_text(str(processes))
        except OSError:
            for d in (mem, pids):
                _rmdir(d)
            return None
        return cls("v1", mem, pids)

    @classmethod
    def _create_v2(
        cls, root: Path, own: str, name: str, memory_bytes: int, processes: int
    ) -> RunGroup | None:
        for parent in (root / own.lstrip("/"), root):
            group = parent / name
            _remove_leftovers(parent)
            try:
                ctrls = (parent / "cgroup.subtree_control").read_text().split()
                if not {"memory", "pids"} <= set(ctrls):
                    (parent / "cgroup.subtree_control").write_text("+memory +pids")
                group.mkdir()
            except OSError:
                continue
            try:
                (group / "memory.max").write_text(str(memory_bytes))
                if (group / "memory.swap.max").exists():
                    (group / "memory.swap.max").write_text("0")
                (group / "pids.max").write_text(str(processes))
                return cls("v2", group, group)
            except OSError:
                _rmdir(group)
        return None

    def join(self) -> None:
        """Move the calling process into the group (called in the forked child before ``exec``)."""
        pid = str(os.getpid())
        for d in {self.memory, self.pids}:
            (d / "cgroup.procs").write_text(pid)

    def pids_now(self) -> list[int]:
        """List the processes in the group now."""
        try:
            return [int(x) for x in (self.pids / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def peak_memory(self) -> int | None:
        """Largest total memory the group held (bytes)."""
        if self.version == "v2":
            return _read_int(self.memory / "memory.peak")
        return _read_int(self.memory / "memory.max_usage_in_bytes")

    def oom_kills(self) -> int:
        """Count the processes the kernel killed for passing the group's memory limit."""
        if self.version == "v2":
            return _read_int(self.memory / "memory.events", "oom_kill") or 0
        return _read_int(self.memory / "memory.oom_control", "oom_kill") or 0

    def memory_failures(self) -> int:
        """Count the times an allocation met the limit (v1 ``memory.failcnt``; v2 ``max`` events)."""
        if self.version == "v2":
            return _read_int(self.memory / "memory.events", "max") or 0
        return _read_int(self.memory / "memory.failcnt") or 0

    def peak_processes(self) -> int | None:
        """Most processes the group held at once (``pids.peak``; None where the kernel lacks it)."""
        return _read_int(self.pids / "pids.peak")

    def current_processes(self) -> int:
        """Count the processes and threads in the group now (``pids.current``)."""
        return _read_int(self.pids / "pids.current") or 0

    def refused_forks(self) -> int:
        """Forks refused because the group was at ``pids.max``."""
        return _read_int(self.pids / "pids.events", "max") or 0

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the group until it is empty; True when it emptied in time."""
        if self.version == "v2" and (self.memory / "cgroup.kill").exists():
            try:
                (self.memory / "cgroup.kill").write_text("1")
            except OSError:
                pass
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids_now() or ([] if self.pids == self.memory else _procs(self.memory))
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the group folders."""
        self.kill_all()
        for d in {self.memory, self.pids}:
            _rmdir(d)


def _procs(group: Path) -> list[int]:
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _rmdir(d: Path, timeout_s: float = 10.0) -> bool:
    """Remove group ``d`` once empty; True when it is gone.

    The kernel may hold a group for a while after its last process was killed (an exited process counts
    until its parent reaps it, which on a loaded host took more than a second), hence the deadline.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def _maker_gone(name: str) -> bool:
    """Tell whether the process named in a group's name (``icl-sandbox-<pid>-<random>``) has exited."""
    pid, sep, _ = name[len(PREFIX) :].partition("-")
    if not sep or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def _remove_leftovers(parent: Path) -> None:
    """Remove this module's empty groups in ``parent`` whose maker has exited (best effort)."""
    try:
        leftovers = [d for d in parent.iterdir() if d.name.startswith(PREFIX) and _maker_gone(d.name)]
    except OSError:
        return
    for d in leftovers:
        if not _procs(d):
            _rmdir(d, timeout_s=0.0)

"""Sandboxed execution of a submission: ``run INPUT OUTPUT`` under fixed limits, in one control group.

:func:`run_submission` runs the submission's ``run`` program with no network, the input read-only, the rest
of the host out of reach (the system's programs and libraries, the interpreter and an allow-list of
third-party packages are visible; the reference package only on the reference-assisted track), writes
allowed only in OUTPUT and in a size-capped private ``/tmp``, and memory, process, CPU, file-size,
output-size and wall-clock limits. It returns a :class:`RunRecord` with what ran, what it cost, which limits
were hit, which rules were broken, the track declared and the track the run counts for, the captured logs
and the SHA-256 of every artifact and of the code tree before and after.

Two mechanisms build the same file-system view (see ``docs/pro-harness.md``):

``bwrap``
    Debian's bubblewrap: new network, PID, IPC, UTS and cgroup namespaces and a fresh root of read-only binds.
``unshare``
    util-linux ``unshare`` namespaces plus ``mount`` and ``chroot`` done by a small generated script;
    used when ``bwrap`` is not installed.

The submission, the input and OUTPUT are staged under a neutral folder (hard links or copies; OUTPUT is
moved to the host folder after the run), so the sandbox's mount table names no host path of theirs. The
run's processes share one control group (:mod:`icl.sandbox.cgroups`) that caps their total memory and
number; where no cgroup can be made, ``RLIMIT_AS`` and ``RLIMIT_NPROC`` stand in and the record says so.
The program itself runs as an unprivileged uid with every capability dropped, every writable mount
``noexec`` and a seccomp filter (:mod:`icl.sandbox.seccomp`). The record is signed with the evaluator key
(:mod:`icl.sandbox.signing`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import OwnFolder
from icl.sandbox.cgroups import RunGroup
from icl.sandbox.fstree import collect_output, remove_tree, scan, stage_tree, tree_sha256
from icl.sandbox.layout import INPUT_MOUNT, OUTPUT_MOUNT, SITE_MOUNT, SUBMISSION_MOUNT, TRACKS, Mount, layout
from icl.sandbox.seccomp import REFUSED, build_filter
from icl.sandbox.signing import evaluator_key, key_outside, sign

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "Limits",
    "RunRecord",
    "available_mechanisms",
    "parse_size",
    "run_submission",
    "tree_sha256",
]

#: The uid/gid the submission runs as when the harness is root ("nobody" on Debian).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
#: How often the watchdog looks at the clock, the memory and process counters, and the output.
POLL_S = 0.05
OUTPUT_POLL_S = 0.25
#: What is still hashed and kept of an OUTPUT past its size or entry limit (for diagnosis only).
DIAGNOSTIC_BYTES = 16 * 1024**2
DIAGNOSTIC_ENTRIES = 1000
#: Most bytes of the files left in /tmp and /dev/shm that the wrapper sends for the provenance scan.
EVIDENCE_BYTES = 64 * 1024**2
#: Where the run's folders are staged (a neutral path: it is what the sandbox's mount table shows).
STAGING_ENV = "ICL_SANDBOX_STAGING"
#: Patterns in the program's stderr that name a refused allocation or fork (the kernel reports the
#: refusal to the program, not to us; the record calls these limits hit only when the exit status failed).
MEMORY_PATTERNS = re.compile(
    rb"MemoryError|Unable to allocate|Cannot allocate memory|std::bad_alloc|"
    rb"out of memory",
    re.I,
)
FORK_PATTERNS = re.compile(
    rb"Resource temporarily unavailable|BlockingIOError|fork: retry|"
    rb"can't fork|Cannot fork",
    re.I,
)

# Trusted, runs as the sandbox's first program (before privileges are dropped): it brings the namespace's
# loopback up (the unshare fallback starts with it down, so that attempts there are counted as under bwrap),
# remounts every writable mount noexec (bubblewrap has no noexec option; the wrapper holds CAP_SYS_ADMIN in
# the sandbox's mount namespace for this one step), reports the network counters of the namespace before and
# after, the writable mounts still executable, whether the seccomp filter (argv[1], hex; "-" for none) was
# installed in the program's process, and the rusage of the program and the descendants it waited for, on
# fd 3; after the program has exited it sends the regular files of /tmp and /dev/shm (up to argv[2] bytes)
# as a tar stream on fd 4, for the provenance scan (CAP_DAC_READ_SEARCH lets it read them). The program
# inherits neither descriptor.
_WRAPPER = r"""
import ctypes, io, json, os, re, stat, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
def lo_up():
    try:
        import fcntl, socket, struct
        with socket.socket() as s:
            flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))[:18])[1]
            fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
    except OSError:
        pass
def snap():
    text = ""
    for name in ("/proc/net/snmp", "/proc/net/snmp6"):
        try:
            with open(name) as fh:
                text += fh.read()
        except OSError:
            pass
    return text
def mounts():
    out = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            f = line.split()
            out[re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])] = f[5].split(",")
    return out
def writable_exec():
    return sorted(mp for mp, opts in mounts().items() if "ro" not in opts and "noexec" not in opts)
def noexec():
    bits = {"nosuid": 2, "nodev": 4, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    for mp, opts in mounts().items():
        if "ro" in opts or "noexec" in opts:
            continue
        flags = 32 | 4096 | 8  # MS_REMOUNT | MS_BIND | MS_NOEXEC, keeping the mount's other (locked) flags
        for o in opts:
            flags |= bits.get(o, 0)
        if not {"noatime", "relatime"} & set(opts):
            flags |= 1 << 24  # MS_STRICTATIME
        libc.mount(b"none", mp.encode(), None, flags, None)
    return writable_exec()
def seccomp(prog):
    if not prog:
        return "not built for this architecture"
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    buf = ctypes.create_string_buffer(prog, len(prog))
    fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return "no_new_privs refused: " + os.strerror(ctypes.get_errno())
    if libc.prctl(22, 2, ctypes.addressof(fp), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return "refused by the kernel: " + os.strerror(ctypes.get_errno())
    return "installed"
def evidence(cap):
    import tarfile
    t0, sent, files, skipped = time.monotonic(), 0, 0, 0
    try:
        sink = os.fdopen(4, "wb")
    except OSError:
        return
    with sink, tarfile.open(fileobj=sink, mode="w|") as tf:
        for top in ("/tmp", "/dev/shm"):
            for folder, _, names in os.walk(top):
                for name in names:
                    path = os.path.join(folder, name)
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    except OSError:
                        skipped += 1
                        continue
                    with os.fdopen(fd, "rb") as fh:
                        st = os.fstat(fd)
                        if not stat.S_ISREG(st.st_mode):
                            continue
                        if sent + st.st_size > cap:
                            skipped += 1
                            continue
                        data = fh.read(st.st_size)
                    info = tarfile.TarInfo(path.lstrip("/"))
                    info.size = len(data)
                    tf.addfile(info, io.BytesIO(data))
                    sent, files = sent + len(data), files + 1
    os.write(3, ("#evidence %d %d %d %.3f\n" % (files, sent, skipped, time.monotonic() - t0)).encode())
lo_up()
os.write(3, ("#writable-exec %s\n" % json.dumps(noexec())).encode())
os.write(3, ("#before\n" + snap()).encode())
pid = os.fork()
if pid == 0:
    try:
        got = seccomp(bytes.fromhex(sys.argv[1]) if sys.argv[1] != "-" else b"")
        os.write(3, ("#seccomp %s\n" % got).encode())
        os.close(3)
        try:
            os.close(4)
        except OSError:
            pass
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
try:
    evidence(int(sys.argv[2]))
except OSError:  # the harness stopped reading: the scan goes without
    pass
os.write(3, ("#after\n" + snap() + "#rusage %r %r %d\n" % (ru.ru_utime, ru.ru_stime, ru.ru_maxrss)).encode())
sys.exit(code if code >= 0 else 128 - code)
"""
#: Counters that grow when a packet is sent, a connection is tried or a send finds no route (IPv4 and IPv6).
NETWORK_COUNTERS = (
    "Ip.OutRequests",
    "Ip.OutNoRoutes",
    "Tcp.ActiveOpens",
    "Udp.OutDatagrams",
    "Udp.NoPorts",
    "Ip6OutRequests",
    "Ip6OutNoRoutes",
    "Udp6OutDatagrams",
)


def parse_size(text: str | int) -> int:
    """Bytes from ``"8G"``, ``"512M"``, ``"64K"`` or a plain integer (binary units)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", str(text), re.I)
        if not m:
            raise InputError(f"not a size: {text!r} (use e.g. 8G, 512M, 64K)", None, "memory")
        value = int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")
    if value <= 0:
        raise InputError(f"size must be positive, got {text!r}", None, "memory")
    return value


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run.

    Attributes
    ----------
    cpus : int
        CPU cores the program may run on (affinity; also sets the BLAS/OpenMP thread counts).
    memory_bytes : int
        Total memory of every process of the run (control group: RAM, page cache, tmpfs); without a
        usable control group, address space per process (``RLIMIT_AS``).
    timeout_s : float
        Wall-clock limit; the whole sandbox is killed when it passes.
    cpu_time_s : int
        CPU seconds per process (``RLIMIT_CPU``); default ``cpus * timeout_s``.
    processes : int
        Processes and threads of the run at once (control group ``pids.max``; without one, ``RLIMIT_NPROC``
        of the sandbox uid).
    file_bytes : int
        Largest file the program may write (``RLIMIT_FSIZE``, apparent size).
    tmp_bytes : int
        Size of the private ``/tmp`` and ``/dev/shm`` (tmpfs, RAM-backed).
    output_bytes : int
        Total size of OUTPUT, apparent and allocated; the sandbox is killed when it passes, and it is
        checked again after exit. Also the most bytes hashed.
    output_entries : int
        Files, folders and other entries in OUTPUT.
    output_depth : int
        Deepest folder nesting in OUTPUT.
    log_bytes : int
        Bytes of stdout and of stderr kept in the logs (the rest is counted and dropped).

    """

    cpus: int = 4
    memory_bytes: int = 8 * 1024**3
    timeout_s: float = 1200.0
    cpu_time_s: int = 0
    processes: int = 256
    file_bytes: int = 1024**3
    tmp_bytes: int = 1024**3
    output_bytes: int = 2 * 1024**3
    output_entries: int = 100_000
    output_depth: int = 32
    log_bytes: int = 1024**2

    def __post_init__(self) -> None:
        if self.cpus < 1:
            raise InputError(f"cpus must be >= 1, got {self.cpus}", None, "cpus")
        if not self.timeout_s > 0:
            raise InputError(f"timeout must be positive, got {self.timeout_s}", None, "timeout")
        for name in (
            "memory_bytes",
            "processes",
            "file_bytes",
            "tmp_bytes",
            "output_bytes",
            "output_entries",
            "output_depth",
            "log_bytes",
        ):
            if getattr(self, name) <= 0:
                raise InputError(f"{name} must be positive", None, name)
        if self.cpu_time_s <= 0:
            object.__setattr__(self, "cpu_time_s", int(self.cpus * self.timeout_s) + 1)


@dataclass
class RunRecord:
    """What happened in one sandboxed run (written as ``run_record.json`` in the logs folder).

    ``violations`` lists rule breaks as short codes; any violation, or a non-zero exit, makes ``ok`` false
    and the scorer gives 0 for the task. Codes: ``code_not_frozen`` (hash differs from the frozen one; the
    program is not run), ``submission_tree`` (the submission or input could not be staged, e.g. nested too
    deep; not run), ``code_changed``, ``network``, ``timeout``, ``memory``, ``processes``, ``file_size``,
    ``cpu_time``, ``output_size``, ``output_entries``, ``output_depth``, ``output_entry`` (a link or special
    file in OUTPUT, not moved).

    ``track`` is the track declared (argument, else the manifest, else from-scratch); ``effective_track`` the
    one the run counts for: a from-scratch run whose files match the reference package
    (:mod:`icl.sandbox.provenance`) counts as reference-assisted, with the evidence in ``track_evidence``.
    That is not a violation: the run keeps its score on the reference-assisted board.

    ``hardening`` says what held the program to code it did not write: ``writable_executable`` (writable
    mounts the kernel would not remount ``noexec``; empty when every one is), ``seccomp`` (``installed``, or
    why not) and ``seccomp_refuses`` (the system calls refused, :mod:`icl.sandbox.seccomp`). A fallback is
    also said in ``messages``; either is None when the sandbox was stopped before the wrapper reported.

    ``runtime_scan`` (from-scratch runs): the files the program left in ``/tmp`` and ``/dev/shm`` (files,
    bytes, skipped past the bound, seconds) and in OUTPUT, scanned for reference code after the run
    (:func:`icl.sandbox.provenance.scan_runtime`); a hit there moves the run to reference-assisted too, with
    the evidence under ``track_evidence["runtime"]``.
    """

    mechanism: str
    command: list[str]
    track: str = "from-scratch"
    effective_track: str = "from-scratch"
    track_evidence: dict[str, Any] = field(default_factory=dict)
    exit_status: int | None = None
    signal: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_bytes: int = 0
    usage_source: str = ""
    peak_memory_bytes: int | None = None
    memory_mechanism: str = ""
    oom_kills: int = 0
    peak_processes: int = 0
    process_mechanism: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    limits_hit: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    network_packets: int | None = None
    output_scan: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    input_sha256: str = ""
    code_sha256_before: str = ""
    code_sha256_after: str = ""
    frozen_sha256: str | None = None
    overhead_s: dict[str, float] = field(default_factory=dict)
    hardening: dict[str, Any] = field(default_factory=dict)
    runtime_scan: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the program exited 0 and broke no rule."""
        return self.exit_status == 0 and not self.violations

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``ok`` included."""
        return {**asdict(self), "ok": self.ok}

    def signed_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` with the evaluator's signature (:mod:`icl.sandbox.signing`): what is written
        as ``run_record.json`` and what the scorers accept."""
        return sign(self.to_dict())

    def _violate(self, code: str, message: str) -> None:
        if code not in self.violations:
            self.violations.append(code)
        self.messages.append(message)

    def _hit(self, limit: str) -> None:
        if limit not in self.limits_hit:
            self.limits_hit.append(limit)


# ---------------------------------------------------------------------------------------- mechanisms


def _environment(path: str, limits: Limits, has_site: bool) -> dict[str, str]:
    threads = str(limits.cpus)
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLCONFIGDIR": "/tmp",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "ICL_CPUS": threads,
    }
    if has_site:
        env["PYTHONPATH"] = SITE_MOUNT
    return env


def _wrapper_python() -> str:
    """Return the interpreter that runs the trusted wrapper: the harness's own base installation (mounted)."""
    exe = Path(sys.base_prefix) / "bin" / "python3"
    return str(exe) if exe.exists() else "/usr/bin/python3"


def _drop_privileges(uid: int | None) -> list[str]:
    """``setpriv`` prefix that drops every capability (and becomes ``uid`` when the harness is root)."""
    ids = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if uid is not None else []
    return ["setpriv", *ids, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def _wrapper_argv(inner: list[str]) -> list[str]:
    """The trusted wrapper's command line: interpreter, wrapper, seccomp filter (hex), the most bytes of
    ``/tmp`` and ``/dev/shm`` sent for the provenance scan, then the program."""
    prog = build_filter()
    return [_wrapper_python(), "-I", "-S", "-c", _WRAPPER, prog.hex() if prog else "-", str(EVIDENCE_BYTES),
            *inner]


def _bwrap_argv(mounts: list[Mount], env: dict[str, str], inner: list[str], root_user: bool) -> list[str]:
    """bubblewrap's options (passed through ``--args``, so the sandbox's first process shows none of them)."""
    argv = [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--hostname",
        "sandbox",
    ]
    if not root_user:
        # Uid 0 of a user namespace of its own (the host user outside): without a second namespace, whose
        # uid 0 could not remount what the first one mounted.
        argv += ["--unshare-user", "--uid", "0", "--gid", "0"]
    # What the wrapper needs where bwrap would drop it (a harness not run as root; as root bwrap keeps every
    # capability): CAP_SYS_ADMIN to remount writable mounts noexec, CAP_DAC_READ_SEARCH to read what the
    # program left in /tmp, CAP_SETPCAP for setpriv to empty the bounding set (without it the program, uid
    # 0 of its namespace, would get these back at exec), CAP_SETUID/CAP_SETGID for setpriv to switch to the
    # sandbox uid. setpriv drops them all before the program starts.
    for cap in ("CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH", "CAP_SETPCAP", "CAP_SETUID", "CAP_SETGID"):
        argv += ["--cap-add", cap]
    for m in mounts:
        if m.kind == "ro":
            argv += ["--ro-bind", m.source, m.dest]
        elif m.kind == "rw":
            argv += ["--bind", m.source, m.dest]
        elif m.kind == "mask":
            argv += ["--perms", "0755", "--size", "4096", "--tmpfs", m.dest, "--remount-ro", m.dest]
        elif m.kind == "symlink":
            argv += ["--symlink", m.source, m.dest]
        elif m.kind == "proc":
            argv += ["--proc", m.dest]
        elif m.kind == "dev":
            argv += ["--dev", m.dest]
        elif m.kind == "tmpfs":
            argv += ["--perms", "1777", "--size", str(m.size), "--tmpfs", m.dest]
        elif m.kind == "dir":
            argv += ["--perms", "0755", "--dir", m.dest]
    for k, v in env.items():
        argv += ["--setenv", k, v]
    return [*argv, "--chdir", "/tmp"]


def _unshare_argv(
    mounts: list[Mount], env: dict[str, str], inner: list[str], newroot: Path, root_user: bool
) -> list[str]:
    """Build the fallback: a generated script that mounts the same view on ``newroot`` and chroots into it."""
    q = shlex.quote
    r = q(str(newroot))
    lines = ["set -eu", "umask 022", f"mount -t tmpfs -o size=1m,mode=0755 sandbox-root {r}"]
    for m in mounts:
        dest = f"{r}{q(m.dest)}"
        if m.kind == "dir":
            lines.append(f"mkdir -p -m 0755 {dest}")
        elif m.kind in ("ro", "rw"):
            if Path(m.source).is_dir():
                lines.append(f"mkdir -p {dest}")
            else:
                lines.append(f"mkdir -p {r}{q(str(Path(m.dest).parent))} && touch {dest}")
            flags = "ro,nosuid,nodev" if m.kind == "ro" else "nosuid,nodev,noexec"
            lines.append(f"mount --bind {q(m.source)} {dest} && mount -o remount,bind,{flags} {dest}")
        elif m.kind == "mask":
            lines.append(f"mount -t tmpfs -o ro,size=4k,mode=0755,nosuid,nodev sandbox-mask {dest}")
        elif m.kind == "symlink":
            lines.append(f"ln -s {q(m.source)} {dest}")
        elif m.kind == "proc":
            lines.append(f"mkdir -p {dest} && mount -t proc -o nosuid,nodev,noexec proc {dest}")
        elif m.kind == "dev":
            lines.append(f"mkdir -p {dest} && mount -t tmpfs -o size=64k,mode=0755,nosuid,noexec sandbox-dev {dest}")
            for node in ("null", "zero", "full", "random", "urandom", "tty"):
                lines.append(f"touch {dest}/{node} && mount --bind /dev/{node} {dest}/{node}")
            for i, name in enumerate(("stdin", "stdout", "stderr")):
                lines.append(f"ln -s /proc/self/fd/{i} {dest}/{name}")
            lines.append(f"ln -s /proc/self/fd {dest}/fd")
        elif m.kind == "tmpfs":
            lines.append(
                f"mkdir -p {dest} && mount -t tmpfs -o size={m.size},mode=1777,nosuid,nodev,noexec "
                f"sandbox-tmp {dest}"
            )
    lines.append(f"mount -o remount,ro {r}")
    env_args = " ".join(q(f"{k}={v}") for k, v in env.items())
    lines.append(
        f"cd {r} && exec chroot {r} /usr/bin/env -i {env_args} " + " ".join(q(a) for a in _wrapper_argv(inner))
    )
    script = "\n".join(lines)
    user = [] if root_user else ["--user", "--map-root-user"]
    return [
        "unshare",
        *user,
        "--mount",
        "--propagation",
        "private",
        "--net",
        "--pid",
        "--ipc",
        "--uts",
        "--cgroup",
        "--fork",
        "--kill-child",
        "/bin/sh",
        "-c",
        script,
    ]


def available_mechanisms() -> list[str]:
    """Sandbox mechanisms usable on this host, preferred first (``bwrap``, ``unshare``)."""
    found = [name for name in ("bwrap", "unshare") if shutil.which(name)]
    if "unshare" in found and not (shutil.which("chroot") and shutil.which("mount")):
        found.remove("unshare")
    return found


# --------------------------------------------------------------------------------------- execution


class _Capped:
    """Read a pipe to EOF, keeping the first ``cap`` bytes and counting the rest."""

    def __init__(self, fh, cap: int):
        self.data = bytearray()
        self.total = 0
        self._fh, self._cap = fh, cap
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while chunk := self._fh.read(65536):
            self.total += len(chunk)
            room = self._cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
        self._fh.close()


def _uid_processes(uid: int) -> list[int]:
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_sandbox(proc: subprocess.Popen, group: RunGroup | None) -> None:
    """Kill the wrapper's process group, the namespace's first process, then what is left in the group.

    The kernel kills the whole PID namespace with its first process. The process group goes first so the
    wrapper dies by SIGKILL itself rather than exiting on its own after seeing its child die; its children
    are listed before, while it lives.
    """
    children = _children(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in children:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if group is not None:
        group.kill_all(timeout_s=1.0)


def _parse_status(text: str) -> tuple[int | None, float | None, int | None]:
    """Read the wrapper's report: (network attempts, CPU seconds, peak RSS in bytes).

    Each is None when the sandbox was killed before the program returned (the wrapper died with it).
    """
    if "#after" not in text:
        return None, None, None

    def counters(block: str) -> dict[str, int]:
        out: dict[str, int] = {}
        lines = block.splitlines()
        for head, vals in zip(lines, lines[1:], strict=False):  # /proc/net/snmp: header, then values
            h, v = head.split(), vals.split()
            if h and v and h[0] == v[0] and h[0].endswith(":") and len(h) == len(v):
                for k, x in zip(h[1:], v[1:], strict=True):
                    out[f"{h[0][:-1]}.{k}"] = int(x) if x.lstrip("-").isdigit() else 0
        for line in lines:  # /proc/net/snmp6: one "name value" per line
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit():
                out[parts[0]] = int(parts[1])
        return out

    before_text, after_text = text.split("#after", 1)
    before, after = counters(before_text), counters(after_text)
    packets = sum(after.get(k, 0) - before.get(k, 0) for k in NETWORK_COUNTERS)
    m = re.search(r"^#rusage (\S+) (\S+) (\d+)$", after_text, re.M)
    if not m:
        return packets, None, None
    return packets, float(m.group(1)) + float(m.group(2)), int(m.group(3)) * 1024  # ru_maxrss is KiB


def _hardening(record: RunRecord, text: str) -> None:
    """Record the wrapper's report on noexec mounts and the seccomp filter; say any fallback."""
    m = re.search(r"^#writable-exec (.*)$", text, re.M)
    left = json.loads(m.group(1)) if m else None
    m = re.search(r"^#seccomp (.*)$", text, re.M)
    got = m.group(1) if m else None
    record.hardening = {
        "writable_executable": left,
        "seccomp": got,
        "seccomp_refuses": [*REFUSED, "clone/unshare of namespaces", "shmat(SHM_EXEC)", "READ_IMPLIES_EXEC"]
        if got == "installed"
        else [],
    }
    if left:
        record.messages.append(f"fallback: writable mounts left executable (noexec refused): {left}")
    if got is not None and got != "installed":
        record.messages.append(f"fallback: seccomp filter not installed ({got}); memory files not refused")


def _sample_usage(pids: list[int], cpu: dict[int, float]) -> int:
    """Largest peak RSS (bytes) of ``pids``; update ``cpu`` (pid -> CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    peak = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, IndexError):
            continue
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        m = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if m:
            peak = max(peak, int(m.group(1)) * 1024)
    return peak


def _preexec(limits: Limits, status_fd: int, evidence_fd: int, cpus: list[int], group: RunGroup | None) -> None:
    """In the forked child before ``exec``: control group, limits, CPU affinity, the status pipe on fd 3 and
    the evidence pipe on fd 4 (both passed in above fd 9, so neither dup2 overwrites the other)."""
    if group is not None:
        group.join()
    os.dup2(status_fd, 3)
    os.dup2(evidence_fd, 4)
    os.sched_setaffinity(0, cpus)
    if group is None:  # the recorded last resort: per process and per uid
        mem = limits.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    # Soft limit sends SIGXCPU; the hard limit a second later SIGKILLs a program that ignores it.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_time_s, limits.cpu_time_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def manifest_track(submission: Path) -> str | None:
    """Return the ``track`` of ``submission/manifest.json`` when it names one of :data:`TRACKS`."""
    path = submission / "manifest.json"
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return None
        track = json.loads(path.read_text("utf-8")).get("track")
    except (OSError, ValueError, AttributeError):
        return None
    return track if track in TRACKS else None


def staging_root() -> Path:
    """Folder under which runs are staged (``$ICL_SANDBOX_STAGING``, else the system's temporary folder)."""
    return Path(os.environ.get(STAGING_ENV) or tempfile.gettempdir())


def _output_check(record: RunRecord, limits: Limits, staged_out: Path) -> str | None:
    """Scan the staged OUTPUT within bounds; name the limit passed (None when within all)."""
    s = scan(staged_out, limits.output_depth, limits.output_entries)
    record.output_scan = {
        "entries": s.entries,
        "files": s.files,
        "apparent_bytes": s.apparent_bytes,
        "allocated_bytes": s.allocated_bytes,
        "depth": s.depth + bool(s.too_deep),
        "entries_truncated": s.truncated,
    }
    if max(s.apparent_bytes, s.allocated_bytes) > limits.output_bytes:
        return "output_size"
    if s.truncated:
        return "output_entries"
    if s.too_deep:
        return "output_depth"
    return None


def run_submission(
    submission: str | os.PathLike,
    input_dir: str | os.PathLike,
    output_dir: str | os.PathLike,
    cpus: int = 4,
    memory: str | int = "8G",
    timeout_s: float = 1200.0,
    frozen_hash: str | None = None,
    *,
    logs_dir: str | os.PathLike | None = None,
    limits: Limits | None = None,
    mechanism: str | None = None,
    track: str | None = None,
    use_cgroup: bool = True,
) -> RunRecord:
    """Run ``SUBMISSION/run INPUT OUTPUT`` in a sandbox and record what happened.

    Parameters
    ----------
    submission : path-like
        Submission folder holding an executable ``run`` (read-only at ``/submission``).
    input_dir : path-like
        Inputs of this run (read-only at ``/input``). Hidden interventions change only this.
    output_dir : path-like
        Where the program's files end up (``/output`` inside); created if absent, else an empty folder of
        this user's (see :class:`icl.io.OwnFolder`).
    cpus : int
        CPU cores granted (at most the cores this host offers).
    memory : str or int
        Total memory of the run, e.g. ``"8G"``.
    timeout_s : float
        Wall-clock limit in seconds.
    frozen_hash : str, optional
        :func:`tree_sha256` of the submission when it was frozen; on mismatch nothing runs and the record
        carries the violation ``code_not_frozen``.
    logs_dir : path-like, optional
        Where ``stdout.log``, ``stderr.log`` and ``run_record.json`` go; default ``<output_dir>.logs``.
        Absent or an empty folder of this user's, never a symbolic link; each file is created new.
    limits : Limits, optional
        Full limits; overrides ``cpus``, ``memory`` and ``timeout_s`` when given.
    mechanism : {"bwrap", "unshare"}, optional
        Force a mechanism; default the first of :func:`available_mechanisms`.
    track : {"from-scratch", "reference-assisted"}, optional
        The track declared; default the manifest's ``track``, else from-scratch. Only the
        reference-assisted track sees the reference package.
    use_cgroup : bool
        Set False to run under the per-process fallback limits even where a control group can be made.

    Returns
    -------
    RunRecord

    """
    from icl.sandbox.provenance import classify_track

    submission, input_dir, output_dir = Path(submission), Path(input_dir), Path(output_dir)
    limits = limits or Limits(cpus=cpus, memory_bytes=parse_size(memory), timeout_s=float(timeout_s))
    logs = Path(logs_dir) if logs_dir is not None else output_dir.with_name(output_dir.name + ".logs")
    for path, name in ((submission, "submission"), (input_dir, "input")):
        if not path.is_dir():
            raise InputError("not a folder", str(path), name)
    run = submission / "run"
    if not run.is_file() or run.is_symlink() or not os.access(run, os.X_OK):
        raise InputError("missing, a link, or not executable", str(run), "run")
    if track is not None and track not in TRACKS:
        raise InputError(f"track must be one of {TRACKS}, got {track!r}", None, "track")
    evaluator_key()  # the record is signed: no run without the key (created on first use)
    key_outside(submission, input_dir, output_dir, logs)
    mechs = available_mechanisms()
    mechanism = mechanism or (mechs[0] if mechs else None)
    if mechanism not in mechs:
        raise InputError(
            f"sandbox mechanism {mechanism!r} is not available here (have {mechs})", None, "mechanism"
        )
    # Both folders are the harness's own (created here, or empty and this user's) and are written only
    # through their descriptors: a planted link or file in them is never written through.
    out_folder = OwnFolder(output_dir, "output")
    try:
        logs = OwnFolder(logs, "logs")
    except BaseException:
        out_folder.close()
        raise

    declared = track or manifest_track(submission) or "from-scratch"
    inner = [f"{SUBMISSION_MOUNT}/run", INPUT_MOUNT, OUTPUT_MOUNT]
    host_cpus = sorted(os.sched_getaffinity(0))
    granted = host_cpus[: limits.cpus]
    limit_info = {**asdict(limits), "cpus_granted": len(granted)}
    record = RunRecord(
        mechanism=mechanism,
        command=inner,
        limits=limit_info,
        frozen_sha256=frozen_hash,
        track=declared,
        effective_track=declared,
    )
    record.logs = {
        "dir": str(logs.path),
        "stdout": "stdout.log",
        "stderr": "stderr.log",
        "record": "run_record.json",
    }
    try:
        record.code_sha256_before = tree_sha256(submission)
        record.input_sha256 = tree_sha256(input_dir)
    except (InputError, OSError) as exc:
        return _refuse(record, logs, "submission_tree", f"cannot read the submission or input tree: {exc}")
    if frozen_hash is not None and frozen_hash != record.code_sha256_before:
        return _refuse(
            record,
            logs,
            "code_not_frozen",
            f"submission hash {record.code_sha256_before} != frozen {frozen_hash}",
        )
    if declared == "from-scratch":
        t0 = time.monotonic()
        try:
            record.effective_track, record.track_evidence = classify_track(submission)
        except (OSError, ValueError) as exc:  # what cannot be read cannot be shown free of reference code
            record.effective_track = "reference-assisted"
            record.track_evidence = {
                "hits": [],
                "summary": f"the provenance scan could not read the submission: {exc}",
            }
        record.overhead_s["provenance"] = round(time.monotonic() - t0, 3)
        if record.effective_track != declared:
            record.messages.append(
                "declared from-scratch, counted as reference-assisted: "
                + record.track_evidence.get("summary", "")
            )

    root_user = os.geteuid() == 0
    owner = (os.geteuid(), os.getegid())
    t0 = time.monotonic()
    stage = Path(tempfile.mkdtemp(prefix="icl-sandbox-", dir=staging_root()))
    group = None
    try:
        try:
            stage_tree(submission, stage / "submission")
            stage_tree(input_dir, stage / "input", link=True)
        except (InputError, OSError) as exc:
            return _refuse(record, logs, "submission_tree", f"cannot stage the submission or input: {exc}")
        staged_out = stage / "output"
        staged_out.mkdir(mode=0o755)
        if root_user:
            os.chown(staged_out, SANDBOX_UID, SANDBOX_GID)
        record.overhead_s["staging"] = round(time.monotonic() - t0, 3)
        t0 = time.monotonic()
        group = RunGroup.create(limits.memory_bytes, limits.processes) if use_cgroup else None
        record.overhead_s["cgroup"] = round(time.monotonic() - t0, 3)
        record.memory_mechanism = group.mechanism if group else "rlimit_as"
        record.process_mechanism = group.mechanism if group else "rlimit_nproc"
        evidence = _execute(record, limits, stage, group, mechanism, granted, root_user, logs)
        if group is not None:
            record.peak_memory_bytes = group.peak_memory()
        _collect(record, limits, staged_out, out_folder.fd, owner)
        if declared == "from-scratch":
            _runtime_provenance(record, evidence, output_dir)
    finally:
        if group is not None:
            group.remove()
        remove_tree(stage)
        out_folder.close()
    record.code_sha256_after = tree_sha256(submission)
    if record.code_sha256_after != record.code_sha256_before:
        record._violate("code_changed", "the submission's files changed during the run")
    logs.write_json("run_record.json", record.signed_dict())
    logs.close()
    return record


def _runtime_provenance(record: RunRecord, evidence: bytes, output_dir: Path) -> None:
    """Scan what a from-scratch program left in ``/tmp``, ``/dev/shm`` and OUTPUT for reference code."""
    from icl.sandbox.provenance import scan_runtime

    t0 = time.monotonic()
    try:
        found = scan_runtime(evidence, output_dir)
    except (OSError, ValueError) as exc:
        found = {"hits": [], "summary": f"the run-time scan failed: {exc}"}
    record.overhead_s["runtime_provenance"] = round(time.monotonic() - t0, 3)
    record.runtime_scan.update(found)
    if found["hits"]:
        before = record.track_evidence
        parts = [before["summary"]] if before.get("hits") else []
        record.effective_track = "reference-assisted"
        record.track_evidence = {
            **before,
            "hits": sorted({*before.get("hits", []), *found["hits"]}),
            "runtime": found,
            "summary": "; ".join([*parts, "at run time: " + found["summary"]]),
        }
        record.messages.append("declared from-scratch, counted as reference-assisted at run time: " + found["summary"])


def _refuse(record: RunRecord, logs: OwnFolder, code: str, message: str) -> RunRecord:
    """Record a run that was not started."""
    record._violate(code, message)
    record.code_sha256_after = record.code_sha256_before
    _write_logs(record, logs, b"", b"", 0, 0)
    logs.close()
    return record


def _execute(
    record: RunRecord,
    limits: Limits,
    stage: Path,
    group: RunGroup | None,
    mechanism: str,
    granted: list[int],
    root_user: bool,
    logs: OwnFolder,
) -> bytes:
    """Start the sandbox, watch it until it ends, and fill the record's usage, status and limits.

    Returns the tar stream of the files the program left in ``/tmp`` and ``/dev/shm`` (empty when the
    sandbox was stopped before the wrapper sent it).
    """
    uid = SANDBOX_UID if root_user else os.geteuid()
    mounts, path = layout(
        stage / "submission", stage / "input", stage / "output", limits.tmp_bytes, record.track
    )
    env = _environment(path, limits, any(m.dest.startswith(SITE_MOUNT + "/") for m in mounts))
    program = [*_drop_privileges(SANDBOX_UID if root_user else None), *record.command]
    newroot = None
    args_file = None
    keep = [3, 4]
    if mechanism == "bwrap":
        # The arguments name host paths; read from a file they are not on the command line that the
        # sandbox's first process (bubblewrap's init) shows in /proc/1/cmdline.
        args_file = tempfile.TemporaryFile()
        args_file.write(b"".join(a.encode() + b"\0" for a in _bwrap_argv(mounts, env, program, root_user)))
        args_file.seek(0)
        args_fd = fcntl.fcntl(args_file.fileno(), fcntl.F_DUPFD_CLOEXEC, 10)  # clear of fd 3
        keep.append(args_fd)
        argv = ["bwrap", "--args", str(args_fd), "--", *_wrapper_argv(program)]
    else:
        newroot = Path(tempfile.mkdtemp(prefix="icl-sandbox-root-"))
        argv = _unshare_argv(mounts, env, program, newroot, root_user)
    if group is None and not root_user:
        # Without a control group, other processes of the same uid count against RLIMIT_NPROC.
        limits = Limits(**{**asdict(limits), "processes": limits.processes + len(_uid_processes(uid))})

    status_r, status_w = _high_pipe()
    evidence_r, evidence_w = _high_pipe()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=tuple(keep),
            start_new_session=True,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            preexec_fn=lambda: _preexec(limits, status_w, evidence_w, granted, group),
        )
    finally:
        os.close(status_w)
        os.close(evidence_w)
        if args_file is not None:
            os.close(args_fd)
            args_file.close()
    out, err = _Capped(proc.stdout, limits.log_bytes), _Capped(proc.stderr, limits.log_bytes)
    status_text = bytearray()
    status_thread = threading.Thread(target=lambda: _drain(status_r, status_text), daemon=True)
    status_thread.start()
    evidence = bytearray()
    evidence_thread = threading.Thread(
        target=lambda: _drain(evidence_r, evidence, 2 * EVIDENCE_BYTES), daemon=True
    )
    evidence_thread.start()
    killed_for = None
    next_output = start
    sampled_cpu: dict[int, float] = {}
    sampled_peak = 0
    while True:
        pid, wstatus, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        pids = group.pids_now() if group is not None else (_uid_processes(uid) if root_user else [])
        sampled_peak = max(sampled_peak, _sample_usage(pids, sampled_cpu))
        if group is None:
            record.peak_processes = max(record.peak_processes, len(pids))
        if killed_for is None:
            if now - start > limits.timeout_s:
                killed_for = "timeout"
            elif group is not None and group.oom_kills():
                killed_for = "memory"
            elif now >= next_output:
                next_output = now + OUTPUT_POLL_S
                killed_for = _output_check(record, limits, stage / "output")
            if killed_for is not None:
                _kill_sandbox(proc, group)
        time.sleep(POLL_S)
    record.wall_s = round(time.monotonic() - start, 3)
    if group is not None:
        group.kill_all()  # daemons the program left behind in its namespace died with it; be sure
    proc.returncode = os.waitstatus_to_exitcode(wstatus)
    for t in (out.thread, err.thread, status_thread, evidence_thread):
        t.join(timeout=5)
    if newroot is not None:
        newroot.rmdir()

    packets, cpu_s, peak = _parse_status(status_text.decode("utf-8", "replace"))
    _hardening(record, status_text.decode("utf-8", "replace"))
    record.network_packets = packets
    # The wrapper's rusage covers every process the program waited for; when the sandbox was killed it is
    # gone, and the watchdog's samples (a lower bound) stand in.
    record.usage_source = "wait4" if cpu_s is not None else "sampled"
    record.cpu_s = round(cpu_s if cpu_s is not None else sum(sampled_cpu.values()), 3)
    record.peak_rss_bytes = peak if peak is not None else sampled_peak
    code = proc.returncode
    record.exit_status = code
    sig = code - 128 if code > 128 else (-code if code < 0 else 0)
    if sig:
        try:
            record.signal = signal.Signals(sig).name
        except ValueError:
            record.signal = str(sig)
    if group is not None:
        record.oom_kills = group.oom_kills()
        record.peak_processes = group.peak_processes() or record.peak_processes
    _classify(record, limits, killed_for, bytes(err.data), group)
    _write_logs(record, logs, bytes(out.data), bytes(err.data), out.total, err.total)
    m = re.search(r"^#evidence (\d+) (\d+) (\d+) (\S+)$", status_text.decode("utf-8", "replace"), re.M)
    record.runtime_scan = (
        {"files": int(m.group(1)), "bytes": int(m.group(2)), "skipped": int(m.group(3)),
         "seconds": float(m.group(4))}
        if m
        else {"summary": "not sent: the sandbox was stopped before the program's files were read"}
    )
    return bytes(evidence)


def _collect(
    record: RunRecord, limits: Limits, staged_out: Path, output_dir: int, owner: tuple[int, int]
) -> None:
    """Check OUTPUT again after exit and move what passes to the host folder, hashed and with safe modes."""
    passed = _output_check(record, limits, staged_out)
    if passed is not None and passed not in record.violations:
        _violate_output(record, limits, passed, "after exit")
    max_bytes, max_entries = limits.output_bytes, limits.output_entries
    if {"output_size", "output_entries"} & set(record.violations):
        # Past the caps only the first few files are read, for diagnosis: hashing up to the cap would cost
        # seconds per GiB for a run that scores 0 anyway (six sparse 1 GiB files once took 47 s).
        max_bytes, max_entries = min(max_bytes, DIAGNOSTIC_BYTES), min(max_entries, DIAGNOSTIC_ENTRIES)
        record.messages.append(
            f"OUTPUT past its limits: at most {max_bytes} bytes in {max_entries} entries were hashed and kept"
        )
    got = collect_output(
        staged_out,
        output_dir,
        max_bytes=max_bytes,
        max_entries=max_entries,
        max_depth=limits.output_depth,
        owner=owner if os.geteuid() == 0 else None,
    )
    record.artifacts = got.artifacts
    for rel in got.refused[:20]:
        record._violate("output_entry", f"{rel}: link, hard link or special file in OUTPUT not kept")
    if got.unhashed and not {"output_size", "output_entries"} & set(record.violations):
        record._violate(
            "output_size",
            f"{len(got.unhashed)} file(s) past the {limits.output_bytes}-byte budget "
            "were neither hashed nor kept",
        )


def _violate_output(record: RunRecord, limits: Limits, code: str, when: str) -> None:
    s = record.output_scan
    text = {
        "output_size": f"OUTPUT holds {s.get('apparent_bytes')} bytes apparent, {s.get('allocated_bytes')} "
        f"allocated, past the {limits.output_bytes}-byte limit",
        "output_entries": f"OUTPUT holds more than {limits.output_entries} entries",
        "output_depth": f"OUTPUT nests folders deeper than {limits.output_depth} levels (or unreadable ones)",
    }[code]
    record._hit(code)
    record._violate(code, f"{text} ({when})")


def _drain(fd: int, sink: bytearray, cap: int = 1 << 20) -> None:
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(65536):
            if len(sink) < cap:
                sink += chunk


def _high_pipe() -> tuple[int, int]:
    """A pipe whose ends sit above fd 9 (close-on-exec), clear of the fds 3 and 4 the child sets up."""
    fds = os.pipe()
    try:
        r, w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    finally:
        for fd in fds:
            os.close(fd)
    return r, w


def _classify(
    record: RunRecord, limits: Limits, killed_for: str | None, stderr: bytes, group: RunGroup | None
) -> None:
    """Name the limits hit and the rules broken, from the watchdog, the exit status and the counters."""
    if killed_for == "timeout":
        record._hit("timeout")
        record._violate("timeout", f"wall clock passed {limits.timeout_s} s; the sandbox was killed")
    elif killed_for in ("output_size", "output_entries", "output_depth"):
        _violate_output(record, limits, killed_for, "during the run; the sandbox was killed")
    if record.network_packets:
        record._violate(
            "network",
            f"{record.network_packets} network attempt(s): packets sent, connections "
            "tried or sends refused for lack of a route",
        )
    failed = record.exit_status != 0
    if record.signal == "SIGXFSZ" or (failed and b"File too large" in stderr):
        record._hit("file_size")
        record._violate("file_size", f"a file passed the {limits.file_bytes}-byte limit")
    if record.signal == "SIGXCPU" or (
        record.signal == "SIGKILL" and killed_for is None and record.cpu_s >= limits.cpu_time_s
    ):
        record._hit("cpu_time")
        record._violate("cpu_time", f"a process used more than {limits.cpu_time_s} CPU seconds")
    if record.oom_kills:
        record._hit("memory")
        record._violate(
            "memory",
            f"the run's processes together passed the {limits.memory_bytes}-byte limit; "
            f"the kernel killed {record.oom_kills} of them and the sandbox was stopped",
        )
    elif failed and killed_for is None and MEMORY_PATTERNS.search(stderr):
        record._hit("memory")
        record._violate("memory", f"an allocation was refused under the {limits.memory_bytes}-byte limit")
    refused = group.refused_forks() if group is not None else 0
    if (
        refused
        or (group is None and record.peak_processes >= limits.processes)
        or (failed and FORK_PATTERNS.search(stderr))
    ):
        record._hit("processes")
        detail = f" ({refused} fork(s) refused)" if refused else ""
        record._violate("processes", f"the {limits.processes}-process limit was reached{detail}")


def _write_logs(
    record: RunRecord, logs: OwnFolder, out: bytes, err: bytes, out_total: int, err_total: int
) -> None:
    logs.write_bytes("stdout.log", out)
    logs.write_bytes("stderr.log", err)
    record.logs.update(
        {
            "stdout_bytes": out_total,
            "stderr_bytes": err_total,
            "stdout_truncated": out_total > len(out),
            "stderr_truncated": err_total > len(err),
            "stdout_sha256": hashlib.sha256(out).hexdigest(),
            "stderr_sha256": hashlib.sha256(err).hexdigest(),
        }
    )
    logs.write_json("run_record.json", record.signed_dict())

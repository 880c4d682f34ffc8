"""Sandboxed execution of a professional-track submission: ``run INPUT OUTPUT`` under fixed limits.

:func:`run_submission` runs the submission's ``run`` program with no network, the input read-only, the rest
of the host out of reach (only the system's programs and libraries, the Python installation and a read-only
copy of the third-party site-packages are visible), writes allowed only in OUTPUT and in a size-capped
private ``/tmp``, and CPU, memory, process, file-size, output-size and wall-clock limits. It returns a
:class:`RunRecord` with what ran, what it cost, which limits were hit, which rules were broken, the
captured logs and the SHA-256 of every artifact and of the code tree before and after.

Two mechanisms build the same file-system view (see ``docs/pro-harness.md``):

``bwrap``
    Debian's bubblewrap: new network, PID, IPC and UTS namespaces and a fresh root of read-only binds.
``unshare``
    util-linux ``unshare`` namespaces plus ``mount`` and ``chroot`` done by a small generated script;
    used when ``bwrap`` is not installed.

In both, the program itself runs as an unprivileged uid with every capability dropped, which is what makes
``RLIMIT_NPROC`` bite (the kernel does not count processes of root).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shlex
import shutil
import signal
import site
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import sha256_file, write_json

#: The uid/gid the submission runs as when the harness is root ("nobody" on Debian).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
#: Fixed paths inside the sandbox.
SUBMISSION_MOUNT = "/submission"
INPUT_MOUNT = "/input"
OUTPUT_MOUNT = "/output"
SITE_MOUNT = "/opt/site-packages"
#: Host files under /etc that programs need (dynamic loader, user names, time zone).
ETC_FILES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf",
             "passwd", "group", "hosts")
#: Top-level system folders bound read-only (or re-created as the same symbolic link, on merged-/usr hosts).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Distribution names kept out of the sandbox's site-packages: the from-scratch track may not import the
#: reference package (seed 001 section 7).
HIDDEN_DISTRIBUTIONS = re.compile(r"^(icl|icl_bench[-.].*|_editable_skbc_icl_bench.*|__pycache__)$")
#: How often the watchdog looks at the clock, the output size and the process count (seconds).
POLL_S = 0.05
OUTPUT_POLL_S = 0.25
#: Patterns in the program's stderr that name a refused allocation or fork (the kernel reports the
#: refusal to the program, not to us; the record calls these limits hit only when the exit status failed).
MEMORY_PATTERNS = re.compile(rb"MemoryError|Unable to allocate|Cannot allocate memory|std::bad_alloc|"
                             rb"out of memory", re.I)
FORK_PATTERNS = re.compile(rb"Resource temporarily unavailable|BlockingIOError|fork: retry|"
                           rb"can't fork|Cannot fork", re.I)

# Trusted, runs as the sandbox's first program (before privileges are dropped): it reports the network
# counters of the namespace before and after, and the rusage of the program and the descendants it waited
# for, on fd 3, which the program does not inherit.
_WRAPPER = r"""
import os, sys
def snap():
    text = ""
    for name in ("/proc/net/snmp", "/proc/net/snmp6"):
        try:
            with open(name) as fh:
                text += fh.read()
        except OSError:
            pass
    return text
os.write(3, ("#before\n" + snap()).encode())
pid = os.fork()
if pid == 0:
    os.close(3)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
os.write(3, ("#after\n" + snap() + "#rusage %r %r %d\n" % (ru.ru_utime, ru.ru_stime, ru.ru_maxrss)).encode())
sys.exit(code if code >= 0 else 128 - code)
"""
#: Counters that grow when a packet is sent or a send finds no route (IPv4 and IPv6).
NETWORK_COUNTERS = ("Ip.OutRequests", "Ip.OutNoRoutes", "Tcp.ActiveOpens", "Udp.OutDatagrams",
                    "Ip6OutRequests", "Ip6OutNoRoutes", "Udp6OutDatagrams")


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
        Address space per process (``RLIMIT_AS``).
    timeout_s : float
        Wall-clock limit; the whole sandbox is killed when it passes.
    cpu_time_s : int
        CPU seconds per process (``RLIMIT_CPU``); default ``cpus * timeout_s``.
    processes : int
        Processes of the sandbox user (``RLIMIT_NPROC``).
    file_bytes : int
        Largest file the program may write (``RLIMIT_FSIZE``).
    tmp_bytes : int
        Size of the private ``/tmp`` and ``/dev/shm`` (tmpfs, RAM-backed).
    output_bytes : int
        Total size of OUTPUT; the sandbox is killed when it passes.
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
    log_bytes: int = 1024**2

    def __post_init__(self) -> None:
        if self.cpus < 1:
            raise InputError(f"cpus must be >= 1, got {self.cpus}", None, "cpus")
        if not self.timeout_s > 0:
            raise InputError(f"timeout must be positive, got {self.timeout_s}", None, "timeout")
        for name in ("memory_bytes", "processes", "file_bytes", "tmp_bytes", "output_bytes", "log_bytes"):
            if getattr(self, name) <= 0:
                raise InputError(f"{name} must be positive", None, name)
        if self.cpu_time_s <= 0:
            object.__setattr__(self, "cpu_time_s", int(self.cpus * self.timeout_s) + 1)


@dataclass
class RunRecord:
    """What happened in one sandboxed run (written as ``run_record.json`` in the logs folder).

    ``violations`` lists rule breaks as short codes; any violation, or a non-zero exit, makes ``ok`` false
    and the scorer gives 0 for the task. Codes: ``code_not_frozen`` (hash differs from the frozen one; the
    program is not run), ``code_changed``, ``network``, ``timeout``, ``memory``, ``processes``,
    ``file_size``, ``cpu_time``, ``output_size``, ``output_entry`` (a link or special file in OUTPUT,
    removed).
    """

    mechanism: str
    command: list[str]
    exit_status: int | None = None
    signal: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_bytes: int = 0
    usage_source: str = ""
    peak_processes: int = 0
    limits: dict[str, Any] = field(default_factory=dict)
    limits_hit: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    network_packets: int | None = None
    logs: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    input_sha256: str = ""
    code_sha256_before: str = ""
    code_sha256_after: str = ""
    frozen_sha256: str | None = None

    @property
    def ok(self) -> bool:
        """True when the program exited 0 and broke no rule."""
        return self.exit_status == 0 and not self.violations

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``ok`` included."""
        return {**asdict(self), "ok": self.ok}

    def _violate(self, code: str, message: str) -> None:
        if code not in self.violations:
            self.violations.append(code)
        self.messages.append(message)


# ------------------------------------------------------------------------------------------ hashing


def tree_sha256(root: str | os.PathLike) -> str:
    """SHA-256 of a folder tree: every path, type, executable bit, link target and file content.

    Parameters
    ----------
    root : path-like
        The folder (links are hashed as links, never followed).

    Returns
    -------
    str
        Hex digest; equal for trees with equal content regardless of timestamps and owners.

    """
    root = Path(root)
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix().encode()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                h.update(b"L\0" + rel + b"\0" + os.readlink(p).encode() + b"\n")
            elif stat.S_ISDIR(st.st_mode):
                h.update(b"D\0" + rel + b"\n")
            elif stat.S_ISREG(st.st_mode):
                x = b"x" if st.st_mode & 0o111 else b"-"
                h.update(b"F\0" + rel + b"\0" + x + b"\0" + sha256_file(p).encode() + b"\n")
            else:
                h.update(b"S\0" + rel + b"\n")
    return h.hexdigest()


# ---------------------------------------------------------------------------------- sandbox layout


@dataclass(frozen=True)
class _Mount:
    kind: str  # ro | rw | tmpfs | symlink | proc | dev | dir
    dest: str
    source: str = ""
    size: int = 0


def _python_mounts() -> tuple[list[_Mount], list[str]]:
    """Mounts that make ``#!/usr/bin/env python3`` with numpy work; returns (mounts, PATH entries)."""
    mounts: list[_Mount] = []
    path: list[str] = []
    prefix = Path(sys.base_prefix).resolve()
    if not prefix.is_relative_to("/usr"):
        # A Python built outside /usr (pyenv, conda): bind its installation only, at the same path.
        mounts.append(_Mount("ro", str(prefix), str(prefix)))
        path.append(str(prefix / "bin"))
    purelib = Path(sysconfig.get_paths()["purelib"])
    sites = [Path(p) for p in site.getsitepackages()] if sys.prefix != sys.base_prefix else [purelib]
    for sp in sites:
        if not sp.is_dir() or sp.resolve().is_relative_to(prefix):
            continue  # already visible with the installation
        for entry in sorted(sp.iterdir()):
            if not HIDDEN_DISTRIBUTIONS.match(entry.name) and not entry.name.endswith(".pth"):
                mounts.append(_Mount("ro", f"{SITE_MOUNT}/{entry.name}", str(entry)))
    return mounts, path


def _layout(submission: Path, input_dir: Path, output_dir: Path, limits: Limits) -> tuple[list[_Mount], str]:
    """The file-system view of the sandbox and its PATH."""
    mounts: list[_Mount] = []
    for name in SYSTEM_DIRS:
        p = Path("/") / name
        if p.is_symlink():
            mounts.append(_Mount("symlink", str(p), os.readlink(p)))
        elif p.is_dir():
            mounts.append(_Mount("ro", str(p), str(p)))
    for name in ETC_FILES:
        if (Path("/etc") / name).exists():
            mounts.append(_Mount("ro", f"/etc/{name}", f"/etc/{name}"))
    py, py_path = _python_mounts()
    mounts += py
    mounts += [
        _Mount("ro", SUBMISSION_MOUNT, str(submission)),
        _Mount("ro", INPUT_MOUNT, str(input_dir)),
        _Mount("rw", OUTPUT_MOUNT, str(output_dir)),
        _Mount("proc", "/proc"),
        _Mount("dev", "/dev"),
        _Mount("tmpfs", "/dev/shm", size=limits.tmp_bytes),
        _Mount("tmpfs", "/tmp", size=limits.tmp_bytes),
    ]
    # Parent folders made explicitly, world-readable (bwrap would create them mode 0700, root-only).
    dests = {m.dest for m in mounts}
    parents = sorted({str(a) for m in mounts for a in Path(m.dest).parents if str(a) != "/"} - dests,
                     key=lambda d: (d.count("/"), d))
    return [_Mount("dir", d) for d in parents] + mounts, ":".join([*py_path, "/usr/local/bin", "/usr/bin", "/bin"])


def _environment(path: str, limits: Limits, has_site: bool) -> dict[str, str]:
    threads = str(limits.cpus)
    env = {"PATH": path, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "MPLCONFIGDIR": "/tmp", "OMP_NUM_THREADS": threads,
           "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "ICL_CPUS": threads}
    if has_site:
        env["PYTHONPATH"] = SITE_MOUNT
    return env


def _wrapper_python() -> str:
    """The interpreter that runs the trusted wrapper: the harness's own base installation (mounted)."""
    exe = Path(sys.base_prefix) / "bin" / "python3"
    return str(exe) if exe.exists() else "/usr/bin/python3"


def _drop_privileges(uid: int | None) -> list[str]:
    """``setpriv`` prefix that becomes ``uid`` with no capability (empty when the harness is not root)."""
    if uid is None:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def _bwrap_argv(mounts: list[_Mount], env: dict[str, str], inner: list[str], root_user: bool) -> list[str]:
    argv = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--new-session", "--clearenv", "--hostname", "sandbox"]
    if root_user:
        # Only what setpriv needs to switch to the sandbox uid; it then drops these too.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
    for m in mounts:
        if m.kind == "ro":
            argv += ["--ro-bind", m.source, m.dest]
        elif m.kind == "rw":
            argv += ["--bind", m.source, m.dest]
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
    return [*argv, "--chdir", "/tmp", _wrapper_python(), "-I", "-S", "-c", _WRAPPER, *inner]


def _unshare_argv(mounts: list[_Mount], env: dict[str, str], inner: list[str], newroot: Path,
                  root_user: bool) -> list[str]:
    """The fallback: a generated script that mounts the same view on ``newroot`` and chroots into it."""
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
            flags = "ro,nosuid,nodev" if m.kind == "ro" else "nosuid,nodev"
            lines.append(f"mount --bind {q(m.source)} {dest} && mount -o remount,bind,{flags} {dest}")
        elif m.kind == "symlink":
            lines.append(f"ln -s {q(m.source)} {dest}")
        elif m.kind == "proc":
            lines.append(f"mkdir -p {dest} && mount -t proc -o nosuid,nodev,noexec proc {dest}")
        elif m.kind == "dev":
            lines.append(f"mkdir -p {dest} && mount -t tmpfs -o size=64k,mode=0755,nosuid sandbox-dev {dest}")
            for node in ("null", "zero", "full", "random", "urandom", "tty"):
                lines.append(f"touch {dest}/{node} && mount --bind /dev/{node} {dest}/{node}")
            for i, name in enumerate(("stdin", "stdout", "stderr")):
                lines.append(f"ln -s /proc/self/fd/{i} {dest}/{name}")
            lines.append(f"ln -s /proc/self/fd {dest}/fd")
        elif m.kind == "tmpfs":
            lines.append(f"mkdir -p {dest} && mount -t tmpfs -o size={m.size},mode=1777,nosuid,nodev "
                         f"sandbox-tmp {dest}")
    lines.append(f"mount -o remount,ro {r}")
    env_args = " ".join(q(f"{k}={v}") for k, v in env.items())
    lines.append(f"cd {r} && exec chroot {r} /usr/bin/env -i {env_args} {q(_wrapper_python())} -I -S -c {q(_WRAPPER)} "
                 + " ".join(q(a) for a in inner))
    script = "\n".join(lines)
    user = [] if root_user else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private", "--net", "--pid", "--ipc", "--uts",
            "--fork", "--kill-child", "/bin/sh", "-c", script]


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


def _tree_size(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _count_user_processes(uid: int) -> int:
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_sandbox(proc: subprocess.Popen) -> None:
    """Kill the wrapper's process group, then the namespace's first process (the kernel then kills the
    whole PID namespace). The group goes first so the wrapper dies by SIGKILL itself rather than
    exiting on its own after seeing its child die; its children are listed before, while it lives.
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


def _parse_status(text: str) -> tuple[int | None, float | None, int | None]:
    """Read the wrapper's report: (packets sent or unroutable, CPU seconds, peak RSS in bytes).

    Each is None when the sandbox was killed before the program returned (the wrapper died with it).
    """
    if "#after" not in text:
        return None, None, None

    def counters(block: str) -> dict[str, int]:
        out: dict[str, int] = {}
        lines = block.splitlines()
        for head, vals in zip(lines, lines[1:]):  # /proc/net/snmp: a header line, then its values
            h, v = head.split(), vals.split()
            if h and v and h[0] == v[0] and h[0].endswith(":") and len(h) == len(v):
                for k, x in zip(h[1:], v[1:]):
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


def _sample_usage(uid: int, cpu: dict[int, float]) -> tuple[int, int]:
    """Processes of ``uid`` now and their largest peak RSS (bytes); update ``cpu`` (pid -> CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK")
    count, peak = 0, 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            status = Path(entry.path, "status").read_text()
        except (OSError, IndexError):
            continue
        count += 1
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        m = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if m:
            peak = max(peak, int(m.group(1)) * 1024)
    return count, peak


def _preexec(limits: Limits, status_fd: int, cpus: list[int]) -> None:
    """In the forked child before ``exec``: limits, CPU affinity and the status pipe on fd 3."""
    os.dup2(status_fd, 3)
    os.sched_setaffinity(0, cpus)
    mem = limits.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    # Soft limit sends SIGXCPU; the hard limit a second later SIGKILLs a program that ignores it.
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_time_s, limits.cpu_time_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _prepare_output(output_dir: Path) -> None:
    if output_dir.is_symlink() or (output_dir.exists() and not output_dir.is_dir()):
        raise InputError("OUTPUT must be a folder", str(output_dir), "output")
    output_dir.mkdir(parents=True, exist_ok=True)
    if any(output_dir.iterdir()):
        raise InputError("OUTPUT must be empty (old files would be taken for new artifacts)", str(output_dir),
                         "output")


def _collect_artifacts(record: RunRecord, output_dir: Path) -> None:
    """Hash every file in OUTPUT; remove links and special files (they could point readers at the host)."""
    if os.geteuid() == 0:
        os.chown(output_dir, 0, 0)
    for dirpath, dirnames, filenames in os.walk(output_dir):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(output_dir).as_posix()
            st = p.lstat()
            if os.geteuid() == 0:
                os.lchown(p, 0, 0)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                record.artifacts[rel] = sha256_file(p)
            elif not stat.S_ISDIR(st.st_mode):
                p.unlink()
                if name in dirnames:
                    dirnames.remove(name)
                record._violate("output_entry", f"{rel}: link, hard link or special file in OUTPUT removed")


def run_submission(submission: str | os.PathLike, input_dir: str | os.PathLike, output_dir: str | os.PathLike,
                   cpus: int = 4, memory: str | int = "8G", timeout_s: float = 1200.0,
                   frozen_hash: str | None = None, *, logs_dir: str | os.PathLike | None = None,
                   limits: Limits | None = None, mechanism: str | None = None) -> RunRecord:
    """Run ``SUBMISSION/run INPUT OUTPUT`` in a sandbox and record what happened.

    Parameters
    ----------
    submission : path-like
        Submission folder holding an executable ``run`` (mounted read-only at ``/submission``).
    input_dir : path-like
        Inputs of this run (mounted read-only at ``/input``). Hidden interventions change only this.
    output_dir : path-like
        Where the program writes (``/output`` inside); created if absent, must be empty.
    cpus : int
        CPU cores granted (at most the cores this host offers).
    memory : str or int
        Address-space limit per process, e.g. ``"8G"``.
    timeout_s : float
        Wall-clock limit in seconds.
    frozen_hash : str, optional
        :func:`tree_sha256` of the submission when it was frozen; on mismatch nothing runs and the record
        carries the violation ``code_not_frozen``.
    logs_dir : path-like, optional
        Where ``stdout.log``, ``stderr.log`` and ``run_record.json`` go; default ``<output_dir>.logs``.
    limits : Limits, optional
        Full limits; overrides ``cpus``, ``memory`` and ``timeout_s`` when given.
    mechanism : {"bwrap", "unshare"}, optional
        Force a mechanism; default the first of :func:`available_mechanisms`.

    Returns
    -------
    RunRecord

    """
    submission, input_dir, output_dir = Path(submission), Path(input_dir), Path(output_dir)
    limits = limits or Limits(cpus=cpus, memory_bytes=parse_size(memory), timeout_s=float(timeout_s))
    logs = Path(logs_dir) if logs_dir is not None else output_dir.with_name(output_dir.name + ".logs")
    for path, name in ((submission, "submission"), (input_dir, "input")):
        if not path.is_dir():
            raise InputError("not a folder", str(path), name)
    run = submission / "run"
    if not run.is_file() or run.is_symlink() or not os.access(run, os.X_OK):
        raise InputError("missing, a link, or not executable", str(run), "run")
    mechs = available_mechanisms()
    mechanism = mechanism or (mechs[0] if mechs else None)
    if mechanism not in mechs:
        raise InputError(f"sandbox mechanism {mechanism!r} is not available here (have {mechs})", None,
                         "mechanism")
    _prepare_output(output_dir)
    logs.mkdir(parents=True, exist_ok=True)

    inner = [f"{SUBMISSION_MOUNT}/run", INPUT_MOUNT, OUTPUT_MOUNT]
    host_cpus = sorted(os.sched_getaffinity(0))
    granted = host_cpus[: limits.cpus]
    limit_info = {**asdict(limits), "cpus_granted": len(granted)}
    record = RunRecord(mechanism=mechanism, command=inner, limits=limit_info, frozen_sha256=frozen_hash,
                       code_sha256_before=tree_sha256(submission), input_sha256=tree_sha256(input_dir))
    record.logs = {"dir": str(logs), "stdout": "stdout.log", "stderr": "stderr.log", "record": "run_record.json"}
    if frozen_hash is not None and frozen_hash != record.code_sha256_before:
        record._violate("code_not_frozen", f"submission hash {record.code_sha256_before} != frozen {frozen_hash}")
        record.code_sha256_after = record.code_sha256_before
        _write_logs(record, logs, b"", b"", 0, 0)
        return record

    root_user = os.geteuid() == 0
    uid = SANDBOX_UID if root_user else os.geteuid()
    if root_user:
        os.chown(output_dir, SANDBOX_UID, SANDBOX_GID)
    mounts, path = _layout(submission.resolve(), input_dir.resolve(), output_dir.resolve(), limits)
    env = _environment(path, limits, any(m.dest.startswith(SITE_MOUNT + "/") for m in mounts))
    program = [*_drop_privileges(SANDBOX_UID if root_user else None), *inner]
    newroot = None
    if mechanism == "bwrap":
        argv = _bwrap_argv(mounts, env, program, root_user)
    else:
        newroot = Path(tempfile.mkdtemp(prefix="icl-sandbox-root-"))
        argv = _unshare_argv(mounts, env, program, newroot, root_user)
    # Other processes of the same uid count against RLIMIT_NPROC; say so when the harness is not root.
    base_procs = 0 if root_user else _count_user_processes(uid)
    if base_procs:
        limits = Limits(**{**asdict(limits), "processes": limits.processes + base_procs})

    status_r, status_w = os.pipe()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                pass_fds=(3,), start_new_session=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                                preexec_fn=lambda: _preexec(limits, status_w, granted))
    finally:
        os.close(status_w)
    out, err = _Capped(proc.stdout, limits.log_bytes), _Capped(proc.stderr, limits.log_bytes)
    status_text = bytearray()
    status_thread = threading.Thread(target=lambda: _drain(status_r, status_text), daemon=True)
    status_thread.start()
    killed_for = None
    next_size = start
    sampled_cpu: dict[int, float] = {}
    sampled_peak = 0
    while True:
        pid, wstatus, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if root_user:
            count, peak = _sample_usage(uid, sampled_cpu)
            record.peak_processes = max(record.peak_processes, count)
            sampled_peak = max(sampled_peak, peak)
        if killed_for is None and now - start > limits.timeout_s:
            killed_for = "timeout"
            _kill_sandbox(proc)
        elif killed_for is None and now >= next_size:
            next_size = now + OUTPUT_POLL_S
            if _tree_size(output_dir) > limits.output_bytes:
                killed_for = "output_size"
                _kill_sandbox(proc)
        time.sleep(POLL_S)
    record.wall_s = round(time.monotonic() - start, 3)
    proc.returncode = os.waitstatus_to_exitcode(wstatus)
    for t in (out.thread, err.thread, status_thread):
        t.join(timeout=5)
    if newroot is not None:
        newroot.rmdir()

    packets, cpu_s, peak = _parse_status(status_text.decode("utf-8", "replace"))
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
    _classify(record, limits, killed_for, bytes(err.data))
    _collect_artifacts(record, output_dir)
    record.code_sha256_after = tree_sha256(submission)
    if record.code_sha256_after != record.code_sha256_before:
        record._violate("code_changed", "the submission's files changed during the run")
    _write_logs(record, logs, bytes(out.data), bytes(err.data), out.total, err.total)
    return record


def _drain(fd: int, sink: bytearray) -> None:
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(65536):
            if len(sink) < 1 << 20:
                sink += chunk


def _classify(record: RunRecord, limits: Limits, killed_for: str | None, stderr: bytes) -> None:
    """Name the limits hit and the rules broken, from the watchdog, the exit status and the counters."""
    if killed_for == "timeout":
        record.limits_hit.append("timeout")
        record._violate("timeout", f"wall clock passed {limits.timeout_s} s; the sandbox was killed")
    if killed_for == "output_size":
        record.limits_hit.append("output_size")
        record._violate("output_size", f"OUTPUT grew past {limits.output_bytes} bytes; the sandbox was killed")
    if record.network_packets:
        record._violate("network", f"{record.network_packets} packet(s) sent or refused for lack of a route")
    failed = record.exit_status != 0
    if record.signal == "SIGXFSZ" or (failed and b"File too large" in stderr):
        record.limits_hit.append("file_size")
        record._violate("file_size", f"a file passed the {limits.file_bytes}-byte limit")
    if record.signal == "SIGXCPU" or (record.signal == "SIGKILL" and killed_for is None
                                      and record.cpu_s >= limits.cpu_time_s):
        record.limits_hit.append("cpu_time")
        record._violate("cpu_time", f"a process used more than {limits.cpu_time_s} CPU seconds")
    if failed and killed_for is None and MEMORY_PATTERNS.search(stderr):
        record.limits_hit.append("memory")
        record._violate("memory", f"an allocation was refused under the {limits.memory_bytes}-byte limit")
    if record.peak_processes >= limits.processes or (failed and FORK_PATTERNS.search(stderr)):
        record.limits_hit.append("processes")
        record._violate("processes", f"the {limits.processes}-process limit was reached")


def _write_logs(record: RunRecord, logs: Path, out: bytes, err: bytes, out_total: int, err_total: int) -> None:
    (logs / "stdout.log").write_bytes(out)
    (logs / "stderr.log").write_bytes(err)
    record.logs.update({"stdout_bytes": out_total, "stderr_bytes": err_total,
                        "stdout_truncated": out_total > len(out), "stderr_truncated": err_total > len(err),
                        "stdout_sha256": hashlib.sha256(out).hexdigest(),
                        "stderr_sha256": hashlib.sha256(err).hexdigest()})
    write_json(logs / "run_record.json", record.to_dict())

"""The seccomp filter of a sandboxed program: no code from anonymous memory files, no new namespaces.

Writable mounts of the sandbox are ``noexec`` (the harness's wrapper remounts them), so a program cannot run
or map as code a file it wrote. What remains is memory that is not a file on any mount: an anonymous memory
file (``memfd_create``, then ``execve``/``dlopen`` through ``/proc/self/fd``), a System V segment attached
executable, or a namespace of its own in which a fresh executable tmpfs could be mounted. The filter built
here refuses those system calls with ``EPERM`` (``clone3``, whose flags a filter cannot read, with
``ENOSYS`` so that the C library falls back to ``clone``); everything else is allowed. It is a classic BPF
program (``struct sock_filter`` array) that the wrapper installs with ``prctl(PR_SET_SECCOMP)`` in the
program's process just before ``exec``; it is built here, on the host, for the host's architecture.

Anonymous executable memory (``mmap``/``mprotect`` with ``PROT_EXEC``) stays allowed: JIT compilers on the
allow-list (numba) need it. A program that loads machine code by hand into such memory is not refused by
this filter; ``docs/pro-harness.md`` (threat model) says what covers that case.
"""

from __future__ import annotations

import platform
import struct

#: ``struct seccomp_data`` offsets: syscall number, architecture, low 32 bits of argument i.
_NR, _ARCH = 0, 4
_ARG = (16, 24, 32, 40, 48, 56)
#: BPF opcodes: load word absolute, jump equal / greater-or-equal / bit-set (constant), return.
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38
#: Namespace flags of ``clone``/``unshare`` (mount, cgroup, UTS, IPC, user, PID, network).
_NEW_NAMESPACES = 0x7E020000
#: ``personality`` bit that would make every readable mapping executable; ``shmat`` flag for code.
_READ_IMPLIES_EXEC = 0x0400000
_SHM_EXEC = 0o100000
_X32_BIT = 0x40000000

#: Per architecture: audit arch value and the numbers of the system calls the filter looks at.
ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "memfd_create": 319,
            "memfd_secret": 447,
            "ptrace": 101,
            "process_vm_writev": 311,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "clone": 56,
            "unshare": 272,
            "clone3": 435,
            "personality": 135,
            "shmat": 30,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "memfd_create": 279,
            "memfd_secret": 447,
            "ptrace": 117,
            "process_vm_writev": 271,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "clone": 220,
            "unshare": 97,
            "clone3": 435,
            "personality": 92,
            "shmat": 196,
        },
    ),
}
#: Refused outright (``EPERM``).
REFUSED = (
    "memfd_create",
    "memfd_secret",
    "ptrace",
    "process_vm_writev",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def build_filter(machine: str | None = None) -> bytes | None:
    """Return the filter as ``struct sock_filter`` bytes, or None on an architecture it does not know.

    Parameters
    ----------
    machine : str, optional
        ``platform.machine()`` of the host that runs the program (default this one).

    """
    machine = machine or platform.machine()
    if machine not in ARCHES:
        return None
    arch, nr = ARCHES[machine]
    deny, nosys = _ERRNO | EPERM, _ERRNO | ENOSYS
    # Body: a list of instructions whose jump targets are labels, resolved below.
    prog: list[tuple] = [
        (_LD, _ARCH),
        (_JEQ, arch, None, "deny"),  # another ABI (i386 through int 0x80): nothing of it is allowed
        (_LD, _NR),
    ]
    if machine == "x86_64":
        prog.append((_JGE, _X32_BIT, "deny", None))  # x32 numbers alias the 64-bit calls
    prog += [(_JEQ, nr[name], "deny", None) for name in REFUSED]
    prog += [
        (_JEQ, nr["clone3"], "nosys", None),
        (_JEQ, nr["clone"], "flags", None),
        (_JEQ, nr["unshare"], "flags", None),
        (_JEQ, nr["personality"], "personality", None),
        (_JEQ, nr["shmat"], "shmat", None),
        (_RET, _ALLOW),
        ("flags",),
        (_LD, _ARG[0]),
        (_JSET, _NEW_NAMESPACES, "deny", None),
        (_RET, _ALLOW),
        ("personality",),
        (_LD, _ARG[0]),
        (_JEQ, 0xFFFFFFFF, "allow", None),  # a query: changes nothing
        (_JSET, _READ_IMPLIES_EXEC, "deny", None),
        (_RET, _ALLOW),
        ("shmat",),
        (_LD, _ARG[2]),
        (_JSET, _SHM_EXEC, "deny", None),
        ("allow",),
        (_RET, _ALLOW),
        ("deny",),
        (_RET, deny),
        ("nosys",),
        (_RET, nosys),
    ]
    labels, pc = {}, 0
    for item in prog:
        if len(item) == 1:
            labels[item[0]] = pc
        else:
            pc += 1
    out, pc = [], 0
    for item in prog:
        if len(item) == 1:
            continue
        code = item[0]
        if code in (_LD, _RET):
            out.append(_ins(code, item[1]))
        else:
            jt, jf = (0 if t is None else labels[t] - pc - 1 for t in item[2:4])
            out.append(_ins(code, item[1], jt, jf))
        pc += 1
    if len(out) > 255:
        raise ValueError("filter too long for 8-bit jumps")
    return b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in out)

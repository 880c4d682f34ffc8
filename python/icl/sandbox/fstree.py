"""Folder trees walked without recursion and within bounds: hashing, scanning, staging, collecting output.

Every walk here opens each folder relative to its parent's descriptor (``O_NOFOLLOW``), so no path grows
past ``PATH_MAX`` and no link is followed; the walk is a loop over an explicit stack, so nesting depth never
reaches Python's recursion limit. A folder deeper than the walk's bound is reported, not entered.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from icl.errors import InputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
#: Deepest folder nesting a hashed or staged tree may have (the contract's trees are a few levels deep).
MAX_TREE_DEPTH = 256


@dataclass(frozen=True)
class Entry:
    """One entry met by :func:`walk`.

    Attributes
    ----------
    rel : str
        Path relative to the root, ``/``-separated.
    name : str
        Last component.
    st : os.stat_result
        ``lstat`` of the entry.
    dir_fd : int
        Descriptor of the folder holding it (valid only while the walk is at this entry).
    depth : int
        1 for the root's children.

    """

    rel: str
    name: str
    st: os.stat_result
    dir_fd: int
    depth: int


class TooDeep(Exception):
    """Raised by :func:`walk` (when asked to) for a folder nested deeper than its bound."""

    def __init__(self, rel: str):
        super().__init__(rel)
        self.rel = rel


def walk(
    root: str | os.PathLike,
    max_depth: int,
    *,
    raise_too_deep: bool = False,
    too_deep: list[str] | None = None,
) -> Iterator[Entry]:
    """Yield every entry below ``root`` in ``os.walk`` top-down order (sorted entries, then subfolders).

    Parameters
    ----------
    root : path-like
        The folder (a link is refused).
    max_depth : int
        Folders at this depth are listed but not entered.
    raise_too_deep : bool
        Raise :class:`TooDeep` for the first such folder instead of skipping it.
    too_deep : list of str, optional
        Receives the relative path of every folder not entered (too deep, or unreadable).

    """
    root_fd = os.open(root, _DIR_FLAGS)
    # Each level: its descriptor, path prefix, depth and the subfolders still to enter.
    stack: list[tuple[int, str, int, list[str]]] = [(root_fd, "", 1, [])]
    fd, prefix, depth = root_fd, "", 1
    try:
        while True:
            subdirs = stack[-1][3]
            try:
                names = sorted(os.listdir(fd))
            except OSError:  # unreadable (a harness that is not root): reported like a folder not entered
                names = []
                if too_deep is not None and prefix:
                    too_deep.append(prefix.rstrip("/"))
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield Entry(prefix + name, name, st, fd, depth)
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append(name)
            subdirs.reverse()  # popped from the end: sorted order
            while stack:
                fd, prefix, depth, subdirs = stack[-1]
                if not subdirs:
                    os.close(fd)
                    stack.pop()
                    continue
                name = subdirs.pop()
                rel = prefix + name
                if depth >= max_depth:
                    if raise_too_deep:
                        raise TooDeep(rel)
                    if too_deep is not None:
                        too_deep.append(rel)
                    continue
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                fd, prefix, depth = sub, rel + "/", depth + 1
                stack.append((fd, prefix, depth, []))
                break
            if not stack:
                return
    finally:
        for level in stack:
            os.close(level[0])


class _DirChain:
    """Descriptors of one folder and its ancestors below a root, re-opened as a walk moves on."""

    def __init__(self, root_fd: int):
        self.chain: list[tuple[str, int]] = [("", root_fd)]

    def fd(self, rel: str) -> int:
        """Descriptor of the folder ``rel`` (``""`` for the root)."""
        parts = rel.split("/") if rel else []
        keep = 1
        while keep < len(self.chain) and keep <= len(parts) and self.chain[keep][0] == "/".join(parts[:keep]):
            keep += 1
        for _, fd in self.chain[keep:]:
            os.close(fd)
        del self.chain[keep:]
        for i in range(keep - 1, len(parts)):
            fd = os.open(parts[i], _DIR_FLAGS, dir_fd=self.chain[-1][1])
            self.chain.append(("/".join(parts[: i + 1]), fd))
        return self.chain[-1][1]

    def close(self) -> None:
        for _, fd in self.chain:
            os.close(fd)
        self.chain = []


def _sha256_at(dir_fd: int, name: str, limit: int | None = None) -> str | None:
    """SHA-256 of a regular file opened relative to ``dir_fd``; None if it is longer than ``limit``."""
    h = hashlib.sha256()
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        n = 0
        while chunk := fh.read(1 << 20):
            n += len(chunk)
            if limit is not None and n > limit:
                return None
            h.update(chunk)
    return h.hexdigest()


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

    Raises
    ------
    InputError
        When a folder is nested deeper than :data:`MAX_TREE_DEPTH`.

    """
    h = hashlib.sha256()
    try:
        for e in walk(root, MAX_TREE_DEPTH, raise_too_deep=True):
            rel = e.rel.encode()
            mode = e.st.st_mode
            if stat.S_ISLNK(mode):
                h.update(b"L\0" + rel + b"\0" + os.readlink(e.name, dir_fd=e.dir_fd).encode() + b"\n")
            elif stat.S_ISDIR(mode):
                h.update(b"D\0" + rel + b"\n")
            elif stat.S_ISREG(mode):
                x = b"x" if mode & 0o111 else b"-"
                h.update(
                    b"F\0" + rel + b"\0" + x + b"\0" + (_sha256_at(e.dir_fd, e.name) or "").encode() + b"\n"
                )
            else:
                h.update(b"S\0" + rel + b"\n")
    except TooDeep as exc:
        raise InputError(
            f"folders nested deeper than {MAX_TREE_DEPTH} levels", str(Path(root) / exc.rel), "depth"
        ) from None
    return h.hexdigest()


# ------------------------------------------------------------------------------------------ scanning


@dataclass
class TreeScan:
    """Size and shape of a tree, within bounds (see :func:`scan`)."""

    entries: int = 0
    files: int = 0
    apparent_bytes: int = 0
    allocated_bytes: int = 0
    depth: int = 0
    too_deep: list[str] = field(default_factory=list)
    truncated: bool = False


def scan(root: str | os.PathLike, max_depth: int, max_entries: int) -> TreeScan:
    """Count entries, apparent and allocated bytes (``st_blocks``, so sparse files count both ways).

    Stops after ``max_entries + 1`` entries (``truncated``); folders at ``max_depth`` are not entered
    (``too_deep``).
    """
    out = TreeScan()
    for e in walk(root, max_depth, too_deep=out.too_deep):
        out.entries += 1
        out.depth = max(out.depth, e.depth)
        if stat.S_ISREG(e.st.st_mode):
            out.files += 1
            out.apparent_bytes += e.st.st_size
            out.allocated_bytes += e.st.st_blocks * 512
        if out.entries > max_entries:
            out.truncated = True
            break
    return out


# ------------------------------------------------------------------------------------------- staging


def stage_tree(src: Path, dest: Path, link: bool = False) -> None:
    """Make ``dest`` a copy of ``src``'s folders, regular files and links; other entries are left out.

    With ``link``, regular files are hard links where one file system allows it (copies otherwise). A
    submission is copied, not linked: the contract refuses hard-linked files, and a link would make a
    submission being validated during a run look hard-linked. ``dest`` must not exist.
    """
    dest.mkdir(mode=0o755)
    link_ok = link and os.stat(src).st_dev == os.stat(dest).st_dev
    chain = _DirChain(os.open(dest, _DIR_FLAGS))
    try:
        for e in walk(src, MAX_TREE_DEPTH, raise_too_deep=True):
            pfd = chain.fd(e.rel.rpartition("/")[0])
            mode = e.st.st_mode
            if stat.S_ISDIR(mode):
                os.mkdir(e.name, 0o755, dir_fd=pfd)
                os.chmod(e.name, stat.S_IMODE(mode) & 0o755 | 0o700, dir_fd=pfd)
            elif stat.S_ISLNK(mode):
                os.symlink(os.readlink(e.name, dir_fd=e.dir_fd), e.name, dir_fd=pfd)
            elif stat.S_ISREG(mode):
                if link_ok:
                    try:
                        os.link(e.name, e.name, src_dir_fd=e.dir_fd, dst_dir_fd=pfd, follow_symlinks=False)
                        continue
                    except OSError:
                        pass
                _copy_at(e.dir_fd, e.name, pfd, e.name, stat.S_IMODE(mode))
    except TooDeep as exc:
        raise InputError(
            f"folders nested deeper than {MAX_TREE_DEPTH} levels", str(src / exc.rel), "depth"
        ) from None
    finally:
        chain.close()


def _copy_at(src_fd: int, src: str, dst_fd: int, dst: str, mode: int) -> None:
    fi = os.open(src, _FILE_FLAGS, dir_fd=src_fd)
    try:
        fo = os.open(
            dst,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode & 0o755,
            dir_fd=dst_fd,
        )
        with os.fdopen(fi, "rb", closefd=False) as r, os.fdopen(fo, "wb") as w:
            shutil.copyfileobj(r, w, 1 << 20)
    finally:
        os.close(fi)


def remove_tree(path: Path) -> None:
    """Remove a tree of any depth (``rm -rf``: its walk keeps no path and has no depth limit)."""
    if path.is_symlink() or path.exists():
        subprocess.run(
            ["rm", "-rf", "--one-file-system", "--", str(path)],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


# -------------------------------------------------------------------------------------- collecting


@dataclass
class Collected:
    """What :func:`collect_output` moved and refused."""

    artifacts: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # links, hard links, special files (relative paths)
    unhashed: list[str] = field(default_factory=list)  # regular files past the byte budget
    too_deep: list[str] = field(default_factory=list)
    entries: int = 0
    truncated: bool = False


def collect_output(
    staged: Path,
    output: Path | int,
    *,
    max_bytes: int,
    max_entries: int,
    max_depth: int,
    owner: tuple[int, int] | None,
) -> Collected:
    """Move the program's regular files from ``staged`` into the (empty) host folder ``output``.

    ``output`` may be given as an open descriptor of the folder (the harness holds its own).

    Folders are re-created with mode 0755 and files get 0644 (0755 when any execute bit was set), so no
    setuid, setgid, sticky or world-writable bit reaches the host, and they are owned by ``owner``. Links,
    hard-linked files and special files are not moved. Files are hashed as they are moved until
    ``max_bytes`` of content have been read; later files are not moved (``unhashed``). Entries past
    ``max_entries`` and folders deeper than ``max_depth`` are not moved either.
    """
    out = Collected()
    root_fd = os.dup(output) if isinstance(output, int) else os.open(output, _DIR_FLAGS)
    same_fs = os.stat(staged).st_dev == os.fstat(root_fd).st_dev
    chain = _DirChain(root_fd)
    budget = max_bytes
    try:
        for e in walk(staged, max_depth, too_deep=out.too_deep):
            out.entries += 1
            if out.entries > max_entries:
                out.truncated = True
                break
            pfd = chain.fd(e.rel.rpartition("/")[0])
            mode = e.st.st_mode
            if stat.S_ISDIR(mode):
                os.mkdir(e.name, 0o755, dir_fd=pfd)
                os.chmod(e.name, 0o755, dir_fd=pfd)  # whatever the umask
                if owner:
                    os.chown(e.name, *owner, dir_fd=pfd, follow_symlinks=False)
            elif stat.S_ISREG(mode) and e.st.st_nlink == 1:
                if e.st.st_size > budget:
                    out.unhashed.append(e.rel)
                    budget = -1  # once one file is refused, every later one is too (no cherry-picking)
                    continue
                digest = _sha256_at(e.dir_fd, e.name, budget)
                if digest is None:  # grew since the lstat
                    out.unhashed.append(e.rel)
                    budget = -1
                    continue
                budget -= e.st.st_size
                _move_at(e.dir_fd, e.name, pfd, 0o755 if mode & 0o111 else 0o644, owner, same_fs)
                out.artifacts[e.rel] = digest
            else:
                out.refused.append(e.rel)
    finally:
        chain.close()
    return out


def _move_at(
    src_fd: int, name: str, dst_fd: int, mode: int, owner: tuple[int, int] | None, same_fs: bool
) -> None:
    if same_fs:
        os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    else:
        _copy_at(src_fd, name, dst_fd, name, 0o600)
    fd = os.open(name, _FILE_FLAGS, dir_fd=dst_fd)
    try:
        if owner:
            os.fchown(fd, *owner)
        os.fchmod(fd, mode)  # after chown, which would clear setuid anyway: set the final mode last
    finally:
        os.close(fd)

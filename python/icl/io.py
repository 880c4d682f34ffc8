"""File I/O shared by every track: atomic writes, bounded JSON and npz loading, manifests.

Loaders never unpickle, bound what they read, refuse duplicate JSON keys and raise
:class:`icl.errors.InputError` naming the file and the field at fault. Writers replace only regular
files or absent paths, never a symbolic link, never a file the running command reads, and never
anything inside a release folder or inside a folder the command reads (:func:`input_guard`,
:func:`check_output_place`); generators start from an empty folder (:func:`prepare_output_dir`). The
rules are stated in ``docs/conventions.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import shutil
import stat
import tokenize
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from icl.errors import InputError, OutputError

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_NPZ_BYTES = 512 * 1024 * 1024  # decompressed, summed over members
MAX_JSON_DEPTH = 64
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


# The inputs of the running command, by directory entry (folder device, folder inode, name) ->
# resolved path, and the entries the command has written itself. ``None`` outside
# :func:`input_guard`: library callers keep full control of their files. Module globals rather
# than ContextVars so that worker threads of a command see them too.
_protected: dict[tuple[int, int, str], str] | None = None
_written: set[tuple[int, int, str]] = set()
# Inside the guard: the folders passed as inputs, and the folders the command created or emptied for
# itself (everything below one of those was written by the command), all resolved.
_input_dirs: list[Path] = []
_own_roots: list[Path] = []

#: The name of the manifest every generated folder holds.
MANIFEST = "manifest.json"
#: ``kind`` of the manifests that make a folder a release besides a key id (the patient demo set has no
#: key but holds the private reference answers).
RELEASE_KINDS = frozenset({"patient-demo"})


def _entry(path: Path) -> tuple[int, int, str] | None:
    """Identity of a directory entry however it is spelled: its folder's device and inode, and its name.

    ``a/x``, ``b/x`` through a symbolic link or bind mount of ``a``, and ``a/../a/x`` are one entry; a
    hard link elsewhere is another entry (and, since every write replaces an entry atomically, writing
    it leaves the linked input's content untouched).
    """
    try:
        st = os.stat(path.parent)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, path.name)


@contextmanager
def input_guard() -> Iterator[None]:
    """Protect the inputs of one command from its own writes for the duration of the block.

    Every path given to :func:`protect_input`, and every file read by :func:`load_json` or
    :func:`load_npz`, is recorded by device and inode; the writers then refuse it as a target, and
    :func:`prepare_output_dir` refuses to empty a folder holding it. The ``icl`` command line runs
    each command inside this guard.
    """
    global _protected, _written, _input_dirs, _own_roots
    saved = _protected, _written, _input_dirs, _own_roots
    _protected, _written, _input_dirs, _own_roots = {}, set(), [], []
    try:
        yield
    finally:
        _protected, _written, _input_dirs, _own_roots = saved


def protect_input(path: str | os.PathLike) -> None:
    """Record ``path`` (file or folder) as an input of the running command; a no-op outside the guard.

    A file the command wrote itself is not an input: reading back its own output and rewriting it
    is allowed.
    """
    if _protected is None:
        return
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        return  # nothing there yet: nothing to protect
    entry = _entry(real)
    if entry is not None and entry not in _written:
        _protected[entry] = str(real)
        if real.is_dir() and not _below(real, _own_roots):
            _input_dirs.append(real)


def _below(real: Path, folders: Iterable[Path]) -> Path | None:
    """Return the first of ``folders`` that is ``real`` or one of its ancestors (all paths resolved)."""
    return next((f for f in folders if real == f or f in real.parents), None)


def is_release(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a release manifest.

    A release manifest is a ``manifest.json`` written by this package that names a release key
    (``key_id``: the halo, professional and forensics releases) or whose ``kind`` is in
    :data:`RELEASE_KINDS` (the patient demo set). Other manifests (an eye-trace or scene output) do
    not make a release.
    """
    path = Path(folder) / MANIFEST
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_JSON_BYTES:
            return False
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(MAX_JSON_BYTES))
    except (OSError, ValueError, RecursionError):
        return False
    return (
        isinstance(doc, dict)
        and doc.get("package") == "icl-bench"
        and ("key_id" in doc or doc.get("kind") in RELEASE_KINDS)
    )


def release_around(path: str | os.PathLike) -> Path | None:
    """Return the innermost release folder (:func:`is_release`) that is ``path`` or holds it, else None."""
    real = Path(os.path.realpath(path))
    return next((f for f in (real, *real.parents) if is_release(f)), None)


def check_output_place(path: str | os.PathLike, *, release: bool = False) -> None:
    """Refuse an output of the running command that lies where no command may write.

    Inside :func:`input_guard` (every ``icl`` command), an output may not be an input of the command,
    nor lie inside a folder passed to it as an input, nor inside a release folder (any folder holding
    a release manifest, :func:`is_release`, at any depth above it): a release is read-only to every
    command but its generator. Paths are compared resolved, so a link to a release is the release.
    Everything below a folder the command created or emptied for itself (:func:`prepare_output_dir`,
    :class:`OwnFolder`) is its own. Outside the guard this does nothing.

    Parameters
    ----------
    path : path-like
        The output file or folder.
    release : bool
        The output is a generator's release folder: ``path`` itself may be a release (which
        ``--force`` regenerates); the folders above it still may not.

    Raises
    ------
    OutputError
        Naming the path, the input or release it lies in, and what to do instead.

    """
    if _protected is None:
        return
    file = str(path)
    source = _input_at(Path(path))
    if source is not None:
        raise OutputError(f"the output is an input of this command ({source}); choose another output", file)
    real = Path(os.path.realpath(path))
    if _below(real, _own_roots):
        return
    found = release_around(real.parent if release else real)
    if found is not None:
        raise OutputError(
            f"the output lies inside the release {found} (it holds a release manifest): a release is "
            "written only by its generator; choose a path outside it",
            file,
        )
    inside = _below(real, _input_dirs)
    if inside is not None:
        raise OutputError(
            f"the output lies inside {inside}, a folder this command reads; choose a path outside it", file
        )


def claim_release(path: str | os.PathLike) -> None:
    """Let the running command write inside the release ``path`` (``release-freeze`` records its freeze there).

    Only for a command that keeps a release's own records; the release may not lie inside another release.
    Outside :func:`input_guard` this does nothing.

    Raises
    ------
    OutputError
        If a release holds ``path``.

    """
    if _protected is None:
        return
    real = Path(os.path.realpath(path))
    found = release_around(real.parent)
    if found is not None:
        raise OutputError(f"the release lies inside another release ({found})", str(path))
    _own(real)


def _own(path: Path) -> None:
    """Record ``path`` as a folder the running command created or emptied for itself."""
    if _protected is not None:
        _own_roots.append(Path(os.path.realpath(path)))


def _input_at(path: Path) -> str | None:
    if not _protected:
        return None
    entry = _entry(Path(os.path.abspath(path)))
    return None if entry is None else _protected.get(entry)


def _record_written(path: Path) -> None:
    if _protected is not None:
        entry = _entry(Path(os.path.abspath(path)))
        if entry is not None:
            _written.add(entry)


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _make_folder(folder: Path, file: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(
            f"cannot write here: {folder} or one of its parents is a file, not a folder", file
        ) from None
    except OSError as exc:
        raise OutputError(f"cannot create the folder {folder}: {exc.strerror or exc}", file) from None


def output_target(path: str | os.PathLike) -> Path:
    """Check that ``path`` may be written and create its folder; return it as a :class:`Path`.

    Allowed: an absent path or a regular file that is not an input of the running command, and that
    lies neither in a release nor in a folder the command reads (:func:`check_output_place`).

    Raises
    ------
    OutputError
        If ``path`` is a symbolic link (outputs are written to real paths only, never through or over
        a link), a folder, device, FIFO or socket, an input of the running command, inside a release
        or an input folder, or if its folder cannot be created (a parent is a file, a read-only or
        pseudo file system such as ``/proc``).

    """
    path = Path(path)
    file = str(path)
    check_output_place(path)
    _make_folder(path.parent, file)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise OutputError(f"cannot inspect the output: {exc.strerror or exc}", file) from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputError("the output is a symbolic link; give the path of a regular file instead", file)
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"the output is {_kind(st.st_mode)}: only regular files are replaced", file)
    source = _input_at(path)
    if source is not None:
        raise OutputError(f"the output is an input of this command ({source}); choose another output", file)
    return path


def _temp_beside(path: Path) -> tuple[int, Path]:
    """Create a new temporary file next to ``path`` with the usual permissions (0666 less the umask)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(
                f"cannot create a file in {path.parent}: {exc.strerror or exc}", str(path)
            ) from None
    raise OutputError(f"no free temporary name in {path.parent}", str(path))


def _atomic(path: str | os.PathLike, fill) -> None:
    """Write through ``fill(fd, tmp)`` into a temporary file beside ``path``, then rename it over ``path``."""
    path = output_target(path)
    fd, tmp = _temp_beside(path)
    try:
        fill(fd, tmp)
        # os.replace is atomic for readers; no fsync: releases are regenerated, not recovered.
        os.replace(tmp, path)
        _record_written(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write: {exc.strerror or exc}", str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The target is checked by :func:`output_target` first.
    """

    def fill(fd: int, tmp: Path) -> None:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    _atomic(path, fill)


def prepare_output_dir(path: str | os.PathLike, force: bool = False, *, release: bool = False) -> Path:
    """Make ``path`` an empty folder for a command's output, so that its manifest lists only what it wrote.

    A missing folder is created and an empty one used as it is. A non-empty folder is refused unless
    ``force``, which deletes everything inside it first; even then the file system root, the home
    folder, the current folder and its parents, and a folder holding an input of the running command
    are never emptied. The folder must lie outside every release and input folder
    (:func:`check_output_place`); only a generator (``release=True``) may be given a release folder
    itself, to regenerate it. Inside a command, the folder is then the command's own.

    Raises
    ------
    OutputError
        If ``path`` is a symbolic link or not a folder, lies inside a release or an input folder, or is
        not empty and may not be emptied.

    """
    path = Path(path)
    file = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        check_output_place(path, release=release)
        _make_folder(path, file)
        _own(path)
        return path
    except OSError as exc:
        raise OutputError(f"cannot inspect the output folder: {exc.strerror or exc}", file) from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputError("the output folder is a symbolic link; give the real folder", file)
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"the output folder exists and is {_kind(st.st_mode)}", file)
    check_output_place(path, release=release)
    entries = sorted(os.scandir(path), key=lambda e: e.name)
    if not entries:
        _own(path)
        return path
    if not force:
        raise OutputError(
            f"the output folder is not empty ({len(entries)} entries, e.g. {entries[0].name}); "
            "choose a new folder or pass --force to empty it first",
            file,
        )
    real = path.resolve()
    cwd = Path.cwd().resolve()
    if real == Path(real.anchor) or real == Path.home().resolve() or real == cwd or real in cwd.parents:
        raise OutputError("--force does not empty the root, home or current folder (or a parent of it)", file)
    for src in (_protected or {}).values():
        if Path(src) == real or real in Path(src).parents:
            raise OutputError(
                f"--force does not empty a folder holding an input of this command ({src})", file
            )
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    _own(path)
    return path


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class OwnFolder:
    """A folder this process created, or found empty and owned by its user, written through its descriptor.

    The harness writes its logs and records only here. The folder is opened once with ``O_NOFOLLOW``,
    so a symbolic link at ``path`` is refused, and every file is created relative to that descriptor
    with ``O_NOFOLLOW | O_CREAT | O_EXCL``: nothing already in the folder (a planted link, a file of
    someone else's) is ever opened or written through. A file is rewritten only by renaming a new
    file over the entry this object wrote itself.

    Parameters
    ----------
    path : path-like
        The folder: absent (it is created, mode 0755) or an empty folder owned by the effective user.
    field : str
        What the folder is, for error messages (``"logs"``, ``"output"``).

    Raises
    ------
    OutputError
        If ``path`` is a symbolic link, not a folder, owned by another user or not empty, lies inside a
        release or an input folder (:func:`check_output_place`), or cannot be created.

    """

    def __init__(self, path: str | os.PathLike, field: str):
        self.path = Path(path)
        file = str(self.path)
        check_output_place(self.path)
        _make_folder(self.path.parent, file)
        try:
            os.mkdir(self.path, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            raise OutputError(f"cannot create the folder: {exc.strerror or exc}", file, field) from None
        try:
            fd = os.open(self.path, _DIR_FLAGS)
        except OSError as exc:
            try:
                what = "a symbolic link" if os.path.islink(self.path) else _kind(os.lstat(self.path).st_mode)
            except OSError:
                what = exc.strerror or str(exc)
            raise OutputError(f"must be a real folder, not {what}", file, field) from None
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                raise OutputError(
                    f"the folder belongs to uid {st.st_uid}, not to this user ({os.geteuid()}): "
                    "give a new path or an empty folder of your own",
                    file,
                    field,
                )
            names = os.listdir(fd)
            if names:
                raise OutputError(
                    f"the folder is not empty ({len(names)} entries, e.g. {sorted(names)[0]}); "
                    "give a new path or an empty folder",
                    file,
                    field,
                )
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self._mine: set[str] = set()
        _own(self.path)

    def write_bytes(self, name: str, data: bytes, mode: int = 0o644) -> None:
        """Write ``data`` as ``name`` in the folder: a new file, or a new file renamed over one it wrote."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a plain file name: {name!r}")
        target = name
        if name in self._mine:
            target = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(target, _NEW_FILE_FLAGS, mode, dir_fd=self.fd)
        except OSError as exc:
            raise OutputError(
                f"cannot create {name}: {exc.strerror or exc} (only new files are written here)",
                str(self.path / name),
            ) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if target != name:
                os.replace(target, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            if target != name:
                os.unlink(target, dir_fd=self.fd)
            raise
        self._mine.add(name)

    def write_json(self, name: str, obj: Any) -> None:
        """Write ``obj`` as deterministic JSON (:func:`dumps_json`) under ``name``."""
        self.write_bytes(name, dumps_json(obj).encode("utf-8"))

    def close(self) -> None:
        """Release the folder's descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        if getattr(self, "fd", -1) >= 0:
            self.close()

    def __enter__(self) -> OwnFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dumps_json(obj: Any) -> str:
    """Serialise ``obj`` deterministically (sorted keys, 2-space indent, no NaN)."""
    return json.dumps(_plain(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Atomically write ``obj`` as deterministic JSON."""
    atomic_write_bytes(path, dumps_json(obj).encode("utf-8"))


def write_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """Atomically write an uncompressed ``.npz`` with fixed member timestamps (byte-reproducible)."""

    def fill(fd: int, tmp: Path) -> None:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED) as zf:
            for key in sorted(arrays):
                arr = np.asarray(arrays[key])  # ascontiguousarray would turn a 0-d scalar into shape (1,)
                if not arr.flags.c_contiguous:
                    arr = np.ascontiguousarray(arr)
                if arr.dtype == object:
                    raise TypeError(f"{key}: object arrays are not written")
                info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                with zf.open(info, "w") as fh:
                    np.lib.format.write_array(fh, arr, allow_pickle=False)

    _atomic(path, fill)


def _plain(obj: Any) -> Any:
    """Convert NumPy scalars and arrays, tuples and paths into JSON-native values."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ValueError(f"non-finite number {obj!r} cannot be written to JSON")
    return obj


def _check_depth(obj: Any, file: str, depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        raise InputError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file)
    if isinstance(obj, dict):
        for v in obj.values():
            _check_depth(v, file, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _check_depth(v, file, depth + 1)


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} overflows a double")
    return value


def _regular_size(path: Path, file: str) -> int:
    """Size of a regular file; FIFOs and devices are refused (reading them could block or never end)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file (directory, FIFO, socket or device)", file)
    return st.st_size


def _unique_keys(file: str):
    """``object_pairs_hook`` that refuses a key given twice in one object (JSON keeps the last silently)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise InputError("duplicate key in one JSON object", file, key)
            obj[key] = value
        return obj

    return hook


def _finite_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError(f"integer {text[:20]}... overflows a double") from None
    return value


def load_json(path: str | os.PathLike, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Read a UTF-8 JSON file with a size bound, depth bound and no NaN/Infinity literals.

    Raises
    ------
    InputError
        If the file is missing, not a regular file (FIFO, device), too large, not UTF-8, not JSON,
        too deeply nested, gives one key twice in an object, or holds a number that overflows a
        double.

    """
    path = Path(path)
    file = str(path)
    size = _regular_size(path, file)
    protect_input(path)
    if size > max_bytes:
        raise InputError(f"file is {size} bytes, more than the {max_bytes}-byte limit", file)
    with open(path, "rb") as fh:
        raw = fh.read(max_bytes + 1)  # a file that grows after stat() is still bounded
    if len(raw) > max_bytes:
        raise InputError(f"file is more than the {max_bytes}-byte limit", file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", file) from None
    try:
        obj = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_finite_int,
            object_pairs_hook=_unique_keys(file),
        )
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file) from None
    except ValueError as exc:
        raise InputError(f"invalid JSON: {exc}", file) from None
    _check_depth(obj, file)
    return obj


def load_npz(
    path: str | os.PathLike,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
    max_bytes: int = MAX_NPZ_BYTES,
    allow_extra: bool = False,
) -> dict[str, np.ndarray]:
    """Load an ``.npz`` safely: no pickle, no object arrays, bounded decompressed size, known keys.

    Parameters
    ----------
    path : path-like
        The archive.
    required, optional : iterable of str
        Member names (without ``.npy``) that must / may be present.
    max_bytes : int
        Upper bound on the sum of declared uncompressed member sizes (zip-bomb guard).
    allow_extra : bool
        Accept members not named in ``required`` or ``optional``.

    Returns
    -------
    dict of str to ndarray

    """
    path = Path(path)
    file = str(path)
    required, optional = list(required), list(optional)
    if path.is_symlink():
        raise InputError("symbolic links are not followed", file)
    _regular_size(path, file)
    protect_input(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as exc:
        raise InputError(f"not a readable npz archive: {exc}", file) from None
    with zf:
        try:
            return _read_members(zf, file, required, optional, max_bytes, allow_extra)
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            NotImplementedError,
            RuntimeError,
            OSError,
            UnicodeDecodeError,
        ) as exc:
            # CRC mismatch, corrupt deflate stream, truncated member, unsupported or encrypted entry,
            # a local header whose name is not the central directory's
            raise InputError(f"corrupt npz archive: {type(exc).__name__}: {exc}", file) from None


def _read_members(
    zf: zipfile.ZipFile,
    file: str,
    required: list[str],
    optional: list[str],
    max_bytes: int,
    allow_extra: bool,
) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    infos = zf.infolist()
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise InputError(f"declared uncompressed size {total} exceeds the {max_bytes}-byte limit", file)
    names = {}
    for info in infos:
        if not info.filename.endswith(".npy") or "/" in info.filename:
            raise InputError("unexpected archive member", file, info.filename)
        names[info.filename[:-4]] = info
    for key in required:
        if key not in names:
            raise InputError("missing array", file, key)
    known = set(required) | set(optional)
    for key, info in names.items():
        if key not in known and not allow_extra:
            raise InputError("unexpected array", file, key)
        with zf.open(info) as fh:
            try:
                version = np.lib.format.read_magic(fh)
                if version not in _HEADER_READERS:
                    raise ValueError(f"unsupported .npy format version {version}")
                shape, _fortran, dtype = _HEADER_READERS[version](fh)
            except (ValueError, SyntaxError, tokenize.TokenError) as exc:  # NumPy tokenizes the header text
                raise InputError(f"bad .npy header: {exc}", file, key) from None
            if dtype.hasobject:
                raise InputError("object arrays are refused (they need pickle)", file, key)
            count = math.prod(shape)
            if count * dtype.itemsize > info.file_size:
                raise InputError(f"header declares {shape} {dtype}, more than the stored data", file, key)
        with zf.open(info) as fh:
            try:
                arr = np.lib.format.read_array(fh, allow_pickle=False)
            except ValueError as exc:
                raise InputError(f"unreadable array: {exc}", file, key) from None
        out[key] = arr
    return out


def check_kind(doc: Any, file: str | None, kind: str, fields: Iterable[str]) -> None:
    """Refuse a JSON object of another kind: one with fields, none of which a ``kind`` file has.

    A file of the right kind with wrong or missing content is left to the loader's own rules (a
    submission then scores 0 with the reason); a file of another kind (a scene given as a contest
    evaluation) is the operator's mistake and stops the command.

    Raises
    ------
    InputError
        Naming the file, the kind expected and the fields found.

    """
    known = sorted(fields)
    if isinstance(doc, dict) and doc and not set(doc) & set(known):
        found = sorted(doc)
        raise InputError(
            f"not {kind}: it has none of the fields {known} (it has {found[:6]}"
            f"{' ...' if len(found) > 6 else ''}); check which file was given",
            file,
        )


def answer_identities(*roots: str | os.PathLike) -> frozenset[tuple[int, int]]:
    """Return the (device, inode) of every regular file at or below ``roots`` (links are not followed)."""
    out = set()
    for root in roots:
        root = Path(root)
        paths = [root] if not root.is_dir() or root.is_symlink() else [root, *root.rglob("*")]
        for p in paths:
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.add((st.st_dev, st.st_ino))
    return frozenset(out)


def check_answer_file(path: str | os.PathLike, answers: frozenset[tuple[int, int]] = frozenset()) -> None:
    """Refuse a submitted answer file that is a link to another file.

    A scorer reads only files of the submission's own: not a symbolic link, not a hard link (a file
    with more than one name, which could be a private answer someone linked in), and not one of the
    ``answers`` files (:func:`answer_identities` of the release's private part) under any name.

    Raises
    ------
    InputError
        Naming the file and why it is refused; a missing file is left to the caller.

    """
    file = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file) from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError("symbolic links are not followed", file)
    if (st.st_dev, st.st_ino) in answers:
        raise InputError("this is one of the release's private answer files, not a submitted one", file)
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise InputError(
            f"a hard link ({st.st_nlink} names share this file): answer files must be files of their own; "
            "copy it instead",
            file,
        )


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(
    root: str | os.PathLike,
    extra: Mapping[str, Any] | None = None,
    name: str = "manifest.json",
    exclude: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Write ``root/manifest.json``: versions, ``extra`` and the SHA-256 of every file below ``root``.

    ``exclude`` lists paths relative to ``root`` (``private/release.key``) left out of the hashes.
    """
    from icl import __version__

    root = Path(root)
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and p.name != name and not p.name.startswith(".") and rel not in exclude:
            files[rel] = sha256_file(p)
    import platform

    import scipy

    versions = {
        "icl-bench": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }
    manifest = {
        "package": "icl-bench",
        "version": __version__,
        "versions": versions,
        **(dict(extra) if extra else {}),
        "files": files,
    }
    write_json(root / name, manifest)
    return manifest

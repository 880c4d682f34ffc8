"""Signed run records: what the harness saw cannot be forged or altered by whoever holds the run folder.

The harness signs every run record (its track, limits, violations and the SHA-256 of every artifact) and
the evaluator signs the documents that gather them (``sets.json`` of a professional run, ``run.json`` of a
halo board run) with HMAC-SHA256 under the *evaluator key*: 32 random bytes in a file of the evaluating
user's, ``~/.config/icl/evaluator.key`` (``$XDG_CONFIG_HOME/icl/evaluator.key`` when that is set), or the
file named by ``$ICL_EVALUATOR_KEY``. It is created mode 0600 on first use, never staged into a sandbox
(only the submission, the input and OUTPUT are), and never part of a release or a submission; a key file
that others may read, or that lies inside the folders of a run, is refused. Every host that runs or scores
one evaluation (dask workers included) needs the same key file.

The scorers verify before they read: the document's signature, each record's signature, and the files of
each OUTPUT against the record's artifact hashes (the same paths, the same SHA-256, nothing added). An
unsigned or altered document, or an OUTPUT that changed, is refused with the file named.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import _plain

KEY_ENV = "ICL_EVALUATOR_KEY"
KEY_BYTES = 32
ALGORITHM = "HMAC-SHA256"
SIGNATURE = "signature"
#: Files hashed when an OUTPUT is checked against its record (beyond them the record cannot match).
MAX_ARTIFACTS = 100_000


def key_path() -> Path:
    """Where the evaluator key is kept (``$ICL_EVALUATOR_KEY``, else the user's configuration folder)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "icl" / "evaluator.key"


def evaluator_key(create: bool = True) -> bytes:
    """Return the evaluator key, creating it (0600, in a 0700 folder) on first use when ``create``.

    Raises
    ------
    InputError
        If the key file is missing (and not created), a link, not the user's own, readable by others, or
        shorter than 32 bytes.

    """
    path = key_path()
    if create and not path.exists() and not path.is_symlink():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # made meanwhile by another process: read that one
            pass
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"no evaluator key ({exc.strerror}); runs cannot be signed or verified", str(path)) from exc
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise InputError("the evaluator key must be a regular file of this user's, mode 0600", str(path))
        key = fh.read(4096)
    if len(key) < KEY_BYTES:
        raise InputError(f"the evaluator key is shorter than {KEY_BYTES} bytes", str(path))
    return key


def key_outside(*folders: str | os.PathLike) -> None:
    """Refuse a key file that lies inside any of ``folders`` (a submission, an input, an OUTPUT, logs)."""
    key = key_path().resolve()
    for folder in folders:
        f = Path(folder).resolve()
        if key == f or key.is_relative_to(f):
            raise InputError("the evaluator key may not lie inside a run's folders", str(key_path()))


def _mac(doc: dict[str, Any], key: bytes) -> str:
    body = {k: v for k, v in doc.items() if k != SIGNATURE}
    text = json.dumps(_plain(body), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """Short public name of a key (which key signed a document), not usable to forge anything."""
    return hashlib.sha256(b"icl-evaluator-key-id:" + key).hexdigest()[:16]


def sign(doc: dict[str, Any]) -> dict[str, Any]:
    """Return ``doc`` with its ``signature`` (any earlier one replaced)."""
    key = evaluator_key()
    return {**{k: v for k, v in doc.items() if k != SIGNATURE},
            SIGNATURE: {"algorithm": ALGORITHM, "key_id": key_id(key), "mac": _mac(doc, key)}}


def verify(doc: Any, file: str | os.PathLike, field: str | None = None) -> None:
    """Check the signature of ``doc`` read from ``file`` (``field``: where in the file it is).

    Raises
    ------
    InputError
        If ``doc`` is unsigned or its signature does not match (altered, or signed with another key).

    """
    sig = doc.get(SIGNATURE) if isinstance(doc, dict) else None
    if not isinstance(sig, dict) or not isinstance(sig.get("mac"), str):
        raise InputError("unsigned: not written by this evaluator's harness; refused", str(file), field)
    key = evaluator_key(create=False)
    if sig.get("algorithm") != ALGORITHM or not hmac.compare_digest(sig["mac"], _mac(doc, key)):
        other = sig.get("key_id") != key_id(key)
        raise InputError(
            "signature does not match: " + ("signed with another evaluator key" if other else "altered after signing")
            + "; refused", str(file), field)


def artifact_hashes(folder: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of every regular file below ``folder`` by relative path; links and special files are named
    with the value ``"not a regular file"`` (the harness never keeps one)."""
    from icl.sandbox.fstree import MAX_TREE_DEPTH, walk

    out: dict[str, str] = {}
    for n, e in enumerate(walk(Path(folder), MAX_TREE_DEPTH)):
        if n >= MAX_ARTIFACTS:
            out["..."] = "entry limit"
            break
        if stat.S_ISDIR(e.st.st_mode):
            continue
        if not stat.S_ISREG(e.st.st_mode):
            out[e.rel] = "not a regular file"
            continue
        fd = os.open(e.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=e.dir_fd)
        h = hashlib.sha256()
        with os.fdopen(fd, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        out[e.rel] = h.hexdigest()
    return out


def verify_artifacts(record: dict[str, Any], folder: str | os.PathLike, file: str | os.PathLike,
                     field: str | None = None) -> None:
    """Check that ``folder`` holds exactly the artifacts ``record`` (signed, from ``file``) lists.

    Raises
    ------
    InputError
        Naming the first file added, removed or changed since the run.

    """
    want = record.get("artifacts") or {}
    got = artifact_hashes(folder) if Path(folder).is_dir() else {}
    for rel in sorted(set(want) | set(got)):
        if want.get(rel) != got.get(rel):
            what = "added" if rel not in want else ("removed" if rel not in got else "changed")
            raise InputError(f"{Path(folder).name}/{rel} {what} since the run (its record's artifact hashes "
                             "do not match); refused", str(file), field)

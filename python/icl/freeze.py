"""Frozen releases: task texts, references and scoring code fixed by their hashes before any evaluation.

A freeze record (``RELEASE/freeze.json``, written once by ``icl release-freeze``) holds the SHA-256 of

- ``task``: every public file of the release (task texts, data packages, the catalogue, the manifest),
  that is every regular file outside ``private/`` and ``gallery/``;
- ``reference``: every private file (references, PSFs, splits, labels), except ``private/release.key``,
  whose hash would confirm a guessed key (the manifest leaves it out for the same reason);
- ``code``: the Python files of the scoring code, found by following the ``icl`` imports (lazy ones
  included) from the track's scoring modules, and the compiled kernels when that code reaches them;

plus the package version and the references an operator froze out as disputed (``disputed``: id ->
reason, left out of every submission's score alike). Its own hash (``freeze_sha256``, over the canonical
JSON of everything else) is what a board publishes beside every row.

Every scorer that reads a release calls :func:`check_release`: without a freeze record the release is a
development release and scores as before (``frozen: false``); with one, every recorded file is hashed
again and a release whose frozen parts changed is refused with an :class:`FrozenChanged` error naming
each changed, added or missing file and its part. The freeze record itself is not signed: its hash is
published, so a record rewritten to match changed files shows up as another hash.

This module is base floor: hashes and files only, no physics and no track. The caller names the scoring
modules (:func:`freeze_release`); the record carries them, so checking needs no track knowledge.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import icl
from icl.errors import InputError

FREEZE_FILE = "freeze.json"
FORMAT = "icl-freeze/1"
KEY_FILE = "private/release.key"
#: Top-level folders of a release that are neither task text nor reference: evaluator-only figures.
NOT_FROZEN = ("gallery",)
PARTS = ("task", "reference", "code")
#: The package whose modules the code part hashes (a test may point it at a copy).
PACKAGE_ROOT = Path(icl.__file__).parent
MAX_ENTRIES = 1_000_000


class FrozenChanged(InputError):
    """A frozen part of a release differs from its freeze record; ``changes`` lists every difference."""

    def __init__(self, release: str, freeze_sha: str, changes: list[dict[str, str]]):
        self.changes = changes
        shown = "; ".join(f"{c['part']} {c['file']} {c['change']}" for c in changes[:8])
        more = f" (+{len(changes) - 8} more)" if len(changes) > 8 else ""
        super().__init__(
            f"frozen parts changed since the freeze {freeze_sha[:16]}: {shown}{more}; scores against it "
            "would not be comparable (re-freeze with `icl release-freeze --force` and re-evaluate every "
            "submission)",
            release,
            FREEZE_FILE,
        )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def release_files(release: str | os.PathLike) -> dict[str, dict[str, str]]:
    """Hash the ``task`` and ``reference`` files of a release (relative path -> SHA-256).

    The walk follows no link: a symbolic link, device or other special file inside the release is refused
    with its path (a frozen release holds regular files only).
    """
    root = Path(release)
    parts: dict[str, dict[str, str]] = {"task": {}, "reference": {}}
    stack = [Path()]
    seen = 0
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                raise InputError(f"more than {MAX_ENTRIES} entries", str(root), "release")
            sub = rel / e.name
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if not (rel == Path() and e.name in NOT_FROZEN):
                    stack.append(sub)
                continue
            if not stat.S_ISREG(st.st_mode):
                raise InputError(
                    "not a regular file: a release to freeze holds no links or special files",
                    str(root / sub),
                    "release",
                )
            name = sub.as_posix()
            if name == FREEZE_FILE or name == KEY_FILE:
                continue
            part = "reference" if sub.parts[0] == "private" else "task"
            parts[part][name] = _sha256(root / sub)
    return {k: dict(sorted(v.items())) for k, v in parts.items()}


def _module_file(name: str, root: Path) -> Path | None:
    """Return the source of module ``icl.a.b`` under the package folder ``root`` (None if none)."""
    if name == "icl":
        return root / "__init__.py"
    rel = Path(*name.split(".")[1:])
    for p in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def _imports(path: Path, module: str) -> set[str]:
    """Every ``icl`` module named by an import in ``path`` (top level and inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # ``from icl.pro import score``
    return {m for m in found if m == "icl" or m.startswith("icl.")}


def code_files(modules: Iterable[str], root: Path | None = None) -> dict[str, str]:
    """Hash the scoring code: the sources reached from ``modules`` by ``icl`` imports, and the kernels.

    Keys are paths from the folder holding the package (``icl/pro/score.py``). Parent packages count as
    imported (Python runs their ``__init__``). When the compiled core is reached, every ``_core*`` file
    of the package folder is hashed too: a rebuilt kernel is a changed scorer.
    """
    root = PACKAGE_ROOT if root is None else Path(root)
    todo = list(modules)
    done: set[str] = set()
    files: dict[str, str] = {}
    core = False
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        if name == "icl._core":
            core = True
            continue
        path = _module_file(name, root)
        if path is None:
            continue  # a name imported from a module (``from icl.io import load_json``), not a module
        files[f"icl/{path.relative_to(root).as_posix()}"] = _sha256(path)
        todo.extend(_imports(path, name))
    if core:
        for p in sorted(root.glob("_core*")):
            if p.is_file() and p.suffix in (".so", ".pyd", ".dylib"):
                files[f"icl/{p.name}"] = _sha256(p)
    return dict(sorted(files.items()))


def canonical_sha256(doc: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``doc`` without its ``freeze_sha256`` field."""
    body = {k: v for k, v in doc.items() if k != "freeze_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def freeze_record(
    release: str | os.PathLike,
    modules: Sequence[str],
    disputed: Mapping[str, str] | None = None,
    track: str | None = None,
) -> dict[str, Any]:
    """Build the freeze record of ``release`` with the scoring code reached from ``modules``."""
    parts = release_files(release)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "track": track,
        "frozen_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "version": icl.__version__,
        "code_modules": sorted(modules),
        "disputed": dict(sorted((disputed or {}).items())),
        "parts": {**parts, "code": code_files(modules)},
    }
    doc["freeze_sha256"] = canonical_sha256(doc)
    return doc


def freeze_release(
    release: str | os.PathLike,
    modules: Sequence[str],
    disputed: Mapping[str, str] | None = None,
    track: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Write ``RELEASE/freeze.json``; refuse to replace an existing freeze unless ``force``."""
    from icl.io import write_json

    path = Path(release) / FREEZE_FILE
    if (path.exists() or path.is_symlink()) and not force:
        old = load_freeze(release)
        raise InputError(
            f"the release is already frozen ({old['freeze_sha256'][:16]}); a new freeze needs --force and "
            "re-evaluating every submission",
            str(path),
        )
    for k in disputed or {}:
        if not isinstance(k, str) or not k or not (disputed or {})[k]:
            raise InputError("a disputed reference needs an id and a reason", str(path), f"disputed.{k}")
    doc = freeze_record(release, modules, disputed, track)
    write_json(path, doc)
    return doc


def load_freeze(release: str | os.PathLike) -> dict[str, Any] | None:
    """Read the freeze record of ``release`` (None when the release was never frozen), checked for form."""
    from icl.io import load_json

    path = Path(release) / FREEZE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise InputError("the freeze record must be a regular file", str(path))
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"not a freeze record (format {FORMAT!r})", str(path), "format")
    parts = doc.get("parts")
    if not isinstance(parts, dict) or any(not isinstance(parts.get(p), dict) for p in PARTS):
        raise InputError("expected parts.task, parts.reference and parts.code", str(path), "parts")
    if not isinstance(doc.get("code_modules"), list) or not isinstance(doc.get("disputed", {}), dict):
        raise InputError("expected code_modules (list) and disputed (object)", str(path), "code_modules")
    if doc.get("freeze_sha256") != canonical_sha256(doc):
        raise InputError(
            "freeze_sha256 does not match the record: it was edited after the freeze",
            str(path),
            "freeze_sha256",
        )
    return doc


def differences(frozen: Mapping[str, Mapping[str, str]], now: Mapping[str, Mapping[str, str]]) -> list[dict]:
    """Every file that changed, appeared or disappeared, part by part."""
    out = []
    for part in PARTS:
        a, b = frozen.get(part, {}), now.get(part, {})
        for f in sorted(set(a) | set(b)):
            if f not in b:
                out.append({"part": part, "file": f, "change": "missing"})
            elif f not in a:
                out.append({"part": part, "file": f, "change": "added"})
            elif a[f] != b[f]:
                out.append({"part": part, "file": f, "change": "changed"})
    return out


def check_release(release: str | os.PathLike) -> dict[str, Any]:
    """Check a release against its freeze record before scoring.

    Returns
    -------
    dict
        ``{"frozen": False}`` for a release never frozen; else ``{"frozen": True, "freeze_sha256",
        "frozen_at", "version", "disputed"}``.

    Raises
    ------
    FrozenChanged
        Naming every task text, reference or scoring file that differs from the record, and the package
        version when it changed.

    """
    doc = load_freeze(release)
    if doc is None:
        return {"frozen": False}
    try:
        now = {**release_files(release), "code": code_files(doc["code_modules"])}
    except (OSError, InputError) as exc:
        raise FrozenChanged(
            str(release),
            doc["freeze_sha256"],
            [{"part": "release", "file": str(getattr(exc, "file", "") or exc), "change": "unreadable"}],
        ) from None
    changes = differences(doc["parts"], now)
    if doc.get("version") != icl.__version__:
        changes.insert(
            0,
            {
                "part": "code",
                "file": "icl-bench version",
                "change": f"changed ({doc.get('version')} -> {icl.__version__})",
            },
        )
    if changes:
        raise FrozenChanged(str(release), doc["freeze_sha256"], changes)
    return {
        "frozen": True,
        "freeze_sha256": doc["freeze_sha256"],
        "frozen_at": doc.get("frozen_at"),
        "version": doc.get("version"),
        "disputed": dict(doc.get("disputed") or {}),
    }


def disputed(status: Mapping[str, Any]) -> dict[str, str]:
    """Disputed references of a checked release (``check_release`` result): id -> reason."""
    return {
        k: f"disputed reference frozen out at the freeze: {v}"
        for k, v in (status.get("disputed") or {}).items()
    }

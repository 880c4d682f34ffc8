"""File-system view of a sandbox: system folders, an interpreter, allowed packages, the run's folders.

The Python packages a program may import are not a whole site-packages folder but a list: every
site-packages folder of the harness's interpreter (venv or not, and the system Python's) is covered by an
empty read-only tmpfs wherever the view would otherwise show it, and each top-level entry of each allowed
distribution, with the distributions it requires, is bound read-only under ``/opt/site-packages``. The
reference package (``icl``, distribution ``icl-bench``, its compiled ``_core``) is never among them on the
from-scratch track; on the reference-assisted track it is added, with what it requires.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

#: Fixed paths inside the sandbox.
SUBMISSION_MOUNT = "/submission"
INPUT_MOUNT = "/input"
OUTPUT_MOUNT = "/output"
SITE_MOUNT = "/opt/site-packages"
#: Host files under /etc that programs need (dynamic loader, user names, time zone).
ETC_FILES = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
)
#: Top-level system folders bound read-only (or re-created as the same symbolic link, on merged-/usr hosts).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Third-party distributions a from-scratch program may import (with what each requires), when installed.
ALLOWED_DISTRIBUTIONS = (
    "numpy",
    "scipy",
    "matplotlib",
    "pillow",
    "pyfftw",
    "numba",
    "sympy",
    "pandas",
    "h5py",
    "scikit-image",
    "imageio",
    "tifffile",
    "networkx",
    "pyyaml",
)
#: The reference package's distribution, added on the reference-assisted track.
REFERENCE_DISTRIBUTION = "icl-bench"
#: Top-level entries never bound on the from-scratch track, whatever distribution lists them.
REFERENCE_ENTRY = re.compile(r"^(icl|icl_bench[-.].*|_editable_.*icl.*|_core(\..*)?)$")
TRACKS = ("from-scratch", "reference-assisted")


@dataclass(frozen=True)
class Mount:
    """One step of building the view, applied in order.

    ``kind``: ``ro`` / ``rw`` (bind ``source`` at ``dest``), ``mask`` (empty read-only tmpfs), ``tmpfs``
    (writable, ``size`` bytes), ``symlink`` (``dest`` -> ``source``), ``proc``, ``dev``, ``dir``.
    """

    kind: str
    dest: str
    source: str = ""
    size: int = 0


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution_entries(names: tuple[str, ...], reference: bool) -> dict[str, str]:
    """Top-level site-packages entry -> host path, for ``names`` and everything they require."""
    todo, seen = list(names), set()
    entries: dict[str, str] = {}
    while todo:
        name = _norm(todo.pop())
        if name in seen or (name == REFERENCE_DISTRIBUTION and not reference):
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        base = Path(str(dist.locate_file("")))
        for f in dist.files or []:
            top = f.parts[0] if f.parts else ""
            if top in ("", "..", "__pycache__") or top.endswith(".pth") or REFERENCE_ENTRY.match(top):
                continue
            if (base / top).exists():
                entries.setdefault(top, str(base / top))
        for req in dist.requires or []:
            if "extra ==" not in req.replace('"', "'").replace("extra==", "extra =="):
                m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
                if m:
                    todo.append(m.group(1))
    return entries


def reference_package_entries() -> dict[str, str]:
    """Entries of the installed ``icl`` package (sources, compiled core, case data) -> host path."""
    spec = importlib.util.find_spec("icl")
    if spec is None or spec.origin is None:
        return {}
    out: dict[str, str] = {}
    dirs = [Path(spec.origin).parent]
    core = importlib.util.find_spec("icl._core")
    if core is not None and core.origin:
        dirs.append(Path(core.origin).parent)
    for d in dirs:
        for child in sorted(d.iterdir()):
            if child.name != "__pycache__":
                out.setdefault(child.name, str(child))
    if "cases" not in out:
        from icl._paths import cases_dir

        try:
            out["cases"] = str(cases_dir())
        except FileNotFoundError:
            pass
    return out


def reference_package_dirs() -> list[Path]:
    """Host folders that hold the installed ``icl`` package's files."""
    return sorted({Path(p).parent for p in reference_package_entries().values()})


def _site_dirs() -> list[Path]:
    """Every site-packages folder an interpreter visible in the sandbox could search."""
    dirs = {Path(p) for p in site.getsitepackages()}
    dirs |= {Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.add(Path(site.getusersitepackages()))
    base = Path(sys.base_prefix)
    for pattern in (
        f"{base}/lib/python3*/site-packages",
        "/usr/lib/python3*/*-packages",
        "/usr/local/lib/python3*/*-packages",
    ):
        dirs |= {Path(p) for p in glob.glob(pattern)}
    return sorted(d for d in dirs if d.is_dir())


def _visible(path: Path, trees: list[Path]) -> bool:
    rp = path.resolve()
    return any(rp == t or rp.is_relative_to(t) for t in trees)


@lru_cache(maxsize=4)
def python_view(track: str) -> tuple[tuple[Mount, ...], tuple[str, ...]]:
    """Mounts that give ``#!/usr/bin/env python3`` the allowed packages, and the PATH entries to put first.

    Parameters
    ----------
    track : {"from-scratch", "reference-assisted"}
        The reference package is bound only on the reference-assisted track.

    """
    mounts: list[Mount] = []
    path: list[str] = []
    prefix = Path(sys.base_prefix).resolve()
    trees = [Path("/usr").resolve()]
    if not prefix.is_relative_to("/usr"):
        # A Python built outside /usr (pyenv, conda): bind its installation at the same path.
        mounts.append(Mount("ro", str(prefix), str(prefix)))
        path.append(str(prefix / "bin"))
        trees.append(prefix)
    reference = track == "reference-assisted"
    masked = set()
    for d in _site_dirs() + ([] if reference else reference_package_dirs()):
        rd = d.resolve()
        if _visible(rd, trees) and rd not in masked:
            masked.add(rd)
            mounts.append(Mount("mask", str(rd)))
    entries = _distribution_entries(
        ALLOWED_DISTRIBUTIONS + ((REFERENCE_DISTRIBUTION,) if reference else ()), reference
    )
    for name, src in sorted(entries.items()):
        mounts.append(Mount("ro", f"{SITE_MOUNT}/{name}", src))
    if reference:
        pkg = reference_package_entries()
        if pkg:
            mounts.append(Mount("dir", f"{SITE_MOUNT}/icl"))
            mounts += [Mount("ro", f"{SITE_MOUNT}/icl/{name}", src) for name, src in sorted(pkg.items())]
    return tuple(mounts), tuple(path)


def layout(
    submission: Path, input_dir: Path, output_dir: Path, tmp_bytes: int, track: str
) -> tuple[list[Mount], str]:
    """Return the file-system view of the sandbox (mounts in order) and its PATH."""
    mounts: list[Mount] = []
    for name in SYSTEM_DIRS:
        p = Path("/") / name
        if p.is_symlink():
            mounts.append(Mount("symlink", str(p), os.readlink(p)))
        elif p.is_dir():
            mounts.append(Mount("ro", str(p), str(p)))
    for name in ETC_FILES:
        if (Path("/etc") / name).exists():
            mounts.append(Mount("ro", f"/etc/{name}", f"/etc/{name}"))
    py, py_path = python_view(track)
    mounts += py
    mounts += [
        Mount("ro", SUBMISSION_MOUNT, str(submission)),
        Mount("ro", INPUT_MOUNT, str(input_dir)),
        Mount("rw", OUTPUT_MOUNT, str(output_dir)),
        Mount("proc", "/proc"),
        Mount("dev", "/dev"),
        Mount("tmpfs", "/dev/shm", size=tmp_bytes),
        Mount("tmpfs", "/tmp", size=tmp_bytes),
    ]
    # Parent folders made explicitly, world-readable (bwrap would create them mode 0700, root-only); not
    # below a bound tree, where they already exist.
    dests = {m.dest for m in mounts}
    bound = [Path(m.dest) for m in mounts if m.kind in ("ro", "rw", "mask")]
    parents = {str(a) for m in mounts for a in Path(m.dest).parents if str(a) != "/"} - dests
    parents = {p for p in parents if not any(Path(p).is_relative_to(b) for b in bound)}
    ordered = sorted(parents, key=lambda d: (d.count("/"), d))
    return [Mount("dir", d) for d in ordered] + mounts, ":".join(
        [*py_path, "/usr/local/bin", "/usr/bin", "/bin"]
    )

"""Professional-track submission contract: what a submission folder must hold, checked without running it.

:func:`validate_submission` walks a submission folder and returns a :class:`Report` listing every missing
or malformed item, each naming the file (relative to the submission) and the field. Validation never
raises on bad submissions, never follows a link out of the folder and never opens anything but regular
files. The result files of a case follow the one schema of :mod:`icl.pro.results_schema`, which the scorer
also uses. The layout and formats are documented in ``docs/pro-harness.md``::

    manifest.json  source/  run  model/eye.json  experiments.json  report.md
    results/<case>/{psf_linear.npz, energy.json, paths.npz, metrics.json, retinal_linear.npz, preview.png}
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from icl.pro.package import uncertainty_problem
from icl.pro.results_schema import (
    RESULT_FILES,
    SCHEMAS,
    _json,
    check_experiment_entries,
    check_file,
)

#: Case ids (``results/<case>``): no path separators, no leading dot.
CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Bounds on the walk, so a hostile tree cannot stall the validator.
MAX_ENTRIES = 100_000
MAX_TOTAL_BYTES = 4 * 1024**3
MAX_REPORT_BYTES = 1024 * 1024
PARAMETER_STATUS = ("measured", "documented", "synthetic", "estimated", "unknown")


@dataclass(frozen=True)
class Issue:
    """One problem found in a submission.

    Attributes
    ----------
    file : str
        Path relative to the submission root (``.`` for the root itself).
    field : str
        Dotted field or array name inside the file, empty when the whole file is at fault.
    message : str
        What is wrong.

    """

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


@dataclass
class Report:
    """Outcome of :func:`validate_submission`.

    Attributes
    ----------
    root : str
        The submission folder as given.
    issues : list of Issue
        Every problem found, in walk order; empty for a valid submission.
    cases : list of str
        Case ids found under ``results/`` (valid or not).

    """

    root: str
    issues: list[Issue] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no issue was found."""
        return not self.issues

    def add(self, file: str, fld: str, message: str) -> None:
        """Record one issue."""
        self.issues.append(Issue(file, fld, message))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (stable key order via :func:`icl.io.write_json`)."""
        return {"root": self.root, "ok": self.ok, "cases": list(self.cases),
                "issues": [{"file": i.file, "field": i.field, "message": i.message} for i in self.issues]}


# ----------------------------------------------------------------------------------------------- walk


class _Tree:
    """A bounded, link-checked inventory of the submission (``lstat`` only, nothing opened)."""

    def __init__(self, root: Path, report: Report):
        self.root = root
        self.real_root = root.resolve()
        self.report = report
        self.kinds: dict[str, str] = {}  # relative posix path -> "file" | "dir"
        self.total_bytes = 0
        self._walk()

    def _walk(self) -> None:
        stack = [self.root]
        count = 0
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as exc:
                self.report.add(self._rel(Path(folder)), "", f"cannot list folder: {exc.strerror or exc}")
                continue
            for entry in entries:
                count += 1
                if count > MAX_ENTRIES:
                    self.report.add(".", "", f"more than {MAX_ENTRIES} entries; the rest was not checked")
                    return
                path = Path(entry.path)
                rel = self._rel(path)
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    self.report.add(rel, "", f"cannot stat: {exc.strerror or exc}")
                    continue
                if stat.S_ISLNK(st.st_mode):
                    kind = self._link_kind(path, rel)
                    if kind:
                        self.kinds[rel] = kind
                    continue
                if stat.S_ISDIR(st.st_mode):
                    self.kinds[rel] = "dir"
                    stack.append(path)
                elif stat.S_ISREG(st.st_mode):
                    if st.st_nlink > 1:
                        # A hard link may alias a file outside the submission; paths cannot tell.
                        self.report.add(rel, "", "hard-linked file (link count > 1) is refused")
                        continue
                    self.kinds[rel] = "file"
                    self.total_bytes += st.st_size
                else:
                    self.report.add(rel, "", "special file (device, FIFO or socket) is refused")
        if self.total_bytes > MAX_TOTAL_BYTES:
            self.report.add(".", "", f"submission holds {self.total_bytes} bytes, more than {MAX_TOTAL_BYTES}")

    def _link_kind(self, path: Path, rel: str) -> str | None:
        """Accept a symbolic link only if it resolves to a regular file or folder inside the submission."""
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            self.report.add(rel, "", "dangling or looping symbolic link")
            return None
        if not target.is_relative_to(self.real_root):
            self.report.add(rel, "", "symbolic link points outside the submission")
            return None
        st = target.stat()
        if stat.S_ISREG(st.st_mode):
            return "file"
        if stat.S_ISDIR(st.st_mode):
            # Its contents are reached through the real path, which the walk visits anyway.
            return "dir"
        self.report.add(rel, "", "symbolic link to a special file is refused")
        return None

    def _rel(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    def is_file(self, rel: str) -> bool:
        return self.kinds.get(rel) == "file"

    def is_dir(self, rel: str) -> bool:
        return self.kinds.get(rel) == "dir"

    def children(self, rel: str) -> Iterator[str]:
        prefix = rel.rstrip("/") + "/"
        for key in sorted(self.kinds):
            if key.startswith(prefix) and "/" not in key[len(prefix):]:
                yield key


# ------------------------------------------------------------------------------------------ helpers


@lru_cache(maxsize=1)
def manifest_schema() -> dict[str, Any]:
    """The JSON schema of ``manifest.json`` (``icl/pro/schemas/manifest.schema.json``)."""
    text = resources.files("icl.pro").joinpath("schemas/manifest.schema.json").read_text("utf-8")
    return json.loads(text)


# --------------------------------------------------------------------------------------- item checks


def _check_manifest(report: Report, root: Path, rel: str) -> None:
    import jsonschema

    obj = _json(report, root, rel)
    if obj is None:
        return
    validator = jsonschema.Draft202012Validator(manifest_schema())
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        if err.validator == "required" and not err.absolute_path and "'track'" in err.message:
            report.add(rel, "track", 'missing: declare "from-scratch" or "reference-assisted"')
            continue
        report.add(rel, ".".join(map(str, err.absolute_path)), err.message)


def _check_run(report: Report, root: Path, tree: _Tree) -> None:
    if not tree.is_file("run"):
        report.add("run", "", "missing: an executable file taking INPUT and OUTPUT folders")
        return
    path = root / "run"
    if not os.stat(path).st_mode & stat.S_IXUSR:
        report.add("run", "", "is not executable (chmod +x)")
    with open(path, "rb") as fh:
        head = fh.read(4)
    if not (head.startswith(b"#!") or head == b"\x7fELF"):
        report.add("run", "", "must start with a '#!' interpreter line or be an ELF executable")


def _check_parameters(report: Report, rel: str, obj: Any, where: str) -> int:
    """Check every parameter (an object with ``value``) below ``obj``; return how many were seen."""
    if isinstance(obj, list):
        return sum(_check_parameters(report, rel, v, f"{where}[{i}]") for i, v in enumerate(obj))
    if not isinstance(obj, dict):
        return 0
    if "value" not in obj:
        return sum(_check_parameters(report, rel, v, f"{where}.{k}" if where else k) for k, v in obj.items())
    for key in ("unit", "source"):
        if not isinstance(obj.get(key), str):
            report.add(rel, f"{where}.{key}", "parameter needs a string (use '1' for dimensionless units)")
    problem = uncertainty_problem(obj.get("uncertainty")) if "uncertainty" in obj else "is missing"
    if problem:  # the schema of the data packages (icl.pro.package.uncertainty_problem)
        report.add(rel, f"{where}.uncertainty", f"parameter uncertainty {problem}")
    if obj.get("status") not in PARAMETER_STATUS:
        report.add(rel, f"{where}.status", f"must be one of {list(PARAMETER_STATUS)}")
    return 1


def _check_eye(report: Report, root: Path, rel: str) -> None:
    obj = _json(report, root, rel)
    if obj is None:
        return
    if not isinstance(obj, dict):
        report.add(rel, "", "must be a JSON object")
    elif _check_parameters(report, rel, obj, "") == 0:
        report.add(rel, "", "holds no parameter (objects with value/unit/source/uncertainty/status)")


def _check_experiments(report: Report, root: Path, rel: str, tree: _Tree) -> None:
    obj = _json(report, root, rel)
    if obj is None:
        return
    for i, exp in enumerate(check_experiment_entries(report, rel, obj, series=False)):
        files = exp.get("files", [])
        if not isinstance(files, list):
            report.add(rel, f"experiments[{i}].files", "must be a list of paths relative to the submission")
            continue
        for j, f in enumerate(files):
            _check_reference(report, rel, f"experiments[{i}].files[{j}]", f, tree)


def _check_reference(report: Report, rel: str, fld: str, value: Any, tree: _Tree) -> None:
    """A path written inside a file must stay inside the submission and exist there."""
    if not isinstance(value, str) or not value:
        report.add(rel, fld, "must be a non-empty path string")
        return
    parts = value.split("/")
    if value.startswith("/") or "\\" in value or ".." in parts or "\x00" in value:
        report.add(rel, fld, f"path {value!r} leaves the submission (absolute, '..' or backslash)")
    elif not (tree.is_file(value) or tree.is_dir(value)):
        report.add(rel, fld, f"path {value!r} does not exist in the submission")


def _check_report_md(report: Report, root: Path, rel: str) -> None:
    data = (root / rel).read_bytes()[: MAX_REPORT_BYTES + 1]
    if len(data) > MAX_REPORT_BYTES:
        report.add(rel, "", f"larger than {MAX_REPORT_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add(rel, "", f"not UTF-8 text (byte {exc.start})")
        return
    if not text.strip():
        report.add(rel, "", "is empty")


# ---------------------------------------------------------------------------------------------- entry


def validate_submission(path: str | os.PathLike) -> Report:
    """Check a professional-track submission folder against the contract.

    Parameters
    ----------
    path : path-like
        The submission folder (``manifest.json``, ``run``, ``source/``, ``model/``, ``results/``, ...).

    Returns
    -------
    Report
        Every issue found, each naming the file (relative to ``path``) and the field. A submission is valid
        when ``report.ok``. Unreadable or hostile content becomes an issue; nothing is executed.

    """
    root = Path(path)
    report = Report(str(path))
    tree = _open_folder(root, report, "submission")
    if tree is None:
        return report

    def need_file(rel: str, check: Callable[[Report, Path, str], None]) -> None:
        _check_file(report, root, tree, rel, check)

    need_file("manifest.json", _check_manifest)
    _check_run(report, root, tree)
    if not tree.is_dir("source"):
        report.add("source", "", "missing: the solver and environment-building code")
    elif not any(k.startswith("source/") and v == "file" for k, v in tree.kinds.items()):
        report.add("source", "", "holds no file")
    need_file("model/eye.json", _check_eye)
    need_file("experiments.json", lambda r, p, rel: _check_experiments(r, p, rel, tree))
    need_file("report.md", _check_report_md)

    if not tree.is_dir("results"):
        report.add("results", "", "missing: one folder per case, results/<case>/")
        return report
    _check_cases(report, root, tree, "results")
    return report


def validate_results(path: str | os.PathLike) -> Report:
    """Check a folder of case results, such as the OUTPUT a submission's ``run`` writes.

    Parameters
    ----------
    path : path-like
        A folder of ``<case>/`` sub-folders, each with the six result files of the contract.

    Returns
    -------
    Report
        As for :func:`validate_submission`, with file names relative to ``path``.

    """
    root = Path(path)
    report = Report(str(path))
    tree = _open_folder(root, report, "results")
    if tree is not None:
        _check_cases(report, root, tree, ".")
    return report


def _open_folder(root: Path, report: Report, what: str) -> _Tree | None:
    """The tree below ``root``, or None (with the issue recorded) when it is not a readable real folder."""
    try:
        st = os.lstat(root)
    except OSError as exc:
        report.add(".", "", f"cannot read the {what} folder: {exc.strerror or exc}")
        return None
    if not stat.S_ISDIR(st.st_mode):
        report.add(".", "", f"the {what} must be a folder (not a link or a file)")
        return None
    return _Tree(root, report)


def _check_file(report: Report, root: Path, tree: _Tree, rel: str,
                check: Callable[[Report, Path, str], None]) -> None:
    """Run ``check`` on ``rel`` if it is a regular file; otherwise say what it is (once)."""
    if tree.is_file(rel):
        check_file(report, root, rel, check)  # reports an unreadable file, never raises
    elif rel in tree.kinds:
        report.add(rel, "", "must be a regular file")
    elif not _reported(report, rel):
        report.add(rel, "", "missing")


def _check_cases(report: Report, root: Path, tree: _Tree, base: str) -> None:
    """Check every ``<base>/<case>/`` folder for the six result files."""
    for case_rel in (tree.children(base) if base != "." else sorted(k for k in tree.kinds if "/" not in k)):
        case = case_rel.rsplit("/", 1)[-1]
        report.cases.append(case)
        if not tree.is_dir(case_rel):
            report.add(case_rel, "", f"only case folders belong in {base}/")
            continue
        if not CASE_ID.match(case):
            report.add(case_rel, "", "case id must be letters, digits, '_', '.', '-' (no leading dot)")
            continue
        for name in RESULT_FILES:
            _check_file(report, root, tree, f"{case_rel}/{name}", SCHEMAS[name])
    if not report.cases:
        report.add(base, "", "holds no case folder")


def _reported(report: Report, rel: str) -> bool:
    """True if the walk already reported ``rel`` (a refused link or special file): say it once."""
    return any(i.file == rel for i in report.issues)

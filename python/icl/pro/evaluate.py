"""Evaluate submissions through the sandboxed harness: frozen code, input sets, run records.

The evaluator copies the chosen instances into input sets, freezes each submission by its tree hash
(:func:`icl.pro.harness.tree_sha256`) before its first run, and runs ``run INPUT OUTPUT`` once per set in a
fresh sandbox (:func:`icl.pro.harness.run_submission`) with the frozen hash checked every time. The first
set (``base``: groups A, B, C, E, F) is the cold start; each D template's instances form one hidden
intervention set, so an intervention reaches the frozen code only as a changed input folder.

Layout of one run of one submission (``<work>/<name>/run<k>/``)::

    sets.json              set name, instances, output folder and run record of every set
    <set>/                 the program's OUTPUT for that set (results/<instance>/...)
    logs/<set>/            stdout.log, stderr.log, run_record.json

:func:`icl.pro.score.score_run` reads ``sets.json``: instances of a set whose record is not ``ok`` score
0 with the record's reason, and gate G3 passes only when every set ran ``ok`` under the frozen hash.

Gate G4 is measured as well as declared: a hidden ``sampling-check`` set repeats one instance of each
forward template (:data:`SAMPLING_TEMPLATES`) with ``task.json`` asking for finer sampling
(:data:`SAMPLING`: twice the pupil samples and rays, a 1.5 times longer FFT period). The frozen code runs it
like any set; :func:`sampling_check` then compares every key conclusion of those instances (labels, choices,
sets and orders exactly; numbers within the check's tolerance) with the cold-start run and writes the flips
into ``sets.json``. A conclusion that flips fails G4 (:func:`icl.pro.score.score_run`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icl.errors import InputError, OutputError
from icl.io import load_json, write_json
from icl.pro.baselines.runner import STRATEGIES

BASE_SET = "base"
SAMPLING_SET = "sampling-check"
SAMPLING = {
    "pupil_samples_factor": 2.0,
    "fft_period_factor": 1.5,
    "ray_count_factor": 2.0,
    "note": "hidden sampling intervention: rerun with finer sampling; every conclusion should stand",
}
SAMPLING_TEMPLATES = ("C01", "C02", "C03", "C04", "C06", "F02", "F03")
CONCLUSION_KINDS = ("label", "choice", "set", "sequence", "scalar", "angle")


def _new_folder(path: Path) -> Path:
    """Create ``path`` (and its parents) as a new folder; an existing one is refused, never replaced.

    Replacing a folder is left to the commands' ``--force`` rule (:func:`icl.io.prepare_output_dir`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir()
    except FileExistsError:
        raise OutputError(
            "already exists; these folders are written only new (start from an empty folder, or give the "
            "command --force to empty it first)",
            str(path),
        ) from None
    return path


def write_baselines(output: str | os.PathLike, strategies: Sequence[str] = STRATEGIES) -> list[Path]:
    """Write one submission folder per baseline strategy into ``output``.

    Each folder holds ``run`` (``/bin/sh`` script), ``manifest.json`` and ``source/icl``: a vendored copy
    of this package with its compiled kernels, because the sandbox hides the installed ``icl`` (only the
    reference-assisted track may use it, and then as code it carries). A folder that already exists is
    refused, never replaced.

    Returns
    -------
    list of Path
        The submission folders, in ``strategies`` order.

    """
    import importlib.util

    import icl

    pkg_dir = Path(icl.__file__).parent
    core = Path(importlib.util.find_spec("icl._core").origin)  # the compiled file, copied as is
    version = getattr(icl, "__version__", "0")
    folders = []
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"unknown baseline strategy {s!r}; choose from {STRATEGIES}")
        d = _new_folder(Path(output) / s)
        shutil.copytree(
            pkg_dir, d / "source" / "icl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_core*.so")
        )
        shutil.copy2(core, d / "source" / "icl" / core.name)
        script = (
            "#!/bin/sh\n# Baseline submission: the vendored icl package, one fixed strategy.\n"
            'PYTHONPATH="/submission/source${PYTHONPATH:+:$PYTHONPATH}" export PYTHONPATH\n'
            f'exec python3 -m icl.pro.baselines.runner {s} "$1" "$2"\n'
        )
        (d / "run").write_text(script, encoding="utf-8")  # d is new: nothing there to write through
        write_json(
            d / "manifest.json",
            {
                "format": "icl-pro-submission/1",
                "track": "reference-assisted",
                "model": {
                    "name": f"baseline-{s}",
                    "version": version,
                    "description": f"baseline strategy {s}",
                },
                "tools": [{"name": "icl-bench", "version": version, "source": "vendored"}],
                "versions": {"submission": version},
                "dependencies": [
                    {"name": "numpy", "version": _dist("numpy")},
                    {"name": "scipy", "version": _dist("scipy")},
                ],
                "random_seeds": {},
                "compute_budget": {"cpus": 1, "memory_gb": 2, "build_minutes": 0, "run_minutes_per_case": 1},
            },
        )
        if s == "full-model":
            from icl.pro.baselines.full import write_contract_files

            write_contract_files(d)
        _world_readable(d)
        folders.append(d)
    return folders


def _dist(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _world_readable(root: Path) -> None:
    """Make a tree readable (and folders and executables enterable) by the sandbox's unprivileged uid."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = Path(dirpath) / name
            mode = p.lstat().st_mode
            if stat.S_ISREG(mode):
                p.chmod(0o755 if mode & 0o100 or name == "run" else 0o644)


def select_instances(release: str | os.PathLike, per_template: int, split: str = "test") -> list[str]:
    """Return the first ``per_template`` instances of every template in ``split`` (sorted ids)."""
    rows = load_json(Path(release) / "private" / "splits.json")["instances"]
    by_t: dict[str, list[str]] = {}
    for r in sorted(rows, key=lambda r: r["id"]):
        if r["split"] == split:
            by_t.setdefault(r["template"], []).append(r["id"])
    return [i for t in sorted(by_t) for i in by_t[t][:per_template]]


def input_sets(instances: Sequence[str], sampling: bool = False) -> dict[str, list[str]]:
    """Group instances into input sets.

    ``base`` (cold start: all but group D), one hidden-intervention set per D template and, with
    ``sampling``, the ``sampling-check`` set (the first base instance of each sampled template).
    """
    sets: dict[str, list[str]] = {BASE_SET: [i for i in instances if not i.startswith("D")]}
    for iid in instances:
        if iid.startswith("D"):
            sets.setdefault(f"intervention-{iid[:3]}", []).append(iid)
    if sampling:
        firsts: dict[str, str] = {}
        for iid in sorted(sets[BASE_SET]):
            if iid[:3] in SAMPLING_TEMPLATES:
                firsts.setdefault(iid[:3], iid)
        sets[SAMPLING_SET] = sorted(firsts.values())
    return {k: v for k, v in sets.items() if v}


def mark_sampling(folder: str | os.PathLike, release: str | os.PathLike, split: str = "test") -> None:
    """Add the hidden sampling request (:data:`SAMPLING`) to every copied ``task.json`` under ``folder``.

    The task is read from the release, never from the copy being rewritten.
    """
    for task in sorted(Path(folder).glob("*/task.json")):
        doc = load_json(Path(release) / "inputs" / split / task.parent.name / "task.json")
        doc["sampling"] = SAMPLING
        write_json(task, doc)
        task.chmod(0o644)


def sampling_check(
    release: str | os.PathLike, run_dir: str | os.PathLike, sets: list[dict] | None = None
) -> dict:
    """Compare the key conclusions of the ``sampling-check`` instances with the cold-start run.

    Returns ``{"instances", "compared", "flips": [{"instance", "check", "base", "sampled"}]}``; a missing or
    unreadable conclusion on either side counts as a flip (it cannot be shown to stand).
    """
    from icl.pro.catalog import load_catalog
    from icl.pro.score import MAX_METRICS_BYTES

    run_dir = Path(run_dir)
    rows = {r["set"]: r for r in (sets if sets is not None else load_json(run_dir / "sets.json")["sets"])}
    if SAMPLING_SET not in rows:
        return {"instances": 0, "compared": 0, "flips": []}
    catalog = load_catalog(Path(release) / "catalog.json")
    compared, flips = 0, []
    for iid in rows[SAMPLING_SET].get("compares", []):
        refs = load_json(Path(release) / "private" / "references" / f"{iid}.json")["checks"]
        for ch in catalog.template(iid[:3]).auto_checks:
            if ch.kind not in CONCLUSION_KINDS or "case" not in refs.get(ch.id, {}):
                continue
            case = refs[ch.id]["case"]
            got = []
            for name in (BASE_SET, SAMPLING_SET):
                p = run_dir / rows[name]["output"] / "results" / iid / case / "metrics.json"
                try:
                    m = load_json(p, max_bytes=MAX_METRICS_BYTES)
                    got.append(m.get(ch.key) if isinstance(m, dict) else None)
                except (OSError, InputError):
                    got.append(None)
            if got[0] is None and got[1] is None:
                continue  # no answer either time: nothing to flip (the check itself scores 0)
            compared += 1
            if not _same_conclusion(ch, *got):
                flips.append({"instance": iid, "check": ch.id, "base": got[0], "sampled": got[1]})
    return {"instances": len(rows[SAMPLING_SET].get("compares", [])), "compared": compared, "flips": flips}


def _same_conclusion(ch: Any, a: Any, b: Any) -> bool:
    """Whether two answers to one check state the same conclusion (numbers within its tolerance)."""
    if a is None or b is None:
        return False
    if ch.kind in ("scalar", "angle"):
        try:
            x, y = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
        except (TypeError, ValueError):
            return False
        if x.shape != y.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            return False
        d = np.abs(x - y)
        if ch.kind == "angle":
            d = np.abs((x - y + 90.0) % 180.0 - 90.0)
        elif ch.relative:
            d = d / np.maximum(np.abs(x), 1e-300)
        return bool(d.max() <= (ch.tolerance or 0.0))
    if ch.kind == "set" and isinstance(a, list) and isinstance(b, list):
        return sorted(map(str, a)) == sorted(map(str, b))
    return a == b


def build_inputs(
    release: str | os.PathLike, sets: dict[str, list[str]], folder: str | os.PathLike, split: str = "test"
) -> dict[str, Path]:
    """Copy each set's instance folders into new folders ``folder/<set>/``.

    No links: the sandbox sees only copies. An existing ``folder/<set>`` is refused, never replaced.
    """
    folder = Path(folder)
    out = {}
    for name, ids in sets.items():
        d = _new_folder(folder / name)
        for iid in ids:
            shutil.copytree(Path(release) / "inputs" / split / iid, d / iid)
        _world_readable(d)
        out[name] = d
    return out


def run_sets(
    submission: str | os.PathLike,
    inputs: dict[str, Path],
    sets: dict[str, list[str]],
    run_dir: str | os.PathLike,
    frozen_hash: str,
    *,
    cpus: int = 4,
    memory: str = "8G",
    timeout_s: float = 1200.0,
    mechanism: str | None = None,
    release: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Run a frozen submission once on every input set; write and return ``run_dir/sets.json``.

    ``run_dir`` must not exist yet (it is created; an existing one is refused, never replaced).

    With ``release``, a ``sampling-check`` set is compared with the cold start (:func:`sampling_check`) and
    the result stored as ``sampling_check``.
    """
    from icl.pro.harness import run_submission

    run_dir = _new_folder(Path(run_dir))
    rows = []
    for name, ids in sets.items():
        rec = run_submission(
            submission,
            inputs[name],
            run_dir / name,
            cpus=cpus,
            memory=memory,
            timeout_s=timeout_s,
            frozen_hash=frozen_hash,
            logs_dir=run_dir / "logs" / name,
            mechanism=mechanism,
        )
        rows.append(set_row(run_dir, name, ids, rec.signed_dict()))
    return write_sets(run_dir, submission, frozen_hash, rows, release)


def set_row(run_dir: str | os.PathLike, name: str, ids: Sequence[str], record: dict) -> dict:
    """The ``sets.json`` row of one input set whose OUTPUT is ``run_dir/name`` and harness record ``record``."""
    from icl.pro.results_schema import validate_output

    out = Path(run_dir) / name
    issues = validate_output(out) if out.is_dir() else []
    if name == SAMPLING_SET:  # scored from the cold start; only compared (gate G4)
        return {"set": name, "instances": [], "compares": list(ids), "output": name, "record": record,
                "result_issues": issues}
    row = {"set": name, "instances": list(ids), "output": name, "record": record, "result_issues": issues}
    return row


def write_sets(
    run_dir: str | os.PathLike,
    submission: str | os.PathLike,
    frozen_hash: str,
    rows: list[dict],
    release: str | os.PathLike | None = None,
) -> dict:
    """Write ``run_dir/sets.json`` from the rows of every set of one run (and its sampling check), signed
    with the evaluator key (:mod:`icl.sandbox.signing`); each row's record carries the harness's signature."""
    from icl.sandbox.signing import sign

    doc = {
        "format": "icl-pro-run-sets/1",
        "submission": str(Path(submission).resolve()),
        "frozen_sha256": frozen_hash,
        "sets": rows,
    }
    manifest = Path(submission) / "manifest.json"
    if manifest.is_file() and not manifest.is_symlink():
        # The frozen submission's own manifest (F06.3 reads it): what the program writes into OUTPUT is not it.
        doc["submission_manifest"] = load_json(manifest)
    if release is not None and any(r["set"] == SAMPLING_SET for r in rows):
        doc["sampling_check"] = sampling_check(release, run_dir, rows)
    doc = sign(doc)
    write_json(Path(run_dir) / "sets.json", doc)
    return doc


def record_sampling_check(release: str | os.PathLike, run_dir: str | os.PathLike) -> dict:
    """Run :func:`sampling_check` again on an evaluated run and store its result in ``sets.json`` (verified
    first, signed again)."""
    from icl.pro.score import load_sets
    from icl.sandbox.signing import sign

    load_sets(run_dir)
    path = Path(run_dir) / "sets.json"
    doc = load_json(path)
    doc["sampling_check"] = sampling_check(release, run_dir)
    write_json(path, sign(doc))
    return doc["sampling_check"]


def evaluate(
    release: str | os.PathLike,
    submissions: Sequence[str | os.PathLike],
    work: str | os.PathLike,
    *,
    per_template: int = 4,
    runs: int = 3,
    cpus: int = 4,
    memory: str = "8G",
    timeout_s: float = 1200.0,
    bootstrap_n: int = 2000,
    mechanism: str | None = None,
    instances: Sequence[str] | None = None,
    progress: bool = True,
    sampling: bool = True,
) -> list[dict]:
    """Freeze, run ``runs`` times through the harness, and score every submission.

    Returns
    -------
    list of dict
        One :func:`icl.pro.score.score_submission` result per submission, with its cost.

    """
    from icl.pro.harness import tree_sha256
    from icl.pro.score import score_submission

    work = Path(work)
    ids = list(instances) if instances is not None else select_instances(release, per_template)
    if not ids:
        raise InputError(
            f"no test instance selected (per_template={per_template}, instances={instances!r})", str(release)
        )
    sets = input_sets(ids, sampling=sampling)
    inputs = build_inputs(release, sets, work / "inputs")
    if SAMPLING_SET in inputs:
        mark_sampling(inputs[SAMPLING_SET], release)
    results = []
    for sub in submissions:
        sub = Path(sub)
        frozen = tree_sha256(sub)  # frozen once, before the first run; every later run is checked against it
        dirs = []
        for k in range(runs):
            if progress:
                print(f"{sub.name}: run {k + 1} of {runs} ({len(sets)} input sets)", flush=True)
            d = work / sub.name / f"run{k}"
            run_sets(
                sub,
                inputs,
                sets,
                d,
                frozen,
                cpus=cpus,
                memory=memory,
                timeout_s=timeout_s,
                mechanism=mechanism,
                release=release,
            )
            dirs.append(d)
        results.append(score_submission(release, dirs, sub.name, instances=ids, bootstrap_n=bootstrap_n))
    return results

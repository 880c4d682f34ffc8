"""Evaluation queue: submissions run on a frozen release, each (submission, run, input set) one task.

``icl board evaluate`` plans every task on the client, runs them serially or on dask.distributed
(``--scheduler local`` for a ``LocalCluster``, or a scheduler's address), and writes what they return into
one work folder, which :mod:`icl.board.rows` scores:

    evaluation.json                     release, freeze hash, budgets, submissions, tasks (who ran each)
    inputs/<set>/                       the input sets (professional track; the halo track's is public/)
    runs/<name>/run<k>/sets.json        the harness record of every set of that run (the pro scorer's input)
    runs/<name>/run<k>/<set>/           the program's OUTPUT for that set
    runs/<name>/run<k>/logs/<set>/      stdout.log, stderr.log, run_record.json
    scores/<name>.json                  the track scorer's result over the runs

Tasks are shared-nothing: a task carries the submission and its input set as file maps (in the task
itself: data scattered ahead lives only on the workers holding it, and a killed holder lost it for good in
the lost-worker test), unpacks them into a private folder of its worker, runs :func:`icl.sandbox.harness.
run_submission` with the frozen code hash and the board's budget, and returns the run record with the
OUTPUT and logs as file maps. Only the client writes files, in task order, so a cluster needs no shared file
system and serial and distributed evaluation write the same bytes (apart from the measured costs and the
host paths inside the records). A worker lost mid-task is replaced and its task runs again on a live worker
(dask reschedules the tasks of a worker that died; ``retries`` covers a task that raised).

Budgets (the trial values of the benchmark's rules): a build phase of 90 minutes and a run phase of 20 minutes per input set, 4 CPU
and 8 GB; the research board has no build limit and reports the real cost. The harness's run phase is timed
and capped here (``timeout_s``, cores, memory); a submission with a ``build`` program is refused until the
harness has a build phase.
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import load_json, write_json
from icl.sandbox.signing import sign

#: Boards a submission can be entered on (the first two follow its manifest's ``track``).
BOARDS = ("from-scratch", "reference-assisted", "research")
HALO_SET = "public"
FORMAT = "icl-board-evaluation/1"


@dataclass(frozen=True)
class Budget:
    """What one run may use: build seconds (None: unlimited), run seconds per input set, cores, memory."""

    build_s: float | None = 90 * 60.0
    run_s: float = 20 * 60.0
    cpus: int = 4
    memory: str = "8G"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``build_s`` null = unlimited)."""
        return asdict(self)


def budget_for(board: str, base: Budget) -> Budget:
    """Return the budget of ``board``: the research board keeps the run limits, with no build limit."""
    return replace(base, build_s=None) if board == "research" else base


@dataclass(frozen=True)
class Entry:
    """One submission to evaluate: its name, folder, board and frozen code hash."""

    name: str
    path: Path
    board: str
    track: str
    frozen_sha256: str


def release_track(release: str | os.PathLike) -> str:
    """``pro`` or ``halo``, from the release's layout."""
    root = Path(release)
    if (root / "catalog.json").is_file() and (root / "inputs").is_dir():
        return "pro"
    if (root / "public" / "halo_cases.json").is_file():
        return "halo"
    raise InputError(
        "not a professional or halo release (no catalog.json + inputs/, no public/halo_cases.json)",
        str(root),
        "release",
    )


def entries(folders: Sequence[str | os.PathLike], research: Sequence[str] = ()) -> list[Entry]:
    """Freeze every submission folder by its tree hash and place it on its board.

    The board is ``research`` for the names in ``research``, else the manifest's ``track`` (from-scratch
    when absent). A folder without an executable ``run`` or with a ``build`` program (no build phase in
    this harness yet) is refused, naming it.
    """
    from icl.sandbox.harness import tree_sha256

    out, names = [], set()
    for f in folders:
        p = Path(f)
        run = p / "run"
        if not run.is_file() or not os.access(run, os.X_OK):
            raise InputError("a submission needs an executable run program", str(run), "run")
        if (p / "build").exists():
            raise InputError(
                "a build program needs the harness's build phase, which this harness does not "
                "have yet: enter the submission with its compiled parts built",
                str(p / "build"),
                "build",
            )
        if p.name in names:
            raise InputError("two submissions with one name", str(p), "name")
        names.add(p.name)
        manifest = p / "manifest.json"
        track = "from-scratch"
        if manifest.is_file():
            m = load_json(manifest)
            track = m.get("track", track) if isinstance(m, dict) else track
        if track not in BOARDS[:2]:
            raise InputError(f"unknown track {track!r}", str(manifest), "track")
        board = "research" if p.name in research else track
        out.append(Entry(p.name, p, board, track, tree_sha256(p)))
    unknown = set(research) - names
    if unknown:
        raise InputError(f"--research names no submission: {sorted(unknown)}", None, "research")
    return out


# file maps ---------------------------------------------------------------------------------------------


def pack_tree(root: str | os.PathLike) -> dict[str, tuple]:
    """Read a folder into a map: relative path -> ("d",) | ("f", executable, bytes) | ("l", target).

    Links are kept as links (never followed); anything else but folders and regular files is refused.
    """
    root = Path(root)
    files: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in sorted(dirnames + filenames):
            p = base / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                files[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                files[rel] = ("d",)
            elif stat.S_ISREG(st.st_mode):
                files[rel] = ("f", bool(st.st_mode & 0o111), p.read_bytes())
            else:
                raise InputError("not a file, folder or link", str(p), "files")
    return dict(sorted(files.items()))


def unpack_tree(files: dict[str, tuple], dest: str | os.PathLike, readable: bool = True) -> Path:
    """Write a file map into the new folder ``dest`` (world-readable when ``readable``: the sandbox's uid).

    Paths are checked (relative, no ``..``); a link's target is written as it was, not followed.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=False)
    for rel, entry in files.items():
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise InputError("a packed path must stay inside its folder", rel, "files")
        p = dest.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        if entry[0] == "d":
            p.mkdir(exist_ok=True)
        elif entry[0] == "l":
            os.symlink(entry[1], p)
        else:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(entry[2])
            os.chmod(p, (0o755 if entry[1] else 0o644) if readable else (0o700 if entry[1] else 0o600))
    if readable:
        for dirpath, _dirnames, _filenames in os.walk(dest):
            os.chmod(dirpath, 0o755)
    return dest


# the task ---------------------------------------------------------------------------------------------


def run_task(task: dict[str, Any], submission: dict[str, tuple], inputs: dict[str, tuple]) -> dict[str, Any]:
    """Run one (submission, run, input set) in the sandbox on this worker; return record, OUTPUT and logs.

    ``task`` holds ``key``, ``frozen_sha256``, ``track`` (declared), ``budget`` and ``mechanism``. Module
    level, so that dask can send it to a worker.
    """
    from icl.sandbox.harness import run_submission

    budget = Budget(**task["budget"])
    with tempfile.TemporaryDirectory(prefix="icl-board-task-") as tmp:
        os.chmod(tmp, 0o755)
        sub = unpack_tree(submission, Path(tmp) / "submission")
        inp = unpack_tree(inputs, Path(tmp) / "input")
        out, logs = Path(tmp) / "output", Path(tmp) / "logs"
        t0 = time.time()
        record = run_submission(
            sub,
            inp,
            out,
            cpus=budget.cpus,
            memory=budget.memory,
            timeout_s=budget.run_s,
            frozen_hash=task["frozen_sha256"],
            logs_dir=logs,
            mechanism=task.get("mechanism"),
            track=task["track"],
        )
        return {
            "key": task["key"],
            "record": record.signed_dict(),
            "output": pack_tree(out) if out.is_dir() else {},
            "logs": pack_tree(logs) if logs.is_dir() else {},
            "worker": {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": t0,
                "seconds": time.time() - t0,
            },
        }


def execute(
    tasks: list[dict[str, Any]],
    files: dict[str, dict[str, tuple]],
    *,
    scheduler: str | None = None,
    workers: int = 1,
    retries: int = 2,
    quiet: bool = False,
) -> list[dict[str, Any]]:
    """Run every task (serially without ``scheduler``); results in task order.

    ``files`` maps a name to a file map; each task names its ``submission`` and ``inputs`` there. On
    dask, each task is submitted under its own key with ``retries`` and carries its two file maps, so a
    task lost with its worker is rerun on any other.
    """
    from icl.parallel import _progress, dask_client

    results: list[dict[str, Any] | None] = [None] * len(tasks)
    with _progress("board: tasks", len(tasks), quiet) as prog:
        tid = prog.task_ids[0]
        if scheduler is None:
            for i, t in enumerate(tasks):
                results[i] = run_task(t, files[t["submission"]], files[t["inputs"]])
                prog.advance(tid)
            return results  # type: ignore[return-value]
        from distributed import as_completed

        with dask_client(scheduler, workers) as client:
            # Each task carries its file maps: scattered data lives only on the workers that hold it (a
            # broadcast reaches the workers connected at that moment), and a killed holder loses it for good.
            futures = [
                client.submit(
                    run_task,
                    t,
                    files[t["submission"]],
                    files[t["inputs"]],
                    key=t["key"],
                    pure=False,
                    retries=retries,
                )
                for t in tasks
            ]
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                results[index[fut.key]] = fut.result()
                prog.advance(tid)
    return results  # type: ignore[return-value]


# the plan and the client's writing ------------------------------------------------------------------------


def evaluate_board(
    release: str | os.PathLike,
    submissions: Sequence[str | os.PathLike],
    work: str | os.PathLike,
    *,
    runs: int = 3,
    per_template: int = 4,
    research: Sequence[str] = (),
    budget: Budget = Budget(),
    scheduler: str | None = None,
    workers: int = 1,
    mechanism: str | None = None,
    bootstrap_n: int = 2000,
    quiet: bool = False,
) -> dict[str, Any]:
    """Evaluate every submission ``runs`` times on a frozen ``release``; write and return ``evaluation.json``.

    Raises
    ------
    InputError
        If the release was never frozen or its frozen parts changed (:func:`icl.freeze.check_release`), or a
        submission cannot be entered (:func:`entries`).

    """
    from icl.freeze import check_release
    from icl.io import prepare_output_dir

    freeze = check_release(release)
    if not freeze["frozen"]:
        raise InputError(
            "a board is evaluated on a frozen release: run `icl release-freeze RELEASE` first",
            str(release),
            "freeze.json",
        )
    track = release_track(release)
    subs = entries(submissions, research)
    work = prepare_output_dir(work)
    files: dict[str, dict[str, tuple]] = {}
    if track == "pro":
        from icl.pro.evaluate import SAMPLING_SET, build_inputs, input_sets, mark_sampling, select_instances

        ids = select_instances(release, per_template)
        sets = input_sets(ids, sampling=True)
        folders = build_inputs(release, sets, work / "inputs")
        if SAMPLING_SET in folders:
            mark_sampling(folders[SAMPLING_SET], release)
        for name, folder in folders.items():
            files[f"input:{name}"] = pack_tree(folder)
    else:
        ids, sets = [], {HALO_SET: []}
        files[f"input:{HALO_SET}"] = pack_tree(Path(release) / "public")
    tasks = []
    for e in subs:
        files[f"submission:{e.name}"] = pack_tree(e.path)
        b = budget_for(e.board, budget)
        for k in range(runs):
            for s in sets:
                tasks.append(
                    {
                        "key": f"{e.name}/run{k}/{s}",
                        "submission": f"submission:{e.name}",
                        "inputs": f"input:{s}",
                        "frozen_sha256": e.frozen_sha256,
                        "track": e.track,
                        "budget": b.to_dict(),
                        "mechanism": mechanism,
                        "name": e.name,
                        "run": k,
                        "set": s,
                    }
                )
    t0 = time.time()
    results = execute(tasks, files, scheduler=scheduler, workers=workers, quiet=quiet)
    wall = time.time() - t0
    for t, r in zip(tasks, results, strict=True):
        d = work / "runs" / t["name"] / f"run{t['run']}"
        unpack_tree(r["output"], d / t["set"], readable=False) if r["output"] else (d / t["set"]).mkdir(
            parents=True
        )
        unpack_tree(r["logs"], d / "logs" / t["set"], readable=False)
    by_key = {t["key"]: r for t, r in zip(tasks, results, strict=True)}
    for e in subs:
        for k in range(runs):
            d = work / "runs" / e.name / f"run{k}"
            if track == "pro":
                from icl.pro.evaluate import set_row, write_sets

                rows = [
                    set_row(d, s, ids, by_key[f"{e.name}/run{k}/{s}"]["record"]) for s, ids in sets.items()
                ]
                write_sets(d, e.path, e.frozen_sha256, rows, release)
            else:
                write_json(
                    d / "run.json",
                    sign({"set": HALO_SET, "record": by_key[f"{e.name}/run{k}/{HALO_SET}"]["record"]}),
                )
    doc = {
        "format": FORMAT,
        "release": str(Path(release).resolve()),
        "track": track,
        "freeze": freeze,
        "runs": runs,
        "per_template": per_template if track == "pro" else None,
        "instances": ids,
        "sets": {s: list(v) for s, v in sets.items()},
        "budget": {b: budget_for(b, budget).to_dict() for b in BOARDS},
        "scheduler": scheduler or "serial",
        "workers": workers if scheduler else 1,
        "wall_s": wall,
        "submissions": [
            {
                "name": e.name,
                "board": e.board,
                "track": e.track,
                "frozen_sha256": e.frozen_sha256,
                "path": str(e.path.resolve()),
            }
            for e in subs
        ],
        "tasks": [
            {"key": t["key"], "worker": r["worker"], "ok": r["record"].get("ok")}
            for t, r in zip(tasks, results, strict=True)
        ],
    }
    write_json(work / "evaluation.json", doc)
    from icl.board.rows import score_evaluation

    score_evaluation(work, bootstrap_n=bootstrap_n)
    return doc

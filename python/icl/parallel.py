"""Run independent tasks serially, on a local process pool, or on a dask.distributed cluster.

Results come back in task order whatever the execution order, and every task's arithmetic is the
same in each mode (the C++ kernels split work into fixed blocks), so outputs are bit-identical
between serial, pooled and cluster runs. Tasks return data; the caller writes files, so a cluster
need not share a file system with the client.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")


def _progress(description: str, total: int, disable: bool) -> Progress:
    prog = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=disable,
        transient=False,
    )
    prog.add_task(description, total=total)
    return prog


def _one_thread() -> None:
    """Pool workers share the cores: one kernel thread each (results do not depend on it)."""
    from icl._core_loader import core

    core.set_num_threads(1)


def run_tasks(
    fn: Callable[[Any], T],
    tasks: Sequence[Any],
    *,
    scheduler: str | None = None,
    workers: int = 1,
    description: str = "tasks",
    quiet: bool = False,
) -> list[T]:
    """Apply ``fn`` to every task and return the results in task order.

    Parameters
    ----------
    fn : callable
        A module-level (picklable) function of one task.
    tasks : sequence
        Picklable task descriptions.
    scheduler : str, optional
        Address of a dask.distributed scheduler (``tcp://host:8786``) or ``"local"`` for a
        ``LocalCluster`` of ``workers`` processes. ``None`` runs in this process (``workers == 1``)
        or on a local process pool of ``workers`` processes.
    workers : int
        Size of the local pool or cluster.
    description : str
        Label of the progress bar.
    quiet : bool
        Hide the progress bar.

    """
    results: list[Any] = [None] * len(tasks)
    with _progress(description, len(tasks), quiet) as prog:
        tid = prog.task_ids[0]
        if scheduler is None and workers <= 1:
            for i, task in enumerate(tasks):
                results[i] = fn(task)
                prog.advance(tid)
            return results
        if scheduler is None:
            ctx = multiprocessing.get_context("spawn")  # no fork of a threaded parent
            with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_one_thread) as pool:
                futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
                for fut in cf.as_completed(futures):
                    results[futures[fut]] = fut.result()
                    prog.advance(tid)
            return results
        from distributed import as_completed

        with dask_client(scheduler, workers) as client:
            futures = client.map(fn, tasks, pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                results[index[fut.key]] = fut.result()
                prog.advance(tid)
    return results


@contextlib.contextmanager
def dask_client(scheduler: str, workers: int) -> Iterator[Any]:
    """A dask.distributed client of ``scheduler`` (an address, or ``"local"`` for a ``LocalCluster``).

    A Nanny writes its workers' variables (``OMP_NUM_THREADS=1``...) into this process's environment
    before spawning them and never restores them; the caller's environment is restored on exit.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise click.UsageError("--scheduler needs dask.distributed: pip install 'dask[distributed]'") from exc
    environ = dict(os.environ)
    cluster = (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        if scheduler == "local"
        else None
    )
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            yield client
    finally:
        if cluster is not None:
            cluster.close()
        os.environ.clear()
        os.environ.update(environ)


def scheduler_options(f: Callable) -> Callable:
    """Click options ``--scheduler`` and ``--workers`` shared by every generate command."""
    f = click.option(
        "--workers",
        type=click.IntRange(1, 256),
        default=1,
        show_default=True,
        help="Local processes (or LocalCluster workers with --scheduler local).",
    )(f)
    f = click.option(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="dask.distributed scheduler address, or 'local' for a LocalCluster.",
    )(f)
    return f

"""Where a sweep's cells run: a local process pool or submitit (Slurm job arrays, or its local
executor). A sweep is one unit of work: stopped by
Ctrl-C or SIGTERM it cancels what has not started and ends its workers; killed outright
(``kill -9``), each local worker ends itself within :data:`guard.WATCH_EVERY` seconds -- one
still starting included: it watches the sweep before its heavy imports and checks again before
it claims a cell (:mod:`analyses.sweep.guard`) -- so none trains on or holds its cell's lock,
and a rerun resumes every unfinished cell."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..kit.devices import worker_threads
from ..kit.errors import ExperimentError
from ..kit.slurm_options import cancel_job
from .devices import Slot
from .guard import run_job, start_pool_worker, this_sweep


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM stops the sweep as Ctrl-C does (KeyboardInterrupt: workers ended or jobs
    cancelled, exit status 130), not in the middle of nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def local_runs(jobs: Sequence[tuple[Any, Path]], workers: int,
               slots: Sequence[Slot] | None = None) -> Iterator[tuple[Any, Callable]]:
    """Cells on ``workers`` local processes, worker *i* pinned to ``slots[i]`` (its device;
    none: every worker on the cells' own ``--device``), each running one cell at a time: the
    next cell goes to the first worker free. Stopped (Ctrl-C, SIGTERM, an error), the sweep
    cancels what has not started and terminates the workers, so none trains on."""
    pinned: list[Slot | None] = list(slots[:workers]) if slots else [None] * workers
    threads = worker_threads(len(pinned))

    def pool(slot: Slot | None) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                                   initializer=start_pool_worker,
                                   initargs=(threads, this_sweep(), slot))

    pools = [pool(slot) for slot in pinned]
    queue = deque(jobs)
    running: dict[Future, tuple[Any, int]] = {}

    def submit(i: int) -> None:
        cell, path = queue.popleft()
        args = (cell.train.to_json(), str(path), cell.evals, this_sweep(), pinned[i])
        try:
            fut = pools[i].submit(run_job, *args)
        except BrokenProcessPool:  # its worker died (killed, out of memory): a fresh one
            pools[i].shutdown(wait=False)
            pools[i] = pool(pinned[i])
            fut = pools[i].submit(run_job, *args)
        running[fut] = (cell, i)

    try:
        for i in range(min(len(pools), len(queue))):
            submit(i)
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                cell, i = running.pop(fut)
                if queue:  # this worker's device is free: its next cell starts now
                    submit(i)
                yield cell, fut.result
    except BaseException:
        for p in pools:
            procs = list(getattr(p, "_processes", {}).values())  # stdlib keeps them here
            p.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
        raise
    for p in pools:
        p.shutdown()


def submit_cells(ex: Any, jobs: Sequence[tuple[Any, Path]], slots: Sequence[Slot] | None,
                 given: bool) -> list[Any]:
    """Submit one job per cell (one job array) to ``ex``. Under submitit's local executor job
    *j* is pinned to ``slots[j % len(slots)]`` (submitit would show every job the same
    GPUs); it starts every job at once, so more cells than devices share them. On Slurm each
    job trains on the GPUs Slurm gives it (``--gpus-per-node``): ``--devices`` (``given``)
    names this machine's and is refused there."""
    local = getattr(ex, "cluster", None) == "local"
    if given and not local:
        raise ExperimentError("--devices names this machine's devices; on Slurm each job "
                              "trains on the GPUs it is given: drop --devices, give "
                              "--gpus-per-node")
    pins = [slots[j % len(slots)] if slots and local else None for j in range(len(jobs))]
    return ex.map_array(run_job, [c.train.to_json() for c, _ in jobs],
                        [str(p) for _, p in jobs], [c.evals for c, _ in jobs],
                        [this_sweep()] * len(jobs), pins)


def submitit_runs(jobs: Sequence[tuple[Any, Path]], ex: Any, slots: Sequence[Slot] | None,
                  given: bool) -> Iterator[tuple[Any, Callable]]:
    """Cells as submitit jobs (:func:`submit_cells`), their results in the grid's order;
    stopped, the sweep cancels every job."""
    submitted = submit_cells(ex, jobs, slots, given)
    try:
        for (cell, _), job in zip(jobs, submitted, strict=True):
            yield cell, job.result
    except BaseException:  # stopped: cancel every job (a local one also ends with the sweep)
        for job in submitted:
            with contextlib.suppress(Exception):
                cancel_job(job)
        raise

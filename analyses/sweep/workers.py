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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ..kit.errors import ExperimentError
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


def local_runs(jobs: Sequence[tuple[Any, Path]], workers: int) -> Iterator[tuple[Any, Callable]]:
    """Cells in a process pool; stopped (Ctrl-C, SIGTERM, an error), the sweep cancels what has
    not started and terminates the workers, so none trains on."""
    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"),
                               initializer=start_pool_worker, initargs=(workers, this_sweep()))
    try:
        futs: dict[Future, Any] = {pool.submit(run_job, c.train.to_json(), str(p), c.evals,
                                                this_sweep()): c for c, p in jobs}
        for f in as_completed(futs):
            yield futs[f], f.result
    except BaseException:
        workers_now = list(getattr(pool, "_processes", {}).values())  # stdlib keeps them here
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers_now:
            proc.terminate()
        raise
    pool.shutdown()


def submitit_runs(jobs: Sequence[tuple[Any, Path]], workers: int, folder: Path,
              ) -> Iterator[tuple[Any, Callable]]:
    try:
        import submitit
    except ImportError:
        raise ExperimentError("the submitit backend needs submitit: pip install submitit") from None
    ex = submitit.AutoExecutor(folder=folder)
    ex.update_parameters(timeout_min=24 * 60, slurm_array_parallelism=workers)
    submitted = ex.map_array(run_job, [c.train.to_json() for c, _ in jobs],
                             [str(p) for _, p in jobs], [c.evals for c, _ in jobs],
                             [this_sweep()] * len(jobs))
    try:
        for (cell, _), job in zip(jobs, submitted, strict=True):
            yield cell, job.result
    except BaseException:  # stopped: cancel every job (a local one also ends with the sweep)
        for job in submitted:
            with contextlib.suppress(Exception):
                _cancel(job)
        raise


def _cancel(job: Any) -> None:
    """Cancel a submitit job. A local one's controller is sent SIGTERM, which it forwards to
    the job's process (:func:`guard.run_job` lets SIGTERM end it) and then exits quietly;
    ``job.cancel`` sends it SIGINT, whose KeyboardInterrupt traceback lands on the sweep's
    stderr after its one-line message. A Slurm job is cancelled (``scancel``)."""
    controller = getattr(job, "_process", None)  # submitit keeps a local job's Popen here
    if controller is not None:
        controller.send_signal(signal.SIGTERM)
    else:
        job.cancel(check=False)

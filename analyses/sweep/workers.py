"""Where a sweep's cells run: a local process pool or submitit (Slurm job arrays, or its local
executor), and what a worker does with one cell. A sweep is one unit of work: stopped by
Ctrl-C or SIGTERM it cancels what has not started and ends its workers; killed outright
(``kill -9``), each local worker ends itself within :data:`WATCH_EVERY` seconds, so none trains
on or holds its cell's lock, and a rerun resumes every unfinished cell."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ...windtunnel.training import TrainConfig
from ..kit.errors import ExperimentError
from .evals import evaluate_overrides

#: a cell's row: the final evaluation's metrics (bits, except accuracy)
METRICS = ("entropy_mae_bits", "entropy_mae_curve_bits", "kl_bits", "tvd", "accuracy",
           "params", "steps", "wall_s")


def _threads(workers: int) -> None:
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


#: seconds between a worker's checks that the sweep which started it is still there
WATCH_EVERY = 0.5


def _exit_with(sweep: tuple[str, int]) -> None:
    """End this worker (as SIGTERM would) once the sweep ``(host, pid)`` that started it is
    gone: a sweep killed (even with ``kill -9``) leaves no worker training on and holding its
    cell's lock. A worker on another host (a Slurm node) is not watched: the sweep's own
    Ctrl-C or SIGTERM cancels it."""
    host, sweep_pid = sweep
    if host != socket.gethostname():
        return

    def watch() -> None:
        while True:
            time.sleep(WATCH_EVERY)
            try:
                os.kill(sweep_pid, 0)
            except ProcessLookupError:
                os._exit(143)
            except PermissionError:  # alive, another user's: cannot be ours
                pass

    threading.Thread(target=watch, name="sweep-watch", daemon=True).start()


def run_cell(train_cfg: dict[str, Any], out: str, evals: tuple[dict[str, Any], ...] = (),
             sweep: tuple[str, int] | None = None) -> dict[str, Any]:
    """Train (or resume) one cell in ``out``, then run its extra evaluations; the row of its
    metrics. Runs in a worker, which ends itself when the ``sweep`` (host, pid) is gone."""
    from ...windtunnel.training import train

    if sweep is not None:
        _exit_with(sweep)
    cfg = TrainConfig.from_json(train_cfg)
    res = train(cfg, out, progress=False)
    assert res.report is not None
    rep = res.report.to_dict()
    extra = evaluate_overrides(Path(out), cfg.task, cfg.settings(cfg.validate())["task_params"],
                               cfg.seed, cfg.final_eval_size, list(evals))
    return {**{k: rep[k] for k in METRICS if k in rep}, "params": res.params,
            "steps": res.steps_done, "wall_s": res.wall_s, "stop_reason": res.stop_reason,
            **extra}




def _this_sweep() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()


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
                               initializer=_threads, initargs=(workers,))
    try:
        futs: dict[Future, Any] = {pool.submit(run_cell, c.train.to_json(), str(p), c.evals,
                                                _this_sweep()): c for c, p in jobs}
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
    submitted = ex.map_array(run_cell, [c.train.to_json() for c, _ in jobs],
                             [str(p) for _, p in jobs], [c.evals for c, _ in jobs],
                             [_this_sweep()] * len(jobs))
    try:
        for (cell, _), job in zip(jobs, submitted, strict=True):
            yield cell, job.result
    except BaseException:  # stopped: cancel every job (a local one also ends with the sweep)
        for job in submitted:
            with contextlib.suppress(Exception):
                job.cancel(check=False)
        raise

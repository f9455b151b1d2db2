"""How a sweep's worker keeps to its sweep, from its first moment: the module a worker imports
before anything heavy (the standard library, bayesgeom's torch-free device names, and tqdm as
it starts; no torch), so that a sweep killed while its workers are still starting (``kill -9``
during their seconds of importing torch) leaves none to claim a cell afterwards.

The first thing a worker (a local pool process, or a submitit job's process) does is
:func:`start`: it watches the sweep ``(host, pid)`` that started it -- checked at once, then
every :data:`WATCH_EVERY` seconds, ending the worker (exit 143, as SIGTERM would) once the sweep is
gone -- and only then imports torch. Just before it claims a cell's folder it checks again
(:func:`leave_if_gone`), so a worker whose sweep died while it was starting never claims one,
however its watch was scheduled. A worker on another host (a Slurm node) is not watched: the
sweep's own Ctrl-C or SIGTERM cancels its jobs.

A worker's progress bars take no lock across processes (:func:`_no_process_lock`): tqdm's is a
named semaphore, which a worker ended by a signal leaves behind for the multiprocessing
resource tracker to warn about on the sweep's stderr after its one-line message.

Example:
    >>> sweep_gone(this_sweep())
    False
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

from ...records.manifest import physical_device
from .devices import Slot

#: seconds between a worker's checks that the sweep which started it is still there
WATCH_EVERY = 0.5

#: a test hook: a worker that finds this variable set writes its pid to the file it names once
#: its watch is on, then waits (before its heavy imports) while that file exists, so that a
#: test can kill its sweep inside the start-up window without racing it
HOLD_ENV = "BAYESGEOM_SWEEP_WORKER_HOLD"

#: the exit status of a worker whose sweep is gone (SIGTERM's)
GONE = 143

_started = False


def this_sweep() -> tuple[str, int]:
    """The sweep running here, as its workers name it: (host, pid)."""
    return socket.gethostname(), os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's (its pid reused): not our sweep
        return False
    try:  # a killed sweep not yet reaped by its parent is a zombie: dead all the same
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):  # no /proc (macOS): the signal check is all there is
        return True
    return state not in ("Z", "X")


def sweep_gone(sweep: tuple[str, int]) -> bool:
    """Whether the sweep ``(host, pid)`` is known to be gone (one on another host never is)."""
    host, pid = sweep
    return host == socket.gethostname() and not _alive(pid)


def leave_if_gone(sweep: tuple[str, int] | None) -> None:
    """End this worker at once (exit 143) if its sweep is gone: called just before a cell is
    claimed, and by the watch."""
    if sweep is not None and sweep_gone(sweep):
        os._exit(GONE)


def watch(sweep: tuple[str, int]) -> None:
    """Check the sweep now, then every :data:`WATCH_EVERY` seconds on a daemon thread, ending
    this worker once it is gone."""
    leave_if_gone(sweep)
    if sweep[0] != socket.gethostname():
        return

    def check() -> None:
        while True:
            time.sleep(WATCH_EVERY)
            leave_if_gone(sweep)

    threading.Thread(target=check, name="sweep-watch", daemon=True).start()


def _no_process_lock() -> None:
    """tqdm's bars here take its thread lock only: its lock across processes is a named
    semaphore registered with the resource tracker, which warns about it when a worker is
    ended by a signal (a stopped sweep's). A worker draws no bars (``progress=False``)."""
    from tqdm.std import TqdmDefaultWriteLock

    if not hasattr(TqdmDefaultWriteLock, "mp_lock"):  # not yet made: tqdm's own "none" state
        TqdmDefaultWriteLock.mp_lock = None


def _hold() -> None:
    """The test hook of :data:`HOLD_ENV`."""
    hold = os.environ.get(HOLD_ENV)
    if not hold:
        return
    path = Path(hold)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(str(os.getpid()))
    tmp.replace(path)
    while path.exists():
        time.sleep(0.05)


def start(sweep: tuple[str, int] | None) -> None:
    """What a worker does first, before any heavy import (module doc); once per process (a
    pool worker runs many cells)."""
    global _started
    if _started:
        return
    _started = True
    _no_process_lock()
    if sweep is not None:
        watch(sweep)
    _hold()


def start_pool_worker(threads: int, sweep: tuple[str, int], slot: Slot | None = None) -> None:
    """A local pool process's initializer: :func:`start`, its device pinned (``slot``: it sees
    only that GPU, set before torch is imported), then ``threads`` torch threads."""
    start(sweep)
    if slot is not None:
        slot.pin()
    import torch

    torch.set_num_threads(threads)


def run_job(train_cfg: dict[str, Any], out: str, evals: tuple[dict[str, Any], ...] = (),
            sweep: tuple[str, int] | None = None, slot: Slot | None = None) -> dict[str, Any]:
    """A worker's one cell (a pool's call, a submitit job): :func:`start`, its device pinned
    (``slot``: it sees that one GPU and trains on ``cuda:0``, or on the CPU), then
    :func:`analyses.sweep.cell.run_cell`, imported only now (unpickling this function imports
    no torch), after one more check that the sweep is there: its cell is claimed next. Under
    submitit's local executor SIGTERM ends the job's process again (submitit has it ignore
    SIGTERM), so that the sweep stops a job by sending its controller SIGTERM, which forwards
    it. The row says where the cell trained: ``device`` as the machine names it (``cuda:3``,
    :func:`records.physical_device`), ``slot`` its worker's place in ``--devices``."""
    if os.environ.get("SUBMITIT_EXECUTOR") == "local" and \
            threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    start(sweep)
    if slot is not None:
        slot.pin()
        train_cfg = {**train_cfg, "device": slot.train_device}
    from .cell import run_cell

    leave_if_gone(sweep)  # its sweep died while this worker started: claim nothing
    row = run_cell(train_cfg, out, evals)
    return {**row, "device": physical_device(train_cfg.get("device")),
            "slot": None if slot is None else slot.index}

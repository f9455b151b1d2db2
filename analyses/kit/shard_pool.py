"""Worker processes for data-parallel runs: one model copy per worker (one per device), each
running whole shards of a stage's prompts and writing each shard's result as a finished part.

A :class:`ShardPool` starts ``workers`` spawned processes (never forked: torch and CUDA do not
survive a fork) the first time it has work; worker *i* takes device *i* of ``devices`` (or
the default device) and ``cpu_count // workers`` torch threads (at most ``OMP_NUM_THREADS``:
:func:`analyses.kit.devices.worker_threads`), opens its model once
(:func:`analyses.kit.models.open_model`, or the random-initialisation twin of it) and keeps it
for every later shard. A :class:`Job` names a function by ``"module:function"`` (imported in
the worker), called as ``fn(model, **kwargs)``; it returns arrays (``.npy``) and activation
stores (one safetensors file each, :func:`interp.store_parts.save_rows`) that the worker writes
atomically, with the shard's device, time and model weights digest, as the part
``<stage>.part-<k>-of-<n>`` (:class:`records.Parts`: the SHA-256 of every file, checked on
reuse). :meth:`ShardPool.run` submits only the shards whose part is not finished with the
same fingerprint, so a rerun after a killed worker computes that worker's shards alone.

A worker whose parent is gone (killed outright) ends itself within :data:`WATCH_EVERY`
seconds; a stopped run (Ctrl-C, an error, a worker that died) terminates the others.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...records import FaultError, Parts, atomic_write_bytes, part_name, write_json
from ...records.progress import tqdm
from .devices import worker_threads
from .shard_options import ShardRecord

#: a test hook: a folder; a worker about to run the part P waits while ``DIR/P.hold`` exists,
#: having written its pid to ``DIR/P.pid``, so that a test can kill it there without racing it
HOLD_ENV = "BAYESGEOM_SHARD_HOLD"
#: seconds between a worker's checks that the run which started it is still there
WATCH_EVERY = 0.5


@dataclass(frozen=True)
class ModelSpec:
    """The model a worker opens: ``open_model(spec, dtype=, allow_pickle=, revision=,
    backend=)`` on its device, or (``twin_seed`` set) that model's random-initialisation twin
    (:func:`interp.random_init_twin`, built on the CPU from the seed, so the same on every
    device)."""

    spec: str | None
    dtype: str | None = None
    allow_pickle: bool = False
    revision: str | None = None
    backend: str = "hf"
    twin_seed: int | None = None


@dataclass(frozen=True)
class Job:
    """One shard of a stage: ``fn(model, **kwargs)`` on the items ``bounds`` (lo, hi) of
    shard ``k`` of ``n_shards``; ``fingerprint``: its part's (:func:`records.part_fingerprint`);
    ``weights``: the SHA-256 the worker's model must have (None: not checked)."""

    stage: str
    k: int
    n_shards: int
    bounds: tuple[int, int]
    fingerprint: str
    fn: str
    model: ModelSpec
    kwargs: dict[str, Any] = field(default_factory=dict)
    weights: str | None = None

    @property
    def name(self) -> str:
        return part_name(self.stage, self.k, self.n_shards)


class ShardPool:
    """``workers`` spawned processes, worker *i* on ``devices[i]`` (module doc). Use as a
    context manager; the processes start with the first :meth:`run` that has work."""

    def __init__(self, workers: int, devices: Sequence[str] = (), progress: bool = False):
        self.workers, self.devices, self.progress = workers, tuple(devices), progress
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> ShardPool:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.close(stop=exc is not None)

    def close(self, stop: bool = False) -> None:
        """End the workers (``stop``: at once, cancelling what has not started)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=not stop, cancel_futures=stop)
        if stop:
            for p in procs:
                p.terminate()

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            ctx = mp.get_context("spawn")
            queue = ctx.Queue()
            for i in range(self.workers):
                queue.put(self.devices[i] if self.devices else None)
            threads = worker_threads(self.workers)
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx,
                                             initializer=_start_worker,
                                             initargs=(queue, threads, os.getpid()))
        return self._pool

    def run(self, root: Path, jobs: Sequence[Job]) -> tuple[list[dict[str, Any]],
                                                              list[ShardRecord]]:
        """Each job's part under ``root`` (reused where finished with its fingerprint, else
        computed by a worker), in job order, with the record of who ran it. A worker that
        fails or dies stops the run with one line; the finished parts stay for the rerun."""
        parts = Parts(root)
        done: dict[int, dict[str, Any]] = {}
        records: dict[int, ShardRecord] = {}
        todo = []
        for i, job in enumerate(jobs):
            got = _part(parts, job)
            if got is None:
                todo.append(i)
            else:
                done[i] = got
                records[i] = _record(job, got, reused=True)
        bar = tqdm(total=len(jobs), initial=len(done), unit="shard",
                   desc=jobs[0].stage if jobs else "shards", disable=not self.progress)
        try:
            for i in self._compute(root, jobs, todo):
                job = jobs[i]
                got = _part(parts, job)
                if got is None:
                    raise FaultError(f"{root / job.name}: the part a worker wrote fails "
                                     "its checksum; rerun the same command")
                done[i], records[i] = got, _record(job, got, reused=False)
                bar.update(1)
        except BaseException:
            self.close(stop=True)
            raise
        finally:
            bar.close()
        for i, job in enumerate(jobs):
            if job.weights is not None and done[i]["meta.json"].get("weights") != job.weights:
                raise FaultError(f"the worker of {job.stage} shard {job.k + 1} opened "
                                 f"{job.model.spec or 'the default model'} with other weights "
                                 "than this run's model; run with --workers 1, or pass the "
                                 "model by a name or folder the workers can open")
        return [done[i] for i in range(len(jobs))], [records[i] for i in range(len(jobs))]

    def _compute(self, root: Path, jobs: Sequence[Job], todo: list[int]) -> Iterator[int]:
        """Run the jobs ``todo`` (indices into ``jobs``) on the workers; yields each index as
        its part is written."""
        if not todo:
            return
        pool = self._start()
        futs: dict[Future, int] = {pool.submit(_work, jobs[i], str(root)): i for i in todo}
        for f in as_completed(futs):
            i = futs[f]
            try:
                f.result()
            except BrokenProcessPool:
                raise FaultError(
                    f"a worker died while running {jobs[i].stage} shard {jobs[i].k + 1} of "
                    f"{jobs[i].n_shards}; rerun the same command: finished shards are "
                    "reused, only the others run") from None
            yield i


def _part(parts: Parts, job: Job) -> dict[str, Any] | None:
    """The finished part of ``job`` keyed by what follows its name (``meta.json``,
    ``entropy.npy``, ...), or None."""
    got = parts.get(job.name, job.fingerprint)
    if got is None:
        return None
    return {k.removeprefix(f"{job.name}."): v for k, v in got.items()}


def _record(job: Job, got: dict[str, Any], reused: bool) -> ShardRecord:
    meta = got["meta.json"]
    return ShardRecord(job.stage, job.k, job.n_shards, list(job.bounds), str(meta["device"]),
                       float(meta["seconds"]), reused)


# ---------------------------------------------------------------- the worker side
_DEVICE: str | None = None
_MODEL: dict[str, Any] = {}


def _start_worker(queue: Any, threads: int, parent: int) -> None:
    """A worker's initializer: its device, its torch threads, the watch on its parent."""
    global _DEVICE
    _DEVICE = queue.get()
    from tqdm.std import TqdmDefaultWriteLock

    if not hasattr(TqdmDefaultWriteLock, "mp_lock"):  # no semaphore across processes
        TqdmDefaultWriteLock.mp_lock = None

    def watch() -> None:
        while True:
            time.sleep(WATCH_EVERY)
            if os.getppid() != parent:  # the run is gone: end, as SIGTERM would
                os._exit(143)

    threading.Thread(target=watch, name="shard-watch", daemon=True).start()
    import torch

    torch.set_num_threads(threads)


def array_work(job: Job, root: str, threads: int | None) -> str:
    """One job of a submitit array: ``job``'s part, on the job's first GPU where it has one
    (Slurm's ``--gpus-per-node``), else the CPU, with ``threads`` torch threads (None: as
    many as the job's CPUs)."""
    global _DEVICE
    import torch

    _DEVICE = "cuda" if torch.cuda.is_available() else None
    affinity = getattr(os, "sched_getaffinity", None)  # Linux: the cores Slurm gave the job
    cpus = threads or (len(affinity(0)) if affinity else os.cpu_count() or 1)
    torch.set_num_threads(max(1, cpus))
    return _work(job, root)


def _hold(name: str) -> None:
    """The test hook of :data:`HOLD_ENV`."""
    folder = os.environ.get(HOLD_ENV)
    if not folder or not (Path(folder) / f"{name}.hold").exists():
        return
    tmp = Path(folder) / f".{name}.pid.tmp"
    tmp.write_text(str(os.getpid()))
    tmp.replace(Path(folder) / f"{name}.pid")
    while (Path(folder) / f"{name}.hold").exists():
        time.sleep(0.05)


def _model(spec: ModelSpec) -> tuple[Any, str | None]:
    """The worker's model for ``spec`` (opened once, kept; a twin replaces the model it is
    built from, whose weights are freed) and its weights digest (None for a twin)."""
    if _MODEL.get("spec") == spec:
        return _MODEL["model"], _MODEL["weights"]
    from ... import interp
    from .models import open_model

    base = replace_twin(spec)
    if _MODEL.get("spec") == base and spec.twin_seed is not None:
        model = interp.random_init_twin(_MODEL["model"], seed=spec.twin_seed,
                                        release_model=True)
    else:
        _MODEL.clear()
        model = open_model(base.spec, dtype=base.dtype, device=_DEVICE, revision=base.revision,
                           backend=base.backend, allow_pickle=base.allow_pickle)
        if spec.twin_seed is not None:
            model = interp.random_init_twin(model, seed=spec.twin_seed, release_model=True)
    weights = model.weights_digest() if spec.twin_seed is None else None
    _MODEL.update(spec=spec, model=model, weights=weights)
    return model, weights


def replace_twin(spec: ModelSpec) -> ModelSpec:
    """The spec of the trained model ``spec``'s twin is built from."""
    return ModelSpec(spec.spec, spec.dtype, spec.allow_pickle, spec.revision, spec.backend)


def _work(job: Job, root: str) -> str:
    """Run one job in a worker and write its part; returns the part's name."""
    _hold(job.name)
    t0 = time.perf_counter()
    model, weights = _model(job.model)
    module, _, name = job.fn.partition(":")
    fn = getattr(__import__(module, fromlist=[name]), name)
    payload = fn(model, **job.kwargs)
    from ...interp import ActivationStore
    from ...interp.store_parts import save_rows

    files = []
    for key, value in payload.items():
        stem = Path(root) / f"{job.name}.{key}"
        if isinstance(value, ActivationStore):
            files.append(save_rows(value, stem.with_name(stem.name + ".safetensors")))
        else:
            buf = io.BytesIO()
            np.save(buf, np.asarray(value), allow_pickle=False)
            files.append(atomic_write_bytes(stem.with_name(stem.name + ".npy"),
                                            buf.getvalue()))
    device = str(next(model.hf.parameters()).device)
    meta = {"device": device, "seconds": round(time.perf_counter() - t0, 3),
            "weights": weights, "pid": os.getpid()}
    files.append(write_json(Path(root) / f"{job.name}.meta.json", meta))
    Parts(root).mark(job.name, job.fingerprint, files)
    print(f"bayesgeom: {job.stage} shard {job.k + 1} of {job.n_shards} done on {device}",
          file=sys.stderr, flush=True)
    return job.name


@contextlib.contextmanager
def maybe_pool(workers: int, devices: Sequence[str], progress: bool,
               ) -> Iterator[ShardPool | None]:
    """A :class:`ShardPool` where the run is sharded (more than one worker, or pinned
    devices), else None (the run computes in this process, as it always has)."""
    if workers <= 1 and not devices:
        yield None
        return
    with ShardPool(workers, devices, progress) as pool:
        yield pool

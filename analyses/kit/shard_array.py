"""Shards as a submitit job array (``--launcher submitit``): one job per shard, each opening
its own copy of the model on the GPU Slurm gives it (``--gpus-per-node``) and writing its
shard's part exactly as a local worker does (:func:`analyses.kit.shard_pool.array_work`), so
the merge, the checksums and the reuse on a rerun are the local pool's. Without Slurm
(no ``srun`` on ``PATH``) submitit runs the jobs as local subprocesses.

A job that fails stops the run with one line naming the job and its log once the other jobs
of its array have ended (each an independent job that may as well finish its part), and the
rerun submits only the shards without a finished part. Stopped (Ctrl-C, SIGTERM), the run
cancels the jobs it submitted. A Slurm job the run never heard back from (the run killed
outright) finishes on its own, and a rerun reuses its part.

Example:
    >>> from types import SimpleNamespace
    >>> opts = SimpleNamespace(launcher="local", workers=1, devices=(), progress=False)
    >>> with shard_pool(opts, folder=None) as pool:
    ...     print(pool)
    None
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...records import FaultError
from .devices import worker_threads
from .shard_pool import Job, ShardPool, array_work, maybe_pool
from .slurm_options import cancel_job, submitit_executor, submitit_parameters

#: seconds between looks at the submitted jobs (submitit limits how often it asks Slurm)
POLL_S = 0.5


class ArrayPool(ShardPool):
    """:class:`ShardPool`'s contract with the shards as the jobs of one submitit array per
    :meth:`run` (``workers``: jobs at once, the array's parallelism; ``parameters``:
    :func:`analyses.kit.slurm_options.submitit_parameters`; submitit's scripts and logs go to
    ``folder``)."""

    def __init__(self, workers: int, parameters: dict[str, Any], folder: Path,
                 progress: bool = False):
        super().__init__(workers, (), progress)
        self.parameters, self.folder = parameters, Path(folder)
        self.submitted: list[Any] = []

    def close(self, stop: bool = False) -> None:
        jobs, self.submitted = self.submitted, []
        if stop:
            for job in jobs:
                with contextlib.suppress(Exception):
                    if not job.done():
                        cancel_job(job)

    def submit(self, root: Path, jobs: Sequence[Job]) -> list[Any]:
        """Submit ``jobs`` as one array (their parts to be written under ``root``); returns
        submitit's jobs, in order."""
        ex = submitit_executor(self.folder, self.parameters)
        local = getattr(ex, "cluster", None) == "local"
        threads = self.parameters.get("cpus_per_task") or (
            worker_threads(min(self.workers, len(jobs))) if local else None)
        self.submitted = ex.map_array(array_work, list(jobs), [str(root)] * len(jobs),
                                      [threads] * len(jobs))
        return self.submitted

    def _compute(self, root: Path, jobs: Sequence[Job], todo: list[int]) -> Iterator[int]:
        if not todo:
            return
        submitted = self.submit(root, [jobs[i] for i in todo])
        pending = dict(enumerate(submitted))
        failed: str | None = None
        while pending:
            finished = [j for j, job in pending.items() if job.done()]
            for j in finished:
                job, i = pending.pop(j), todo[j]
                try:
                    job.result()
                except Exception as e:  # submitit's FailedJobError, UncompletedJobError
                    lines = [x for x in str(e).strip().splitlines() if x.strip()]
                    why = lines[-1].strip() if lines else type(e).__name__
                    failed = failed or (
                        f"{jobs[i].stage} shard {jobs[i].k + 1} of {jobs[i].n_shards} failed "
                        f"as submitit job {job.job_id} ({why}); its log: "
                        f"{job.paths.stderr}; rerun the same command: finished shards are "
                        "reused, only the others run")
                    continue
                yield i
            if pending and not finished:
                time.sleep(POLL_S)
        if failed is not None:  # the other jobs ran to the end: their parts are kept
            raise FaultError(failed)


@contextlib.contextmanager
def shard_pool(opts: Any, folder: Path | None, progress: bool = False,
               ) -> Iterator[ShardPool | None]:
    """The pool a run's shards run on: a submitit array for ``opts.launcher == "submitit"``
    (its files under ``folder``), else worker processes here where the run is sharded
    (:func:`analyses.kit.shard_pool.maybe_pool`), else None (this process). ``opts``: a
    :class:`analyses.kit.shard_options.Sharded` config."""
    if opts.launcher == "submitit":
        assert folder is not None, "a submitit array needs a folder for its scripts and logs"
        with ArrayPool(opts.workers, submitit_parameters(opts, opts.workers), folder,
                       progress) as pool:
            yield pool
        return
    with maybe_pool(opts.workers, opts.devices, progress) as local:
        yield local

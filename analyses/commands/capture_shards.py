"""``bayesgeom capture --workers N [--devices d0,d1,...]``: one store captured by N worker
processes, each with its own copy of the model, then merged into the store one process writes.

The prompts are cut into the store's shards (``--shard-prompts``, else about 32 MiB of rows
each, at most ⌈prompts / N⌉ prompts), and the shards into N contiguous runs. Worker *k*
captures its run into ``OUT/parts/part-<k>-of-<N>`` (:func:`interp.capture` with
``part=(k, N)``: each shard file exactly the one-process capture's, resumable shard by shard),
and :func:`interp.store_parts.merge_parts` links the parts' shards into ``OUT`` once all are
finished, checking each against its SHA-256. A rerun after a killed worker resumes only that
worker's part (the finished parts are reused); a rerun of a finished sharded capture with the
same prompts, sites and model reuses it. The parent process loads no model.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...records import fingerprint, hold, part_fingerprint, read_json
from ..kit.parser import CLIError

#: the part name the workers' records use
STAGE = "capture"


def capture_part(model: Any, prompts: list, sites: list[str], positions: Any, out: str,
                 part: tuple[int, int], batch_size: int, prompts_per_shard: int | None,
                 store_dtype: str, seed: int) -> dict[str, Any]:
    """A worker's part: :func:`interp.capture` of its run of shards into its own folder."""
    from ...interp import capture

    capture(model, prompts, sites, positions, batch_size=batch_size, out=out,
            prompts_per_shard=prompts_per_shard, store_dtype=store_dtype, progress=False,
            seed=seed, part=tuple(part))  # type: ignore[arg-type]
    return {}


def check_sharding(o: Any, n_prompts: int) -> None:
    """``--workers``/``--devices`` against the prompts and ``--shard-prompts``: one line
    before anything loads."""
    from ..kit.shard_options import check_workers

    check_workers(o.workers, o.devices, n_prompts, "prompts", CLIError, o.launcher,
                  o.slurm_additional_parameters)
    if o.shard_prompts is not None and math.ceil(n_prompts / o.shard_prompts) < o.workers:
        raise CLIError(f"--shard-prompts {o.shard_prompts} makes "
                       f"{math.ceil(n_prompts / o.shard_prompts)} shard(s) of {n_prompts} "
                       f"prompts, fewer than --workers {o.workers}; lower --shard-prompts")


def _finished(out: Path, o: Any, key: dict[str, Any]) -> bool:
    """Whether ``out`` holds this sharded capture finished (reused as it is); another capture,
    or an unfinished one-process capture, there is refused in one line (``--restart`` starts
    over)."""
    from ...interp.activation_store import MANIFEST, ActivationStore, _clear_store

    if not (out / MANIFEST).is_file():
        return False
    if o.restart:
        _clear_store(out)
        return False
    manifest = read_json(out / MANIFEST, expect=dict)
    if manifest.get("sharded_capture") == key and manifest.get("complete"):
        ActivationStore.open(out)  # every shard present and whole
        return True
    raise CLIError(f"{out} holds another or an unfinished capture; choose another --out, or "
                   "pass --restart to replace it")


def run_sharded(o: Any, prompts: list[str], progress: bool) -> Any:
    """The sharded capture of the module doc; returns the merged :class:`ActivationStore`."""
    from ...interp import ActivationStore, check_device
    from ...interp.activation_store import check_store_dir
    from ...interp.errors import InterpError
    from ...interp.prompts import prompts_sha256
    from ...interp.store_parts import merge_parts, part_dir
    from ..kit.shard_array import shard_pool
    from ..kit.shard_pool import Job, ModelSpec

    check_store_dir(o.out)
    for d in (*o.devices, *([o.device] if o.device else [])):
        try:
            check_device(d)
        except InterpError as e:
            raise CLIError(f"--devices: {e}") from None
    if o.device is not None and o.devices:
        raise CLIError("give --devices (one per worker) or --device (all workers), not both")
    devices = o.devices or ((o.device,) * o.workers if o.device else ())
    out = Path(o.out)
    key = {"model": o.model, "revision": o.revision, "dtype": o.dtype, "backend": o.backend,
           "sites": list(o.sites), "positions": o.positions, "store_dtype": o.store_dtype,
           "shard_prompts": o.shard_prompts, "seed": o.seed, "workers": o.workers,
           "prompts_sha256": prompts_sha256([], prompts)}
    with hold(out):
        if _finished(out, o, key):
            print(f"bayesgeom: {out} holds this capture, finished; reusing it", file=sys.stderr)
            return ActivationStore.open(out)
        spec = ModelSpec(o.model, o.dtype, o.allow_pickle, o.revision, o.backend)
        fp = fingerprint(key)
        dirs = [part_dir(out, k, o.workers) for k in range(o.workers)]
        jobs = [Job(STAGE, k, o.workers, (k, k + 1), part_fingerprint(fp, k, (k, k + 1),
                                                                      o.workers),
                    f"{__name__}:capture_part", spec,
                    {"prompts": prompts, "sites": list(o.sites), "positions": o.positions,
                     "out": str(dirs[k]), "part": (k, o.workers), "batch_size": o.batch_size,
                     "prompts_per_shard": o.shard_prompts, "store_dtype": o.store_dtype,
                     "seed": o.seed})
                for k in range(o.workers)]
        with shard_pool(replace(o, devices=devices), dirs[0].parent / "submitit",
                        progress) as pool:
            assert pool is not None
            _, records = pool.run(dirs[0].parent, jobs)
        from dataclasses import asdict

        return merge_parts(out, dirs, extra={"sharded_capture": key,
                                             "workers": [asdict(r) for r in records]})

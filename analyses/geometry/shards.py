"""A geometry run's forward passes over worker processes (``--workers N``, ``--devices``): the
pool's entropy scores and every prompt set's captures (the model's, then its random-init
twin's) are cut into N contiguous shards of whole batches, each run by a worker holding its
own copy of the model (:class:`analyses.kit.shard_pool.ShardPool`) and kept as a finished part
under ``out/shards/``; the parts merge exactly (scores put back in prompt order, activation
rows concatenated, :func:`interp.store_parts.concat_stores`). Cuts fall on batch boundaries
of the order a one-process run batches in (scores: prompts by token length; captures: the
sampled set as it is, already sorted by length), so every forward pass reads the same
prompts with the same padding as with one worker, and the numbers agree to float rounding.
The numerics (PCA, bootstrap, probes) stay in this process, on the merged rows.

A rerun reuses every finished shard (each part's fingerprint: the model's weights digest,
the prompts, sites, batch size and seed, and its place in the plan); a killed worker's shard
is computed again alone.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ... import interp
from ...interp.store_parts import concat_stores, load_rows
from ...records import concat_rows, fingerprint, part_fingerprint, shard_bounds
from ..kit.shard_options import ShardRecord
from ..kit.shard_pool import Job, ModelSpec, ShardPool
from .entropy_sampler import next_token_entropy, token_lengths
from .pool import vocab_slice
from .sets import SetCapture, capture_rows

#: where a run keeps its shards' parts, under its ``out``
SHARDS_DIR = "shards"


def score_shard(model: interp.InterpModel, prompts: list, batch_size: int,
                ) -> dict[str, np.ndarray]:
    """A worker's shard of pool scores: next-token entropy (bits) [n] of ``prompts`` (already
    in the length order the whole pool is batched in)."""
    return {"entropy": next_token_entropy(model, prompts, batch_size, vocab_slice(model),
                                          progress=False)}


def capture_shard(model: interp.InterpModel, inputs: list, last: list[str], every: list[str],
                  batch_size: int, seed: int) -> dict[str, Any]:
    """A worker's shard of a set's captures: its final-token store and every-token store."""
    store, rows = capture_rows(model, inputs, last, every, batch_size=batch_size, seed=seed,
                               progress=False)
    return {"last": store, **({"every": rows} if rows is not None else {})}


class ShardedForwards:
    """The forward passes of one geometry run over ``pool``'s workers (module doc), each
    shard's part under ``out/shards``; ``records``: who ran each shard, in run order."""

    def __init__(self, pool: ShardPool, cfg: Any, model: interp.InterpModel, out: Path):
        self.pool, self.seed, self.batch_size = pool, int(cfg.seed), int(cfg.batch_size)
        self.spec = ModelSpec(None if cfg.model is None else str(cfg.model), cfg.dtype,
                              bool(cfg.allow_pickle))
        self.weights = model.weights_digest()
        self.root = Path(out) / SHARDS_DIR
        self.records: list[ShardRecord] = []

    def _run(self, stage: str, fp: str, n: int, unit: int, fn: str, spec: ModelSpec,
             weights: str | None, kwargs: Any) -> tuple[list[dict[str, Any]], list[Job]]:
        bounds = shard_bounds(n, self.pool.workers, unit)
        jobs = [Job(stage, k, len(bounds), b, part_fingerprint(fp, k, b, len(bounds)),
                    f"{__name__}:{fn}", spec, kwargs(*b), weights)
                for k, b in enumerate(bounds)]
        parts, records = self.pool.run(self.root, jobs)
        self.records += records
        return parts, jobs

    def entropy(self, model: interp.InterpModel, prompts: list, batch_size: int,
                fp: str) -> np.ndarray:
        """Pool scores [n] (a :class:`analyses.geometry.pool.PoolEntropy`)."""
        order = np.argsort(token_lengths(model, prompts), kind="stable")
        ordered = [prompts[i] for i in order]
        parts, jobs = self._run(
            "score", fingerprint("score", fp, self.weights, batch_size), len(prompts),
            batch_size, "score_shard", self.spec, self.weights,
            lambda lo, hi: {"prompts": ordered[lo:hi], "batch_size": batch_size})
        out = np.empty(len(prompts))
        out[order] = concat_rows([p["entropy.npy"] for p in parts], [j.bounds for j in jobs])
        return out

    def capture(self, twin_seed: int | None = None) -> SetCapture:
        """How a set is captured over the workers: by the model, or (``twin_seed``) by its
        random-initialisation twin, which each worker builds from the seed."""
        spec = self.spec if twin_seed is None else replace(self.spec, twin_seed=twin_seed)
        weights = self.weights if twin_seed is None else None

        def run(model: interp.InterpModel, name: str, inputs: list, last: list[str],
                every: list[str]) -> tuple[Any, Any | None]:
            stage = f"{'twin' if twin_seed is not None else 'capture'}-{name}"
            fp = fingerprint(stage, self.weights, twin_seed, inputs, last, every,
                             self.batch_size, self.seed)
            parts, _ = self._run(
                stage, fp, len(inputs), self.batch_size, "capture_shard", spec, weights,
                lambda lo, hi: {"inputs": inputs[lo:hi], "last": last, "every": every,
                                "batch_size": self.batch_size, "seed": self.seed})
            store = concat_stores([load_rows(p["last.safetensors"]) for p in parts])
            rows = concat_stores([load_rows(p["every.safetensors"]) for p in parts]) \
                if every else None
            return store, rows

        return run

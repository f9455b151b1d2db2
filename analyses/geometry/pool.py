"""The candidate prompts of a geometry run: a real-text pool (or a wind tunnel's own task),
scored by the model's next-token entropy, then sampled by entropy quintile (Paper III §4.2).

Scores are a finished part (:class:`records.Parts`): a rerun with the same model weights, pool
and target reuses them, and a run that needs more rows (another domain) scores only those.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from ...interp import InterpModel
from ...records import Parts, fingerprint, write_table
from ...records.budget import check_time
from ..kit.errors import ExperimentError
from ..prompts.corpora import DEFINITION_DOMAINS, DOMAINS, CorpusPaths
from ..prompts.pool import MIXED, PoolConfig, PoolError, build_pool
from ..prompts.segmentation import WindowSpec
from ..prompts.tasks import TASK_SET, task_pool
from .entropy_sampler import next_token_entropy, stratified_sample, token_lengths

POOL_FILE = "pool.parquet"


class PoolEntropy(Protocol):
    """Next-token entropy (bits) [n] of ``prompts`` read by ``model``, ``batch_size`` per
    forward; ``fp``: a fingerprint of what is scored (the pool and the rows)."""

    def __call__(self, model: InterpModel, prompts: list, batch_size: int,
                 fp: str) -> np.ndarray: ...


def candidate_pool(model: InterpModel, sets: list[str], size: int, seed: int,
                   windows: WindowSpec, corpus_paths: CorpusPaths | None,
                   ) -> tuple[pd.DataFrame, list[str]]:
    """The pool table and the skipped-source messages (a wind tunnel samples its task)."""
    if sets == [TASK_SET]:
        return task_pool(model.task, size, seed), []
    extra = tuple(s for s in sets if s in DEFINITION_DOMAINS)
    try:
        pool = build_pool(PoolConfig(size, seed, (*DOMAINS, *extra), windows=windows),
                          paths=corpus_paths)
        for s in sets:
            pool.select(s)  # raises with the install hint if a domain is unavailable
    except PoolError as e:
        raise ExperimentError(str(e)) from e
    return pool.table, pool.messages()


def prompt_inputs(rows: pd.DataFrame) -> list:
    """What the model reads: token lists for a wind tunnel, texts otherwise."""
    return list(rows["tokens"]) if "tokens" in rows else list(rows["text"])


def vocab_slice(model: InterpModel) -> slice | None:
    """The vocabulary the entropy is taken over: a wind tunnel's hypothesis tokens."""
    return model.task.hyp_slice if model.task is not None else None


def needed_rows(pool: pd.DataFrame, sets: list[str]) -> np.ndarray:
    """[n] bool: the rows some set draws from (a wind tunnel's task: all; ``mixed``: the mixed
    pool's domains, never a definition domain that is not asked for)."""
    if TASK_SET in sets:
        return np.ones(len(pool), dtype=bool)
    domain = pool["domain"]
    return np.asarray(domain.isin(sets) | (domain.isin(DOMAINS) & (MIXED in sets)), dtype=bool)


def _texts_sha256(pool: pd.DataFrame) -> str:
    return hashlib.sha256(json.dumps(pool["text"].tolist()).encode()).hexdigest()


def score_pool(model: InterpModel, pool: pd.DataFrame, sets: list[str], out: Path, *,
               weights: str, seed: int, windows: WindowSpec, batch_size: int,
               progress: bool, entropy: PoolEntropy | None = None,
               ) -> tuple[pd.DataFrame, bool]:
    """Add ``entropy_bits`` and ``n_tokens`` to the rows any set needs, reusing the scores of an
    earlier run in ``out`` with the same model weights (digest ``weights``) and pool; write
    ``out/pool.parquet``. ``entropy``: how the scores are computed (in this process unless
    given: over worker processes, :mod:`analyses.geometry.shards`). Returns (pool, every
    needed score was reused)."""
    vslice = vocab_slice(model)
    fp = fingerprint(model.info.to_dict(), weights, len(pool), seed, asdict(windows),
                     _texts_sha256(pool), "hypothesis slice" if vslice else "vocabulary")
    parts = Parts(out)
    pool = pool.copy()
    pool["entropy_bits"] = np.nan
    old = parts.get("pool", fp)
    if old is not None:
        pool["entropy_bits"] = old[POOL_FILE]["entropy_bits"].to_numpy()
    todo = np.flatnonzero(needed_rows(pool, sets) & pool["entropy_bits"].isna().to_numpy())
    if todo.size and entropy is not None:
        rows = pool.iloc[todo]
        pool.loc[pool.index[todo], "entropy_bits"] = entropy(
            model, prompt_inputs(rows), batch_size, fingerprint(fp, todo.tolist()))
    elif todo.size:
        rows = pool.iloc[todo]
        pool.loc[pool.index[todo], "entropy_bits"] = next_token_entropy(
            model, prompt_inputs(rows), batch_size, vslice, progress,
            paced=lambda s: check_time(s, int(todo.size),
                                       f"scoring a pool of {int(todo.size):,} prompts",
                                       "--pool-size", unit="prompts", error=ExperimentError))
    pool["n_tokens"] = token_lengths(model, prompt_inputs(pool))
    write_table(out / POOL_FILE, pool)
    parts.mark("pool", fp, [POOL_FILE])
    return pool, old is not None and todo.size == 0


def sample_set(pool: pd.DataFrame, name: str, n_per_bin: int, n_bins: int, seed: int,
               ) -> pd.DataFrame:
    """``n_per_bin`` prompts from each entropy quantile bin of the set's candidates, sorted by
    length (less padding per batch)."""
    if name == TASK_SET:
        rows = pool
    else:
        rows = pool[pool["domain"].isin(DOMAINS) if name == MIXED else pool["domain"] == name]
    try:
        idx, quint = stratified_sample(rows["entropy_bits"].to_numpy(), n_per_bin, n_bins, seed)
    except ValueError as e:
        raise ExperimentError(f"prompt set {name!r} ({len(rows)} candidates): {e}") from e
    chosen = rows.iloc[idx].copy()
    chosen.insert(0, "quintile", quint)
    chosen.insert(0, "prompt_set", name)
    return chosen.sort_values(["n_tokens", "prompt_id"], kind="stable").reset_index(drop=True)

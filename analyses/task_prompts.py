"""Prompt pools for wind-tunnel models: prefixes of fresh task sequences with exact posteriors.

Each candidate is one freshly sampled sequence cut just after a randomly chosen prediction
position, so its final token is where the model predicts a hypothesis; the exact Bayes posterior
entropy (bits) there comes with it as a second target. Deterministic by seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windtunnel.task import Task

TASK_SET = "task"


def task_pool(task: Task, size: int, seed: int = 0) -> pd.DataFrame:
    """``size`` candidates: ``prompt_id``, ``domain`` ("task"), ``source`` (task name),
    ``document`` (sequence index), ``query`` (prediction index q), ``tokens`` (list of ids,
    ending at the q-th prediction position), ``text`` (the ids as a string, for display),
    ``n_words`` (tokens), ``bayes_entropy_bits``."""
    if size < 1:
        raise ValueError(f"pool size must be at least 1, got {size}")
    batch = task.sample(size, seed)
    rng = np.random.default_rng([seed, 1])
    q = rng.integers(0, int(batch.query_pos.numel()), size=size)
    ends = batch.query_pos.numpy()[q] + 1
    ids = batch.input_ids.numpy()
    tokens = [ids[i, : ends[i]].tolist() for i in range(size)]
    return pd.DataFrame({
        "prompt_id": np.arange(size),
        "domain": TASK_SET,
        "source": task.config()["task"],
        "document": [f"seq-{i}" for i in range(size)],
        "query": q,
        "tokens": tokens,
        "text": [" ".join(map(str, t)) for t in tokens],
        "n_words": [len(t) for t in tokens],
        "bayes_entropy_bits": batch.entropy_bits.numpy()[np.arange(size), q],
    })

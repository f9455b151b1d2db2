"""Prompt pools for wind-tunnel models: prefixes of fresh task sequences with exact posteriors.

Each candidate is one freshly sampled sequence cut just after a randomly chosen prediction
position, so its final token is where the model predicts a hypothesis; the exact Bayes posterior
entropy (bits) there comes with it as a second target. Deterministic by seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyses.posterior_prompts import PosteriorPrompts
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


def task_posterior_prompts(task: Task, n: int, seed: int = 0) -> PosteriorPrompts:
    """``n`` wind-tunnel prompts as :class:`PosteriorPrompts`: each a fresh sequence cut after a
    random prediction position (as in :func:`task_pool`), with the task's hypothesis tokens and
    the exact posterior there; ``group`` = the prediction index q (``group_name`` "q")."""
    if n < 1:
        raise ValueError(f"need at least 1 prompt, got {n}")
    pool = task_pool(task, n, seed)
    batch = task.sample(n, seed)  # the same draw task_pool made
    q = pool["query"].to_numpy()
    hyp = np.arange(task.hyp_slice.start, task.hyp_slice.stop)
    bayes = batch.posterior.numpy()[np.arange(n), q]
    return PosteriorPrompts(
        name=str(task.config()["task"]), prompts=list(pool["tokens"]),
        hyp_ids=np.broadcast_to(hyp, (n, hyp.size)).copy(),
        bayes=bayes / bayes.sum(1, keepdims=True),
        group=q, group_name="q", meta=pool[["document", "n_words"]].rename(
            columns={"n_words": "n_tokens"}))

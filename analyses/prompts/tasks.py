"""The candidate pool of a geometry run on a wind tunnel: prefixes of fresh task sequences.

Each candidate is one freshly sampled sequence cut just after a randomly chosen prediction
position (:meth:`windtunnel.TokenTask.cut_at_queries`), so its final token is where the model
predicts a hypothesis; the exact Bayes posterior entropy (bits) there comes with it as a second
target. Deterministic by seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...windtunnel import TokenTask
from .corpora import TASK_SET


def task_pool(task: TokenTask, size: int, seed: int = 0) -> pd.DataFrame:
    """``size`` candidates: ``prompt_id``, ``domain`` ("task"), ``source`` (task name),
    ``document`` (sequence index), ``query`` (prediction index q), ``tokens`` (list of ids,
    ending at the q-th prediction position), ``text`` (the ids as a string, for display),
    ``n_words`` (tokens), ``bayes_entropy_bits``."""
    if size < 1:
        raise ValueError(f"pool size must be at least 1, got {size}")
    cuts = task.cut_at_queries(size, seed)
    return pd.DataFrame({
        "prompt_id": np.arange(size),
        "domain": TASK_SET,
        "source": task.name,
        "document": [f"seq-{i}" for i in range(size)],
        "query": cuts.query,
        "tokens": cuts.tokens,
        "text": [" ".join(map(str, t)) for t in cuts.tokens],
        "n_words": [len(t) for t in cuts.tokens],
        "bayes_entropy_bits": cuts.entropy_bits,
    })

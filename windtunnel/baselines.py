"""The predictors that need no training, per task: the per-sample entropy MAE (bits, Paper I)
a wind tunnel is held against, on the held-out sequences its final evaluation scores
(:func:`windtunnel.evaluate.evaluate`: batch ``i`` of :data:`windtunnel.evaluate.EVAL_BATCH`
from stream ``(seed, EVAL, i)``; with a run's seed and its final-evaluation size these are
exactly that run's evaluation sequences). A sweep holds its cells against them
(``analyses.sweep``); :mod:`windtunnel.learned` decides with them whether a tunnel has learned
its task.

* ``chance``: the context-blind uniform predictor over the task's hypotheses, whose entropy is
  log2 H at every position, so its MAE is the mean of log2 H − H_Bayes (the exact posterior the
  cells are scored against; H_Bayes ≤ log2 H);
* on the HMM with the paper's target (``target_window`` 0), the trivial-baseline ladder of
  :func:`windtunnel.hmm.window_ladder`: the ``history-free`` filter (the current observation
  and the exact prior marginal, no earlier observation: the plateau a model that ignores the
  history sits on) and the filters that see the last w = 1, 2, 4, … observations (w < K).

Example:
    >>> c = task_controls("bijection", {"V": 4}, seed=0, n=50)
    >>> list(c), 0 < c[CHANCE] <= 2
    (['chance'], True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .evaluate import EVAL_BATCH
from .seeds import Purpose, stream
from .task_registry import make_token_task

CHANCE = "chance"
HISTORY_FREE = "history-free"


def window_label(w: int) -> str:
    """The control key of the filter that sees the last ``w`` observations."""
    return f"window {w}"


def task_controls(task: str, task_params: dict[str, Any], seed: int, n: int,
                  windows: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)) -> dict[str, float]:
    """Control -> per-sample entropy MAE (bits) of ``task`` at ``task_params`` on ``n``
    held-out sequences of ``seed`` (module doc); on the HMM, the history-free filter and the
    windowed filters of ``windows`` that are shorter than K (``()``: the history-free one
    alone)."""
    t = make_token_task(task, **task_params)
    log_h, errs, done, i = np.log2(t.n_hypotheses), [], 0, 0
    while done < n:
        b = t.sample(min(EVAL_BATCH, n - done), stream(seed, Purpose.EVAL, i))
        errs.append(np.abs(log_h - b.entropy_bits.double().numpy()).ravel())
        done, i = done + b.n, i + 1
    out = {CHANCE: float(np.concatenate(errs).mean())}
    if task == "hmm" and not getattr(t.cfg, "target_window", 0):
        from .hmm import window_ladder

        shorter = [w for w in windows if w < t.K]
        lad = window_ladder(t, shorter, n=n, seed=seed)
        out[HISTORY_FREE] = float(lad[HISTORY_FREE]["entropy_mae_bits"])
        out |= {window_label(w): float(lad[w]["entropy_mae_bits"]) for w in shorter}
    return out

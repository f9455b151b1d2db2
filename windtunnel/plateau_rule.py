"""When a training run stops improving: the plateau rule of ``TrainConfig.plateau_window``.

The run has plateaued at an evaluation when none of its last ``window`` held-out evaluations
improved on the best value before them by more than ``tol`` of that best (a relative
tolerance, so one rule serves metrics of any scale; lower is better):

    plateaued  <=>  n > window  and  min(v[n-window:]) >= (1 - tol) * min(v[:n-window])

for the metric values v[0..n-1] in evaluation order (NaN values are left out). It reads only
the logged values, so a resumed run decides exactly as an uninterrupted one.

Example:
    >>> plateaued([1.0, 0.5, 0.3, 0.299, 0.3, 0.31], window=3, tol=0.02)
    True
    >>> plateaued([1.0, 0.5, 0.3, 0.29, 0.3, 0.31], window=3, tol=0.02)
    False
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: the held-out metrics the rule can watch (columns ``eval_<metric>`` of the metrics log)
PLATEAU_METRICS = ("kl_bits", "entropy_mae_bits")


def plateaued(values: Sequence[float], window: int, tol: float) -> bool:
    """Whether the series ``values`` (one per evaluation, lower is better) has plateaued
    (module doc); ``window`` >= 1 evaluations, ``tol`` a fraction in [0, 1)."""
    if window < 1 or not 0 <= tol < 1:
        raise ValueError(f"window must be >= 1 and tol in [0, 1), got {window}, {tol}")
    v = [float(x) for x in values if not math.isnan(float(x))]
    if len(v) <= window:
        return False
    return min(v[-window:]) >= (1.0 - tol) * min(v[:-window])


def first_decision(window: int, eval_every: int, warmup_steps: int) -> int:
    """The first step at which the rule can stop a run: an evaluation step (a multiple of
    ``eval_every``) after the warm-up with more than ``window`` evaluations logged.

    Example:
        >>> first_decision(5, 50, 300), first_decision(5, 100, 0)
        (350, 600)
    """
    return eval_every * max(window + 1, warmup_steps // eval_every + 1)


def unreachable(window: int, eval_every: int, warmup_steps: int, steps: int) -> str | None:
    """Why a plateau window of ``window`` evaluations cannot stop a run of ``steps`` steps
    before ``steps`` does (it would be ignored), in one line; None where it can (or is off)."""
    if not window:
        return None
    first = first_decision(window, eval_every, warmup_steps)
    if first < steps:
        return None
    return (f"--plateau-window {window} cannot stop the run before --steps {steps}: the rule "
            f"first decides at step {first} ({window + 1} held-out evaluations, one every "
            f"{eval_every} steps, after the {warmup_steps} warm-up steps); lower "
            "--plateau-window or --eval-every, or raise --steps")

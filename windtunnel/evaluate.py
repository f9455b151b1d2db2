"""Evaluate a wind-tunnel model against the exact posterior on fresh held-out hypotheses.

Held-out sequences come in batches of :data:`EVAL_BATCH`; a model whose logits are NaN or
infinite raises :class:`NonFiniteError` (a fault, exit status 1) instead of reporting NaNs.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ..records import FaultError
from ..records.budget import check_time
from ..records.progress import tqdm
from .metrics import Accumulator, CalibrationReport, calibration_stats, report_from, slice_log_probs
from .readout import block_outputs, final_norm_and_head
from .seeds import Purpose, stream
from .task import TaskConfigError, TokenTask

#: sequences per evaluation batch (part of the held-out stream's definition: batch i of a run's
#: evaluation is stream (seed, EVAL, i), so changing it changes which sequences are drawn)
EVAL_BATCH = 500
#: evaluations of up to this many batches are never timed beforehand (they end soon anyway)
UNTIMED_BATCHES = 100


class NonFiniteError(FaultError, FloatingPointError):
    """A model produced NaN or infinite values (a fault, exit status 1)."""


def check_eval_time(batch_seconds: float, batches: int, what: str, lower: str,
                    limit: float | None = None) -> None:
    """Refuse (:class:`TaskConfigError`, with the estimate) ``batches`` evaluation batches when
    one took ``batch_seconds`` and all would run past ``limit`` seconds (default
    :data:`records.budget.TIME_LIMIT`, read at the call; :func:`records.budget.check_time`)."""
    check_time(batch_seconds, batches, what, lower, "batches", TaskConfigError, limit)


@torch.no_grad()
def batch_seconds(model: torch.nn.Module, task: TokenTask, logit_lens: bool,
                  seed: int = 0) -> float:
    """Seconds one evaluation batch of :data:`EVAL_BATCH` sequences takes ``model`` here
    (measured once, on a stream no evaluation uses)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    b = task.sample(EVAL_BATCH, stream(seed, Purpose.INSPECT, 1)).to(device)
    t0 = time.perf_counter()
    model(b.input_ids, output_hidden_states=logit_lens)
    model.train(was_training)
    return time.perf_counter() - t0


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    task: TokenTask,
    n: int = 2000,
    seed: int = 0,
    batch_size: int = EVAL_BATCH,
    logit_lens: bool = True,
    progress: bool = False,
) -> CalibrationReport:
    """Calibration of ``model`` on ``n`` held-out sequences: batch ``i`` comes from stream
    ``(seed, EVAL, i)`` (:mod:`windtunnel.seeds`), disjoint from every training batch of a run
    with the same ``seed``.

    With ``logit_lens`` the final norm and head are applied to every block's residual output;
    ``per_layer`` then holds KL(Bayes ‖ layer) and entropy MAE (bits) for layers 1..n_layers.
    """
    if n < 1 or batch_size < 1:
        raise TaskConfigError(f"evaluation needs n >= 1 and batch_size >= 1, got n={n}, "
                              f"batch_size={batch_size}")
    b0 = min(batch_size, n)
    task.check_memory(b0, task.batch_bytes(b0), "--n")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    acc = Accumulator()
    layer_accs: list[Accumulator] = []
    done, i = 0, 0
    bar = tqdm(total=n, desc="eval", unit="seq", disable=not progress, leave=False)
    t_first = time.perf_counter()
    while done < n:
        b = task.sample(min(batch_size, n - done), stream(seed, Purpose.EVAL, i)).to(device)
        out = model(b.input_ids, output_hidden_states=logit_lens)
        logp = slice_log_probs(out.logits[:, b.query_pos], task.hyp_slice)
        if not torch.isfinite(logp).all():
            raise NonFiniteError(f"the model produced NaN or infinite logits on evaluation "
                                 f"batch {i}; its weights are damaged or it diverged")
        acc.add(calibration_stats(logp, b.oracle, b.targets))
        if logit_lens and out.hidden_states is not None:
            norm, head = final_norm_and_head(model)
            hs = block_outputs(model, out.hidden_states)
            for li, h in enumerate(hs):
                if len(layer_accs) <= li:
                    layer_accs.append(Accumulator())
                z = out.logits if li == len(hs) - 1 else head(norm(h))
                lp = slice_log_probs(z[:, b.query_pos], task.hyp_slice)
                layer_accs[li].add(calibration_stats(lp, b.oracle, b.targets))
        done += b.n
        i += 1
        bar.update(b.n)
        if i == 1 and n > batch_size * UNTIMED_BATCHES:  # the first batch times the rest
            check_eval_time(time.perf_counter() - t_first, -(-n // batch_size),
                            f"evaluating {n:,} sequences", "--n")
    bar.close()
    model.train(was_training)
    per_layer = None
    if layer_accs:
        reps = [report_from(a) for a in layer_accs]
        per_layer = {
            "kl_bits": [r.kl_bits for r in reps],
            "entropy_mae_bits": [r.entropy_mae_bits for r in reps],
        }
    return report_from(acc, per_layer)


def bayes_accuracy(task: TokenTask, n: int = 2000, seed: int = 0) -> float:
    """Expected accuracy of the Bayes predictor (mean max posterior) — the accuracy ceiling —
    on ``n`` sequences of the evaluation stream ``(seed, EVAL, 0)``."""
    b = task.sample(n, stream(seed, Purpose.EVAL, 0))
    return float(np.asarray(b.bayes_max().mean()))

"""What ``bayesgeom ablate`` measures with: one ablated evaluation, the task at another size, and
the mean-ablation control (a site's output replaced by its per-position mean).

The mean of a site is taken over the first held-out batch of the evaluation stream
(``stream(seed, EVAL, 0)``, up to :data:`windtunnel.evaluate.EVAL_BATCH` sequences, i.e. the
sequences the ablated model is then scored on), per position: shape [T, *feature] for a task
whose sequences all have length T (every wind tunnel). Replacing a head's output by that mean
keeps its average contribution to the residual stream and removes only what varies with the
input, so it is the matched control of zeroing the same head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch

from ... import interp
from ...interp.ablations import Ablation, ablate
from ...windtunnel.evaluate import EVAL_BATCH, evaluate
from ...windtunnel.metrics import CalibrationReport
from ...windtunnel.seeds import Purpose, stream
from ...windtunnel.task import TaskConfigError, TokenTask
from ...windtunnel.task_registry import make_token_task
from ..kit.errors import ExperimentError


def eval_task(task: TokenTask, K: int) -> TokenTask:
    """``task`` with ``K`` observations per sequence (its other parameters unchanged); a task
    without a K parameter, or a K beyond the positions the model was sized for, is refused."""
    params = {k: v for k, v in task.config().items() if k != "task"}
    if "K" not in params:
        raise ExperimentError(f"--K applies to tasks with a K parameter (hmm); {task.name} has "
                            "none")
    try:
        return make_token_task(task.name, **{**params, "K": int(K),
                                             "max_K": max(params.get("max_K", K), K)})
    except TaskConfigError as e:
        raise ExperimentError(f"--K {K}: {e}") from None


def has_site(m: interp.InterpModel, name: str) -> bool:
    """Whether ``name`` can be hooked on ``m`` (a recurrent model has no attention sites; an
    LSTM has no sublayer sites)."""
    try:
        m.add_hook(name, lambda x: None).remove()
    except interp.InterpError:
        return False
    return True


def check_fits(m: interp.InterpModel, task: TokenTask) -> None:
    """Refuse a task whose sequences are longer than the model's position table."""
    if m.n_ctx is not None and task.seq_len > m.n_ctx:
        raise ExperimentError(f"{task.name} with K={task.config().get('K')} needs "
                            f"{task.seq_len} positions; {m.info.name} has {m.n_ctx}")


def measure(m: interp.InterpModel, task: TokenTask, ablations: Sequence[Ablation], n: int,
            seed: int) -> CalibrationReport:
    """The calibration report (entropy MAE in bits, accuracy) of ``m`` on ``n`` held-out
    sequences with ``ablations`` active (none: as the model is, hooks already on included)."""
    check_fits(m, task)
    if not ablations:
        return evaluate(m.hf, task, n=n, seed=seed, logit_lens=False)
    with ablate(m, *ablations):
        return evaluate(m.hf, task, n=n, seed=seed, logit_lens=False)


@torch.no_grad()
def site_means(m: interp.InterpModel, task: TokenTask, sites: Sequence[str],
               seed: int) -> dict[str, torch.Tensor]:
    """Per-position mean [T, *feature] of each site over the first held-out batch."""
    check_fits(m, task)
    b = task.sample(EVAL_BATCH, stream(seed, Purpose.EVAL, 0))
    store: dict[str, torch.Tensor] = {}

    def grab(name: str) -> Callable[[torch.Tensor], None]:
        def fn(x: torch.Tensor) -> None:
            store[name] = x.detach().float().mean(0)
        return fn

    was = m.hf.training
    m.hf.eval()
    with m.hooks([(s, grab(s)) for s in sites]):
        m.hf(b.input_ids.to(next(m.hf.parameters()).device))
    m.hf.train(was)
    return store


@contextmanager
def mean_replaced(m: interp.InterpModel, site: str, mean: torch.Tensor,
                  head: int | None = None) -> Iterator[None]:
    """``site`` (``head`` of it for a per-head site) replaced by its per-position ``mean``
    for every forward pass inside the context."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        mu = mean[: x.shape[1]].to(x.dtype).to(x.device)
        out = x.clone()
        if head is None:
            out[:] = mu
        else:
            out[:, :, head] = mu[:, head]
        return out

    with m.hooks([(site, fn)]):
        yield

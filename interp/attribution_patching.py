"""Attribution patching: the first-order estimate of every cell's activation patch at once.

For a cell with target activation a_t and source activation a_s, exact patching measures
score(a_s) − score(a_t); attribution patching estimates it as (a_s − a_t) · ∂score/∂a at a_t,
summed over the cell's positions (and its head's features). One source forward (no gradients)
and one target forward and backward per batch of pairs serve every cell: each needed site gets
a zero tensor added to it in the target forward, whose gradient is the site's gradient (the
weights' ``.grad`` are left alone). The score is summed over the pairs of a batch for the
backward (pairs do not interact, so each pair's row of the gradient is its own), once per metric.

It is exact where the score is linear in the activation (a last-layer residual stream read
through a linear head) and an approximation elsewhere: compare it to
:func:`interp.activation_patch` on the same cells (the same :class:`PatchResult`, whose values
here are the target score plus the estimate).

Where gradients come from: site hooks (:mod:`interp.hf_hooks`) expose every patchable kind in
its site layout; :mod:`interp.attention_taps` reads the attention kernel's own tensors (queries
and keys after RoPE), so it serves as an independent check of ``attn.L.z``'s gradient (tests),
not as the source of these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..records.progress import tqdm
from .errors import NonFiniteActivationError
from .model import InterpModel
from .patch_cells import PatchCell, check_cells
from .patch_inputs import Readout, cell_mask, pair_batches, run_keeping
from .patch_result import PatchResult
from .patch_scores import PairScore, ScoreFn, as_pair_score, evaluate, metric_names
from .sites import HEAD_KINDS
from .token_batch import TokenBatch


def _target_pass(model: InterpModel, batch: TokenBatch, sites: list[str], keep: int
                 ) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Logits [B, keep, V] (in the graph), each site's detached activation and its probe."""
    acts: dict[str, torch.Tensor] = {}
    probes: dict[str, torch.Tensor] = {}

    def prober(name: str) -> Any:
        def fn(x: torch.Tensor) -> torch.Tensor:
            acts[name] = x.detach()
            probes[name] = torch.zeros_like(x, requires_grad=True)
            return x + probes[name]
        return fn

    with model.hooks([(n, prober(n)) for n in sites]):
        logits = model.backend.forward(batch, keep)
    return logits, acts, probes


def attribution_patch(
    model: InterpModel,
    target: Any,
    source: Any,
    cells: Sequence[PatchCell],
    score: PairScore | ScoreFn,
    *,
    read_positions: int | Sequence[int] | None = None,
    batch_size: int = 8,
    progress: bool = False,
) -> PatchResult:
    """First-order estimates of :func:`interp.activation_patch` for every cell at once.

    Arguments as for :func:`interp.activation_patch`; ``score`` must be differentiable (every
    score of :mod:`interp.patch_scores` is). Returns a :class:`PatchResult` with
    ``method="attribution"``: ``values`` [n_cells, N, m] = target score + (a_s − a_t) · ∇a score,
    float64 (``effect()`` is the estimate itself).

    Example:
        >>> import transformers
        >>> from bayesgeom import interp
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> cells = interp.cell_grid(m, ["attn.z"], heads=True, positions="each", length=3)
        >>> r = interp.attribution_patch(m, [[1, 2, 3]], [[4, 2, 3]], cells,
        ...                              interp.logit_diff_score(6, 7))
        >>> r.method, tuple(r.values.shape)  # 2 layers x 2 heads x 3 positions
        ('attribution', (12, 1, 1))
    """
    cells = check_cells(cells, model)
    pscore = as_pair_score(score)
    batches, lengths = pair_batches(model, target, source, batch_size, cells)
    read = Readout.of(read_positions, lengths)
    sites = list(dict.fromkeys(c.site for c in cells))
    kinds = {c.site: c.kind for c in cells}
    values: torch.Tensor | None = None
    tgt_rows, src_rows = [], []
    for pb in tqdm(batches, desc="attribution patching", unit="batch", disable=not progress,
                   leave=False):
        keep = read.keep(pb.target)
        src_logits, src_acts = run_keeping(model, pb.source, sites, keep)
        src_rows.append(evaluate(pscore, read.gather(src_logits, pb.source), pb.pairs).cpu())
        with torch.enable_grad():
            logits, acts, probes = _target_pass(model, pb.target, sites, keep)
            s = evaluate(pscore, read.gather(logits, pb.target), pb.pairs)
        if not bool(torch.isfinite(s).all()):
            raise NonFiniteActivationError("the target score is not finite; attribution "
                                           "patching needs a finite, differentiable score")
        base = s.detach().cpu()
        tgt_rows.append(base)
        m = s.shape[1]
        if values is None:
            values = torch.empty(len(cells), len(lengths), m, dtype=torch.float64)
        masks = {p: cell_mask(pb.target, p) for p in {c.position for c in cells}}
        for j in range(m):
            grads = torch.autograd.grad(s[:, j].sum(), [probes[n] for n in sites],
                                        retain_graph=j < m - 1, allow_unused=True)
            per_site = {n: _products(kinds[n], src_acts[n], acts[n], g)
                        for n, g in zip(sites, grads, strict=True)}
            for i, c in enumerate(cells):
                prod = per_site[c.site]  # [B, T] or [B, T, H]
                if prod.ndim == 3:
                    prod = prod.sum(-1) if c.head is None else prod[..., c.head]
                est = (prod * masks[c.position].to(prod.device)).sum(-1)
                values[i, pb.pairs, j] = base[:, j] + est.cpu()
    assert values is not None
    return PatchResult("attribution", tuple(cells), metric_names(pscore, values.shape[2]), values,
                       torch.cat(tgt_rows), torch.cat(src_rows))


def _products(kind: str, src: torch.Tensor, tgt: torch.Tensor, grad: torch.Tensor | None,
              ) -> torch.Tensor:
    """(a_s − a_t) · ∇ per position [B, T] (per head [B, T, H] for per-head sites), float64."""
    if grad is None:  # the score does not depend on this site
        grad = torch.zeros_like(tgt)
    prod = (src.double() - tgt.double()) * grad.double()
    return prod.sum(-1) if kind in HEAD_KINDS else prod.flatten(2).sum(-1)

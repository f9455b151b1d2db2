"""The plain per-step loop of ``bayesgeom dynamics em-vs-sgd``: one head, autograd, one step at
a time, the M-step by ``torch.linalg.lstsq`` -- the definition the batched trainer
(:mod:`analyses.dynamics.em_vs_sgd.sticky_trainer`) is tested against, and the baseline of
``benchmarks/em_vs_sgd_speed.py``.

M-steps (at the current parameters, before the gradient step; ũ_i = ∂ℓ_i/∂o_i [T, d_v] the
per-token error, V = X W_V): V* = V − η D, W_V ← the least-squares solution of X W_V = V*
(float64), with D_j = Σ_i w_ij ũ_i / Σ_i w_ij where w = α (``alpha``) or the causal uniform
attention w_ij = 1/(i+1), j ≤ i (``uniform``), or D_j = Σ_i α_ij ũ_i (``unnorm``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ....windtunnel import sticky_chain as sc
from .sticky_trainer import ADAM_BETAS, ADAM_EPS, RunSettings


def token_errors(logits: torch.Tensor, targets: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """ũ [T, d_v]: ∂ℓ_i/∂o_i of each token's own CE, (softmax(z_i) − e_{y_i}) W_Oᵀ."""
    p = torch.softmax(logits, dim=-1)
    return (p - F.one_hot(targets, p.shape[-1]).to(p.dtype)) @ w_o.T


def uniform_attention(t: int) -> torch.Tensor:
    """The causal uniform attention [t, t]: row i is 1/(i+1) on keys j ≤ i."""
    return torch.ones(t, t).tril() / torch.arange(1, t + 1)[:, None]


@torch.no_grad()
def m_step(model: sc.SingleHeadAttention, x: torch.Tensor, targets: torch.Tensor,
           alpha: torch.Tensor, eta: float, kind: str = "alpha") -> torch.Tensor:
    """The closed-form M-step at fixed α [T, T] and W_O: new W_V [d_x, d_v] (module doc)."""
    v = x @ model.W_V
    u = token_errors((alpha @ v) @ model.W_O, targets, model.W_O)
    w = uniform_attention(x.shape[0]) if kind == "uniform" else alpha
    d = w.T @ u
    if kind != "unnorm":
        d = d / w.sum(dim=0)[:, None]
    return torch.linalg.lstsq(x.double(), (v - eta * d).double()).solution.to(v.dtype)


def train_reference(settings: RunSettings, seq: sc.StickySequence, steps: int,
                    ) -> tuple[np.ndarray, sc.SingleHeadAttention]:
    """Train the seed's 820-parameter head by ``settings``, one autograd step at a time;
    (losses [steps + 1] after k = 0..steps updates, the final model)."""
    model = sc.SingleHeadAttention(seq.seed)
    x, y = seq.inputs, seq.targets
    lrs = settings.lrs()
    opt = (torch.optim.Adam([{"params": [p], "lr": lrs[n]} for n, p in model.named_parameters()],
                            betas=ADAM_BETAS, eps=ADAM_EPS)
           if settings.optimizer == "adam" else None)
    losses = np.empty(steps + 1)
    for k in range(steps + 1):
        logits, alpha = model(x)
        loss = F.cross_entropy(logits, y)
        losses[k] = loss.item()
        if k == steps:
            break
        model.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            new_v = (m_step(model, x, y, alpha, settings.eta, settings.m_step)
                     if settings.m_step != "none" else None)
            if opt is not None:
                opt.step()
            else:
                for name, p in model.named_parameters():
                    p -= lrs[name] * p.grad  # SGD without momentum is exactly this step
            if new_v is not None:
                model.W_V.copy_(new_v)
    return losses, model

"""A model's posterior over a prompt's hypotheses: its next-token distribution restricted to
the hypothesis tokens and renormalised (the same for SULA labels and wind-tunnel values).

Example:
    >>> import numpy as np, torch
    >>> model_posterior(torch.tensor([[0.0, 1.0, 1.0]]), np.array([[1, 2]])).tolist()
    [[0.5, 0.5]]
"""

from __future__ import annotations

import numpy as np
import torch

from ...interp.finite import all_finite


def model_posterior(logits: torch.Tensor, hyp_ids: np.ndarray | torch.Tensor) -> np.ndarray:
    """``logits`` [N, V] and ``hyp_ids`` [N, K] -> [N, K] float64: a softmax over the K
    selected logits (gathered first, so only [N, K] is ever widened to float64)."""
    z = logits.detach()
    idx = torch.as_tensor(np.asarray(hyp_ids), dtype=torch.long)
    if idx.shape[0] != z.shape[0]:
        raise ValueError(f"logits have {z.shape[0]} rows, hyp_ids {idx.shape[0]}")
    if not all_finite(z):
        raise FloatingPointError("the model produced NaN/inf logits")
    picked = z.gather(1, idx.to(z.device)).to("cpu", torch.float64)
    return torch.softmax(picked, dim=1).numpy()

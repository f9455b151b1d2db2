"""Next-token entropy in bits from logits."""

from __future__ import annotations

import math

import torch


def entropy_bits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (bits, float32) of softmax(``logits``) over the last axis; 0·log 0 = 0."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp.exp()
    terms = torch.where(p > 0, p * logp, torch.zeros_like(p))
    return -terms.sum(-1) / math.log(2.0)

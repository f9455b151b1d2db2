"""Locate a wind-tunnel model's final norm and unembedding (for the per-layer logit lens)."""

from __future__ import annotations

from torch import nn


def final_norm_and_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(final norm, LM head) of a GPT-2-style transformer or a :class:`WindTunnelMLP`."""
    if hasattr(model, "transformer") and hasattr(model.transformer, "ln_f"):
        return model.transformer.ln_f, model.lm_head
    if hasattr(model, "norm") and hasattr(model, "lm_head"):
        return model.norm, model.lm_head
    raise TypeError(f"cannot locate the final norm and head of {type(model).__name__}")

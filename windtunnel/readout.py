"""Locate a wind-tunnel model's final norm and unembedding (for the per-layer logit lens)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def final_norm_and_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(final norm, LM head) of a GPT-2-style transformer, a :class:`WindTunnelMLP`, a
    :class:`WindTunnelLSTM` or HF's ``MambaForCausalLM`` / ``Mamba2ForCausalLM``."""
    if hasattr(model, "transformer") and hasattr(model.transformer, "ln_f"):
        return model.transformer.ln_f, model.lm_head
    if hasattr(model, "backbone") and hasattr(model.backbone, "norm_f"):
        return model.backbone.norm_f, model.lm_head
    if hasattr(model, "norm") and hasattr(model, "lm_head"):
        return model.norm, model.lm_head
    raise TypeError(f"cannot locate the final norm and head of {type(model).__name__}")


def block_outputs(model: nn.Module, hidden_states: Sequence[torch.Tensor],
                  ) -> Sequence[torch.Tensor]:
    """Every block's output, in order, from ``output_hidden_states``: HF's convention holds the
    embedding output first (dropped here); HF's Mamba holds the block outputs, then the last
    one again after the final norm (dropped here: the logits read it), and so does Mamba-2."""
    if getattr(getattr(model, "config", None), "model_type", None) in ("mamba", "mamba2"):
        return hidden_states[:-1]
    return hidden_states[1:]

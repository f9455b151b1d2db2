"""Locate a wind-tunnel model's final norm and unembedding, and its blocks' outputs (for the
per-layer logit lens), from the :class:`~windtunnel.arch_spec.SavedModelSpec` of its
``config.model_type``."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .arch_registry import saved_model_spec
from .arch_spec import SavedModelSpec, module_at


def _saved(model: nn.Module) -> SavedModelSpec | None:
    return saved_model_spec(getattr(getattr(model, "config", None), "model_type", None))


def final_norm_and_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(final norm, LM head) of a model of any wind-tunnel arch; ``TypeError`` for a model
    whose ``model_type`` no wind-tunnel arch saves as."""
    saved = _saved(model)
    if saved is None:
        raise TypeError(f"cannot locate the final norm and head of {type(model).__name__}")
    return module_at(model, saved.final_norm), module_at(model, saved.lm_head)


def block_outputs(model: nn.Module, hidden_states: Sequence[torch.Tensor],
                  ) -> Sequence[torch.Tensor]:
    """Every block's output [B, T, d], in order, from ``output_hidden_states``: HF's convention
    holds the embedding output first (dropped here); HF's Mamba layout
    (``SavedModelSpec.final_repeated``: Mamba, Mamba-2) holds the block outputs, then the last
    one again after the final norm (dropped here: the logits read it)."""
    saved = _saved(model)
    return hidden_states[:-1] if saved is not None and saved.final_repeated else hidden_states[1:]

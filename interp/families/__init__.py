"""Family adapters: which module holds each site, per architecture family."""

from __future__ import annotations

from torch import nn

from .adapter import AttentionGeometry, FamilyAdapter, ModuleMap
from .generic import discover
from .gpt2 import GPT2
from .gpt_neox import GPT_NEOX
from .llama import LLAMA
from .mistral import MISTRAL
from .phi import PHI
from .recurrent import LSTM, MAMBA, MAMBA2

#: the first-class family adapters; a model whose ``config.model_type`` none of them lists gets
#: the generic one (:func:`adapter_for`)
FAMILIES: tuple[FamilyAdapter, ...] = (GPT_NEOX, PHI, LLAMA, MISTRAL, GPT2, MAMBA, MAMBA2, LSTM)


def adapter_for(model: nn.Module) -> FamilyAdapter:
    """The first-class adapter for ``model``'s ``config.model_type``, else the generic one."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    for fam in FAMILIES:
        if model_type in fam.model_types:
            return fam
    return discover(model)


def locate(model: nn.Module) -> ModuleMap:
    """Resolve ``model``'s site modules (raises if it has no decoder-layer stack)."""
    return adapter_for(model).locate(model)


__all__ = ["FAMILIES", "AttentionGeometry", "FamilyAdapter", "ModuleMap", "adapter_for", "locate"]

"""Decode residual streams with the model's own final norm and output embedding.

``unembed(model, h)`` is what the model does after its last block: the final LayerNorm/RMSNorm
(its own module, its own scale for every row) and then the output embedding (``lm_head``). A
model that changes its logits after the head (soft-capping, a logit scale) is not reproduced:
:func:`unembed_error` measures how far ``unembed`` of the final residual stream is from the
model's logits, so a caller can check before relying on it. Used by path patching
(:mod:`interp.path_patching`) and by the steering experiment's direct-path effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from .norm_freeze import final_norm_module

if TYPE_CHECKING:
    from .model import InterpModel


def unembed(model: InterpModel, h: torch.Tensor) -> torch.Tensor:
    """Logits [..., V] of residual streams ``h`` [..., D] (final norm, then output embedding;
    in the model's dtype, on its device; differentiable: wrap in ``torch.no_grad()`` to save
    memory). Hooks on the final norm or ``lm_head`` fire as in a forward.

    Example:
        >>> import torch, transformers
        >>> from bayesgeom import interp
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> unembed(m, torch.zeros(2, 3, 8)).shape
        torch.Size([2, 3, 11])
    """
    norm = final_norm_module(model)
    out: nn.Module = model.hf.get_output_embeddings()  # type: ignore[operator]
    w: torch.Tensor = out.weight  # type: ignore[assignment]
    flat = h.reshape(-1, 1, h.shape[-1]).to(w.device, w.dtype)
    return out(norm(flat))[:, 0].reshape(*h.shape[:-1], -1)


def unembed_error(model: InterpModel, final: torch.Tensor, logits: torch.Tensor) -> float:
    """max |unembed(final) − logits| / max |logits|: ``final`` [..., D] final residual streams
    (``resid_post`` of the last layer) and the model's ``logits`` [..., V] at the same rows."""
    with torch.no_grad():
        got = unembed(model, final).float()
    ref = logits.float().to(got.device)
    return float((got - ref).abs().max() / ref.abs().max().clamp(min=1e-12))

"""Decode residual streams with the model's own final norm and output embedding.

``unembed(model, h)`` is what the model does after its last block: the final LayerNorm/RMSNorm
(its own module, its own scale for every row) and then the output embedding (``lm_head``). A
model that changes its logits after the head (soft-capping, a logit scale) is not reproduced:
:func:`unembed_error` measures how far ``unembed`` of the final residual stream is from the
model's logits, so a caller can check before relying on it. Used by path patching
(:mod:`interp.path_patching`) and by the steering experiment's direct-path effect.

:func:`frozen_head_logits` gives the logits with the final norm's scale frozen
(:mod:`interp.norm_freeze`) from a pass' own logits, without a second head: the norm's output
is ``b + w ⊙ (x − μ)/s``, so freezing s at s_c moves it along one line, and a head linear in it
moves its logits along one line too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from .hf_hooks import norm_scale
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


def head_offset(model: InterpModel) -> torch.Tensor:
    """The logits [V] (float32, on the model's device) of a row the final norm maps to its bias
    alone (zero after centring and scaling): the output embedding of the norm's bias, or of
    zero for a norm without one. The point :func:`frozen_head_logits` rescales about."""
    norm = final_norm_module(model)
    out: nn.Module = model.hf.get_output_embeddings()  # type: ignore[operator]
    w: torch.Tensor = out.weight  # type: ignore[assignment]
    bias = getattr(norm, "bias", None)
    b = bias if isinstance(bias, torch.Tensor) else torch.zeros(w.shape[-1])
    with torch.no_grad():
        return out(b.reshape(1, 1, -1).to(w.device, w.dtype))[0, 0].float()


def frozen_head_logits(model: InterpModel, logits: torch.Tensor, h: torch.Tensor,
                       scale: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """The logits the pass would give with the final norm's scale frozen at ``scale`` [B]
    (:func:`interp.norm_freeze.frozen_final_norm`), from its own ``logits`` [B, V] and final
    residual streams ``h`` [B, D] at the same rows: ``offset + (logits − offset) · s(h) /
    scale``, ``offset`` = :func:`head_offset`, s(h) the norm's own scale of ``h``. Exact (to
    float rounding) for a head linear in the norm's output, as ``unembed`` is; a model that
    soft-caps its logits is not, so check against the frozen norm first. -> [B, V] float32.

    Example:
        >>> import torch, transformers
        >>> from bayesgeom import interp
        >>> from bayesgeom.interp.norm_freeze import frozen_final_norm
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg).eval())
        >>> h, s = torch.randn(3, 8), torch.rand(3) + 0.5
        >>> with frozen_final_norm(m, s[:, None]):
        ...     want = unembed(m, h[:, None])[:, 0]
        >>> got = frozen_head_logits(m, unembed(m, h).detach(), h, s, head_offset(m))
        >>> bool(torch.allclose(got, want, atol=1e-5))
        True
    """
    z = logits.float()
    norm = final_norm_module(model)
    ratio = norm_scale(h[:, None].to(z.device), norm)[:, 0] / scale.to(z.device).float()
    a = offset.to(z.device)
    return a + (z - a) * ratio[:, None]

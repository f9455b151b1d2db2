"""Gradient taps on attention: each head's probabilities, inputs and output with their autograd
gradients, read from the model's own attention kernel (Paper II's quantities).

:func:`attention_gradients` runs one forward + ``torch.autograd.grad`` with the model's attention
implementation switched to ``"bayesgeom_taps"``: a registered attention function that calls the
model family's **own** ``eager_attention_forward`` (nothing is re-implemented) and keeps, per
requested layer, the tensors it was given and returned:

=============  =====================  ======================================================
field          shape                  what
=============  =====================  ======================================================
``q``          [B, H, T, dh]          queries as the kernel sees them (after RoPE, if any)
``k``          [B, Hkv, Tk, dh]       keys as the kernel sees them (after RoPE, before GQA
                                      repetition)
``v``          [B, Hkv, Tk, dh]       values (site ``attn.L.v``, heads first)
``pattern``    [B, H, T, Tk]          attention probabilities α (site ``attn.L.pattern``)
``z``          [B, H, T, dh]          per-head output o_i = Σ_j α_ij v_j (site ``attn.L.z``)
``score_grad`` [B, H, T, Tk]          ∂L/∂s_ij: a zero tensor is added to the kernel's additive
                                      mask, so its gradient is that of the pre-softmax scores
=============  =====================  ======================================================

plus ``q_grad``, ``k_grad``, ``v_grad``, ``pattern_grad`` (∂L/∂α) and ``z_grad`` (u_i = ∂L/∂o_i),
each the shape of its tensor; ``allowed`` [B, 1, T, Tk] bool marks the entries the mask lets
through; ``scaling`` is the factor in s_ij = scaling · q_iᵀk_j (+ mask). The gradients come
from ``torch.autograd.grad``: parameters' ``.grad`` are left untouched. The model runs in eval
mode (no dropout) for the call and its attention implementation is restored afterwards.

Llama-family eager kernels take the softmax in float32 whatever the model's dtype, so in a
float64 model α (and every identity downstream of it) is exact to ~1e-7 relative, not 1e-15.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask

from .errors import InterpError, NonFiniteActivationError
from .families import AttentionGeometry
from .model import InterpModel
from .sites import Site, resolve_layers
from .token_batch import TokenBatch

TAPS_IMPLEMENTATION = "bayesgeom_taps"
_FIELDS = ("q", "k", "v", "pattern", "z")


@dataclass(frozen=True)
class HeadTensors:
    """One layer's attention tensors and their gradients (shapes in the module docstring),
    detached on the CPU in the model's dtype."""

    layer: int
    scaling: float
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    pattern: torch.Tensor
    z: torch.Tensor
    allowed: torch.Tensor
    q_grad: torch.Tensor
    k_grad: torch.Tensor
    v_grad: torch.Tensor
    pattern_grad: torch.Tensor
    z_grad: torch.Tensor
    score_grad: torch.Tensor


@dataclass(frozen=True)
class AttentionGradients:
    """The loss (a float, in the loss function's units) and the taps of each requested layer."""

    loss: float
    geometry: AttentionGeometry
    layers: dict[int, HeadTensors]


class _Session:
    """What the registered kernel writes to while :func:`attention_gradients` runs."""

    def __init__(self, layer_of: dict[int, int]):
        self.layer_of = layer_of  # id(attention module) -> layer index
        self.kept: dict[int, dict[str, Any]] = {}


_ACTIVE: list[_Session] = []


def _taps_kernel(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                 value: torch.Tensor, attention_mask: torch.Tensor | None, **kw: Any,
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise InterpError(f"{type(module).__name__} has no eager_attention_forward in its "
                          "modeling file; gradient taps cannot read its attention")
    session = _ACTIVE[-1] if _ACTIVE else None
    layer = None if session is None else session.layer_of.get(id(module))
    if layer is None or session is None:
        return eager(module, query, key, value, attention_mask, **kw)
    if attention_mask is None or attention_mask.dtype == torch.bool:
        raise InterpError("gradient taps need the eager kernel's additive float mask; got "
                          f"{None if attention_mask is None else attention_mask.dtype}")
    B, H, T, _ = query.shape
    Tk = key.shape[-2]
    # float32's lowest value still zeroes masked entries, and keeps a float32 softmax (Llama's
    # kernels take it in float32 whatever the dtype) of a float64 model's fully masked pad rows
    # finite; -1.8e308 would become -inf there and the pad rows NaN.
    mask = attention_mask[:, :, :, :Tk]
    if mask.dtype == torch.float64:
        mask = mask.clamp(min=torch.finfo(torch.float32).min)
    probe = torch.zeros((B, H, T, Tk), dtype=query.dtype, device=query.device,
                        requires_grad=True)
    out, weights = eager(module, query, key, value, mask + probe, **kw)
    scaling = kw.get("scaling")
    session.kept[layer] = {
        "q": query, "k": key, "v": value, "pattern": weights, "z": out,
        "probe": probe, "allowed": mask > _lowest(mask.dtype) / 2,
        "scaling": float(query.shape[-1] ** -0.5 if scaling is None else scaling),
    }
    return out, weights


def _lowest(dtype: torch.dtype) -> float:
    """The mask's value for a blocked entry: the dtype's lowest, float32's for a (clamped)
    float64 mask."""
    return max(torch.finfo(dtype).min, torch.finfo(torch.float32).min)


AttentionInterface.register(TAPS_IMPLEMENTATION, _taps_kernel)
AttentionMaskInterface.register(TAPS_IMPLEMENTATION, eager_mask)


def next_token_loss(model: InterpModel, batch: TokenBatch) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of a left-padded batch over the positions whose
    token and next token are both real; a differentiable scalar.

    Example:
        >>> from bayesgeom import interp
        >>> from bayesgeom.interp.attention_taps import next_token_loss
        >>> m = interp.load(interp.EMBEDDED_NAME)
        >>> batch = m.batch(m.encode(["The cat sat on the mat."])[0])
        >>> float(next_token_loss(m, batch).detach()) > 0
        True
    """
    logits = model.backend.forward(batch)  # [B, T, V]
    ids = batch.input_ids.to(logits.device)
    real = batch.attention_mask.to(logits.device).bool()
    keep = real[:, :-1] & real[:, 1:]  # [B, T-1]
    if not bool(keep.any()):
        raise InterpError("next-token loss needs a prompt of at least two tokens")
    wide = torch.promote_types(logits.dtype, torch.float32)  # float64 models stay float64
    return F.cross_entropy(logits[:, :-1][keep].to(wide), ids[:, 1:][keep])


@contextmanager
def _taps_on(model: InterpModel, layers: list[int]) -> Iterator[_Session]:
    hf: Any = model.hf  # a PreTrainedModel (set_attn_implementation)
    if model.backend.name != "hf":
        raise InterpError("gradient taps need the 'hf' backend (plain hooks on HF modules)")
    if model.modules.adapter.attention is None:
        raise InterpError(f"{model.info.name} ({model.modules.adapter.name}) has no attention "
                          "heads to tap")
    session = _Session({id(model.modules.attention(Site("attn.pattern", L))): L
                        for L in layers})
    before = getattr(hf.config, "_attn_implementation", None)
    was_training = hf.training
    emb = hf.get_input_embeddings()
    # frozen weights still give a graph: the embeddings' output becomes a grad-requiring leaf
    handle = emb.register_forward_hook(
        lambda _m, _a, out: out if out.requires_grad else out.detach().requires_grad_())
    hf.set_attn_implementation(TAPS_IMPLEMENTATION)
    hf.eval()
    _ACTIVE.append(session)
    try:
        yield session
    finally:
        _ACTIVE.remove(session)
        handle.remove()
        hf.set_attn_implementation(before or "eager")
        hf.train(was_training)


def attention_gradients(
    model: InterpModel,
    batch: TokenBatch | None = None,
    layers: Sequence[int] | None = None,
    loss_fn: Callable[[], torch.Tensor] | None = None,
) -> AttentionGradients:
    """Every requested layer's attention tensors and their gradients for one loss.

    ``loss_fn()`` runs the forward and returns a scalar (default: :func:`next_token_loss` on
    ``batch``); ``layers`` as in :func:`interp.resolve_layers` (None: all).

    Example:
        >>> from bayesgeom import interp
        >>> from bayesgeom.interp.attention_taps import attention_gradients
        >>> m = interp.load(interp.EMBEDDED_NAME)
        >>> g = attention_gradients(m, m.batch(m.encode(["Bayes was right."])[0]), layers=[-1])
        >>> t = g.layers[29]
        >>> t.pattern.shape[1], t.v.shape[1]  # 9 query heads read 3 kv heads
        (9, 3)
    """
    if loss_fn is None:
        if batch is None:
            raise InterpError("attention_gradients needs a batch or a loss_fn")
        loss_fn = lambda: next_token_loss(model, batch)  # noqa: E731
    wanted = resolve_layers(layers, model.n_layers)
    with _taps_on(model, wanted) as session, torch.enable_grad():
        loss = loss_fn()
        if loss.ndim != 0:
            raise InterpError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
        if not bool(torch.isfinite(loss)):
            raise NonFiniteActivationError(
                f"the loss is {float(loss.detach())}: a NaN or inf arose in the forward pass")
        missing = [L for L in wanted if L not in session.kept]
        if missing:
            raise InterpError(f"layers {missing} ran no attention in this forward")
        names = [*_FIELDS, "probe"]
        inputs = [session.kept[L][n] for L in wanted for n in names]
        grads = torch.autograd.grad(loss, inputs, allow_unused=True)
    out: dict[int, HeadTensors] = {}
    for i, L in enumerate(wanted):
        kept = session.kept[L]
        g = dict(zip(names, grads[i * len(names):(i + 1) * len(names)], strict=True))
        out[L] = HeadTensors(
            layer=L, scaling=kept["scaling"], allowed=kept["allowed"].cpu(),
            **{n: _heads_first(n, kept[n].detach().cpu()) for n in _FIELDS},
            **{f"{n}_grad": _heads_first(n, _grad(g[n], kept[n])) for n in _FIELDS},
            score_grad=_grad(g["probe"], kept["probe"]),
        )
    return AttentionGradients(float(loss.detach()), model.geometry, out)


def _heads_first(name: str, x: torch.Tensor) -> torch.Tensor:
    """The kernel returns its output [B, T, H, dh]; every field is kept heads first."""
    return x.transpose(1, 2) if name == "z" else x


def _grad(g: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """A gradient on the CPU; zeros where the loss does not depend on the tensor."""
    return (torch.zeros_like(like) if g is None else g).detach().cpu()


def loss_after_value_step(model: InterpModel, loss_fn: Callable[[], torch.Tensor], layer: int,
                          delta: torch.Tensor) -> float:
    """The loss with layer ``layer``'s values moved by ``delta`` [B, Hkv, T, dh] (heads first,
    as :attr:`HeadTensors.v`), through the site ``attn.L.v``; no gradients."""
    d = delta.transpose(1, 2)  # the site's layout [B, T, Hkv, dh]

    def step(v: torch.Tensor) -> torch.Tensor:
        if v.shape != d.shape:
            raise InterpError(f"value step of shape {tuple(d.shape)} does not fit attn."
                              f"{layer}.v of shape {tuple(v.shape)}")
        return v + d.to(v.device, v.dtype)

    with model.hooks([(f"attn.{layer}.v", step)]), torch.no_grad():
        return float(loss_fn())

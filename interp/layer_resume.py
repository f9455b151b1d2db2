"""Resume a forward pass at a decoder layer from a cached residual stream.

An edit at layer ℓ cannot change layers < ℓ, so an experiment that runs many edited passes over
the same prompts (steering sweeps, random-direction nulls) only needs layers ℓ..N−1 after one
clean pass. :func:`forward_recording` runs the clean pass and keeps the residual stream entering
layer ℓ; :func:`forward_from_layer` reruns only the tail: the decoder-layer list is temporarily cut
to ``layers[ℓ:]`` and the cached tensor replaces the first remaining layer's input (every hook on
those layers, final norm and head still fires). :func:`resume_error` measures how far the resumed
clean logits are from the full pass, so a caller can verify the shortcut on its model and fall
back to full passes (architectures whose layers depend on their index in the list would differ).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from .errors import InterpError
from .hf_hooks import HFHookBackend
from .sites import resolve_layer
from .token_batch import TokenBatch

if TYPE_CHECKING:
    from .model import InterpModel

#: resumed clean logits must match the full pass to this relative error (:func:`resume_error`)
#: for a caller to use the shortcut; otherwise it runs full passes
RESUME_RTOL = 1e-4


@dataclass(frozen=True)
class LayerInput:
    """The residual stream ``hidden`` [B, T, D] entering decoder layer ``layer`` for ``batch``."""

    layer: int
    batch: TokenBatch
    hidden: torch.Tensor


def _check(model: InterpModel, layer: int) -> int:
    if not isinstance(model.backend, HFHookBackend):
        raise InterpError("resuming a forward pass at a layer needs the 'hf' backend "
                          f"(this model uses {model.info.backend!r})")
    return resolve_layer(layer, model.n_layers)


def forward_recording(model: InterpModel, batch: TokenBatch, layer: int, logits_to_keep: int = 1,
                      ) -> tuple[torch.Tensor, LayerInput]:
    """A full forward (hooks active) that also returns the input of ``layer``:
    (logits [B, T', V], :class:`LayerInput`)."""
    layer = _check(model, layer)
    kept: list[torch.Tensor] = []

    def keep(x: torch.Tensor) -> None:
        kept.append(x.detach().clone())

    h = model.add_hook(f"resid_pre.{layer}", keep)
    try:
        logits = model.forward(batch, logits_to_keep=logits_to_keep)
    finally:
        h.remove()
    return logits, LayerInput(layer, batch, kept[-1])


@contextmanager
def _tail_only(model: InterpModel, start: int, hidden: torch.Tensor) -> Iterator[None]:
    path = model.modules.adapter.layers
    parent_path, _, attr = path.rpartition(".")
    parent = model.hf
    for part in filter(None, parent_path.split(".")):
        parent = getattr(parent, part)
    full = getattr(parent, attr)
    first = model.modules.layers[start]

    def swap(_m: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        x = args[0] if args else kwargs["hidden_states"]
        if tuple(x.shape[:2]) != tuple(hidden.shape[:2]):
            raise InterpError(f"cached layer input has shape {list(hidden.shape)}, the batch "
                              f"gives {list(x.shape)}: it was recorded on another batch")
        h = hidden.to(x.device, x.dtype)
        return ((h, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": h})

    handle = first.register_forward_pre_hook(swap, with_kwargs=True, prepend=True)
    setattr(parent, attr, nn.ModuleList(list(full)[start:]))
    try:
        yield
    finally:
        setattr(parent, attr, full)
        handle.remove()


def forward_from_layer(model: InterpModel, cached: LayerInput, logits_to_keep: int = 1
                       ) -> torch.Tensor:
    """Logits [B, T', V] of ``cached.batch`` computed from layer ``cached.layer`` on, with every
    active hook (interventions, captures) at that layer and after applied."""
    start = _check(model, cached.layer)
    if start == 0:
        return model.forward(cached.batch, logits_to_keep=logits_to_keep)
    with _tail_only(model, start, cached.hidden):
        return model.forward(cached.batch, logits_to_keep=logits_to_keep)


def resume_error(model: InterpModel, cached: LayerInput, full_logits: torch.Tensor) -> float:
    """max |resumed − full| / max(max |full|, 1e-12) for the clean logits of one batch."""
    k = int(full_logits.shape[1])
    resumed = forward_from_layer(model, cached, logits_to_keep=k).float()
    ref = full_logits.float()
    return float((resumed - ref).abs().max() / ref.abs().max().clamp(min=1e-12))

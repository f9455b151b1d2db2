"""Per-head key projections W_K read from a loaded model, for Paper III's key orthogonality.

The projection module of each layer's ``attn.L.k`` site is applied to the identity (minus its
output at zero, which removes any bias), giving its linear map [d_in, out]; the output columns
are then split into heads exactly as the ``attn.L.k`` site splits activations (fused layouts
included: GPT-NeoX's per-head ``[H, 3, dh]``, GPT-2's ``[3, H, dh]``). So no family needs its own
weight-reading code, and the heads match the captured keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from interp import InterpModel
from interp.qkv_layout import split_fused


def _in_features(module: nn.Module) -> int:
    if isinstance(module, nn.Linear):
        return module.in_features
    w = getattr(module, "weight", None)
    if w is not None and hasattr(module, "nf"):  # transformers' Conv1D: weight [in, out]
        return int(w.shape[0])
    if w is not None and w.ndim == 2:
        return int(w.shape[1])
    raise TypeError(f"cannot read the input width of {type(module).__name__}")


def key_weights(model: InterpModel, layer: int) -> np.ndarray:
    """W_K of every key/value head of ``layer``: [Hkv, d_model, d_head] float64 (columns are
    the d_head key directions in the residual space)."""
    site = model.resolve_sites(f"attn.{layer}.k")[0]
    module, which = model.modules.projection(site)
    p = next(module.parameters())
    d_in = _in_features(module)
    g = model.geometry
    with torch.no_grad():
        eye = torch.eye(d_in, dtype=p.dtype, device=p.device)
        lin = (module(eye) - module(torch.zeros_like(eye[:1]))).float()  # [d_in, out]
    if which is not None:
        heads = split_fused(lin, which, model.modules.adapter.qkv_layout, g.n_heads)
    else:
        heads = lin.unflatten(-1, (lin.shape[-1] // g.d_head, g.d_head))
    return heads.permute(1, 0, 2).cpu().double().numpy()


def all_key_weights(model: InterpModel, layers: Sequence[int] | None = None) -> list[np.ndarray]:
    """:func:`key_weights` for ``layers`` (default: every layer)."""
    return [key_weights(model, L) for L in (range(model.n_layers) if layers is None else layers)]


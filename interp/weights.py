"""Per-head projection weights read from a loaded model, through the same layout objects that
split activations -- so weight-based probes (key orthogonality) see exactly the heads that the
``attn.L.q`` / ``attn.L.k`` / ``attn.L.v`` sites capture, for every family.

The projection module is applied to the identity (minus its output at zero, which is the
bias): this gives its linear map [d_in, out] whatever the module type (``nn.Linear``, GPT-2's
transposed ``Conv1D``), and the output columns are split into heads by the family's
:class:`~interp.qkv_layout.QKVLayout`.

Example:
    >>> from bayesgeom import interp  # doctest: +SKIP
    >>> w, b = projection_weights(interp.load(), "attn.-1.k")  # doctest: +SKIP
    >>> w.shape  # [Hkv, d_model, d_head] on SmolLM2  # doctest: +SKIP
    torch.Size([3, 576, 64])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .errors import InterpError
from .families.adapter import in_features

if TYPE_CHECKING:
    from .model import InterpModel


def projection_weights(model: InterpModel, site: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(W [n_heads, d_in, d_head], b [n_heads, d_head]) in float64 for an ``attn.L.{q,k,v}``
    site of an :class:`interp.InterpModel` (n_heads: query heads for q, kv heads for k and v);
    head h's output is ``x @ W[h] + b[h]``."""
    s = model.resolve_sites(site)
    if len(s) != 1 or s[0].kind not in ("attn.q", "attn.k", "attn.v"):
        raise InterpError(f"projection_weights needs one attn.L.q, attn.L.k or attn.L.v site, "
                          f"got {site!r}")
    module, which, layout = model.modules.projection(s[0])
    p = next(module.parameters())
    heads = model.geometry.heads
    with torch.no_grad():
        eye = torch.eye(in_features(module), dtype=p.dtype, device=p.device)
        zero = module(torch.zeros_like(eye[:1]))
        lin = (module(eye) - zero).double()  # [d_in, out]
        w = layout.split(lin, which, heads)  # [d_in, n, dh]
        b = layout.split(zero.double(), which, heads)[0]  # [n, dh]
    return w.permute(1, 0, 2).cpu().contiguous(), b.cpu()

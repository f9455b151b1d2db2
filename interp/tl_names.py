"""TransformerLens hook names beside our site names: the one table of which hook point holds
which site (the TransformerLens backend, :mod:`interp.tl_bridge`, hooks them), read backwards
so that a hook name given where a site is asked for is understood.

A hook that holds exactly a site's tensor is accepted as that site (``blocks.3.hook_resid_post``
is ``resid_post.3``); a hook with no exact site (``hook_embed``, ``ln_final.hook_normalized``,
``blocks.L.hook_resid_mid`` ...) gets the nearest site as a hint, never a silent substitute.

Example:
    >>> from_tl("blocks.3.hook_resid_post"), from_tl("blocks.0.attn.hook_v"), from_tl("x")
    ('resid_post.3', 'attn.0.v', None)
    >>> tl_hint("blocks.2.hook_resid_mid")
    'resid_pre.2 plus attn_out.2 (the residual stream between attention and MLP)'
"""

from __future__ import annotations

import re

#: site kind -> the TransformerBridge hook point holding the same tensor (``{L}``: the layer)
TL_HOOKS = {
    "resid_pre": "blocks.{L}.hook_resid_pre",
    "resid_post": "blocks.{L}.hook_resid_post",
    "attn.q": "blocks.{L}.attn.hook_q",
    "attn.k": "blocks.{L}.attn.hook_k",
    "attn.v": "blocks.{L}.attn.hook_v",
    "attn.pattern": "blocks.{L}.attn.hook_pattern",
    "attn.z": "blocks.{L}.attn.hook_z",
    "attn_out": "blocks.{L}.hook_attn_out",
    "mlp_out": "blocks.{L}.hook_mlp_out",
    "final_norm.scale": "ln_final.hook_scale",
    "logits": "hook_unembed",
}

#: hook points with no site of the same tensor -> the nearest site(s), as a hint ({L}: layer)
NEAREST = {
    "hook_embed": "resid_pre.0 (the residual entering block 0: token embeddings, plus the "
                  "positional ones where the model adds them)",
    "hook_pos_embed": "resid_pre.0 (the residual entering block 0, positional embeddings "
                      "included)",
    "ln_final.hook_normalized": "resid_post.-1 (the final norm's input) or final_norm.scale "
                                "(its divisor)",
    "blocks.{L}.hook_resid_mid": "resid_pre.{L} plus attn_out.{L} (the residual stream "
                                 "between attention and MLP)",
    "blocks.{L}.attn.hook_result": "attn.{L}.z (per-head outputs before the out-projection)",
    "blocks.{L}.attn.hook_attn_scores": "attn.{L}.pattern (the probabilities, after softmax)",
    "blocks.{L}.attn.hook_rot_q": "attn.{L}.q (queries before RoPE)",
    "blocks.{L}.attn.hook_rot_k": "attn.{L}.k (keys before RoPE)",
    "blocks.{L}.mlp.hook_pre": "mlp_out.{L} (the MLP's output)",
    "blocks.{L}.mlp.hook_post": "mlp_out.{L} (the MLP's output)",
    "blocks.{L}.hook_attn_in": "resid_pre.{L} (the attention block's input, before its norm)",
    "blocks.{L}.hook_mlp_in": "resid_pre.{L} plus attn_out.{L} (the MLP's input, before its "
                              "norm)",
    "blocks.{L}.ln1.hook_normalized": "resid_pre.{L} (the norm's input)",
    "blocks.{L}.ln2.hook_normalized": "resid_pre.{L} plus attn_out.{L} (the norm's input)",
}

_LAYER = r"(-?\d+|\*)"


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(template).replace(r"\{L\}", _LAYER) + "$")


_EXACT = [(kind, _pattern(t)) for kind, t in TL_HOOKS.items()]
_NEAR = [(hint, _pattern(t)) for t, hint in NEAREST.items()]


def _site(kind: str, layer: str | None) -> str:
    if layer is None:
        return kind
    if kind.startswith("attn."):
        return f"attn.{layer}.{kind[5:]}"
    return f"{kind}.{layer}"


def from_tl(name: str) -> str | None:
    """Our site name for the TransformerLens hook ``name`` holding the same tensor
    (``blocks.*.hook_resid_post`` -> ``resid_post.*``), or None."""
    for kind, pat in _EXACT:
        m = pat.match(name)
        if m:
            return _site(kind, m.group(1) if pat.groups else None)
    return None


def tl_hint(name: str) -> str | None:
    """The nearest site(s) to a TransformerLens hook that holds no site's tensor, or None."""
    for hint, pat in _NEAR:
        m = pat.match(name)
        if m:
            return hint.replace("{L}", m.group(1)) if pat.groups else hint
    return None

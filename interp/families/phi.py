"""Phi (Phi-1/1.5/2): separate q/k/v projections, ``dense`` out-projection, parallel MLP."""

from ..qkv_layout import SeparateQKV
from .adapter import FamilyAdapter

PHI = FamilyAdapter(
    name="phi",
    model_types=("phi",),
    layers="model.layers",
    attention="self_attn",
    qkv=SeparateQKV("q_proj", "k_proj", "v_proj"),
    out_proj="dense",
    mlp="mlp",
    final_norm="model.final_layernorm",
    lm_head="lm_head",
    description="Phi-1/1.5/2 (partial RoPE, LayerNorm, parallel attention + MLP)",
)

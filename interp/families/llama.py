"""Llama (Llama-2/3, SmolLM2): separate q/k/v projections, GQA, RMSNorm."""

from interp.families.adapter import FamilyAdapter
from interp.qkv_layout import SeparateQKV

LLAMA = FamilyAdapter(
    name="llama",
    model_types=("llama",),
    layers="model.layers",
    attention="self_attn",
    qkv=SeparateQKV("q_proj", "k_proj", "v_proj"),
    out_proj="o_proj",
    mlp="mlp",
    final_norm="model.norm",
    lm_head="lm_head",
    description="Llama-2/3, SmolLM2 (GQA, RoPE, RMSNorm, gated MLP)",
)

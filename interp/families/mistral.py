"""Mistral: the Llama layout with sliding-window attention."""

from interp.families.adapter import FamilyAdapter

MISTRAL = FamilyAdapter(
    name="mistral",
    model_types=("mistral",),
    layers="model.layers",
    attention="self_attn",
    q="q_proj",
    k="k_proj",
    v="v_proj",
    out_proj="o_proj",
    mlp="mlp",
    final_norm="model.norm",
    lm_head="lm_head",
    description="Mistral (GQA, sliding-window attention, RoPE, RMSNorm)",
)

"""GPT-NeoX (Pythia): fused ``query_key_value`` laid out per head, parallel residual."""

from ..qkv_layout import FusedPerHead
from .adapter import FamilyAdapter

GPT_NEOX = FamilyAdapter(
    name="gpt_neox",
    model_types=("gpt_neox",),
    layers="gpt_neox.layers",
    attention="attention",
    qkv=FusedPerHead("query_key_value"),
    out_proj="dense",
    mlp="mlp",
    final_norm="gpt_neox.final_layer_norm",
    lm_head="embed_out",
    description="GPT-NeoX / Pythia (fused per-head QKV, RoPE, LayerNorm)",
)

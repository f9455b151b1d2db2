"""GPT-2 (and the wind-tunnel transformer): one Conv1D ``c_attn`` laid out ``[q | k | v]``."""

from ..qkv_layout import FusedBlocks
from .adapter import FamilyAdapter

GPT2 = FamilyAdapter(
    name="gpt2",
    model_types=("gpt2",),
    layers="transformer.h",
    attention="attn",
    qkv=FusedBlocks("c_attn"),
    out_proj="c_proj",
    mlp="mlp",
    final_norm="transformer.ln_f",
    lm_head="lm_head",
    description="GPT-2 and the wind-tunnel transformer (fused [q|k|v], learned positions)",
)

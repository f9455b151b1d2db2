"""Llama (Llama-2/3, SmolLM2): separate q/k/v projections, GQA, RMSNorm.

The same layout serves HF's Arcee (a Llama with a non-gated MLP) and the Llama-style wind-tunnel
transformer built on it (``model_type`` ``bayesgeom_llama``: learned, rotary or no positions,
one kv head per query head); that one loads with ``interp.load(path)`` once ``windtunnel`` is
imported in the process (its Auto-class registration is global).
"""

from ..qkv_layout import SeparateQKV
from .adapter import FamilyAdapter

LLAMA = FamilyAdapter(
    name="llama",
    model_types=("llama", "arcee", "bayesgeom_llama"),
    layers="model.layers",
    attention="self_attn",
    qkv=SeparateQKV("q_proj", "k_proj", "v_proj"),
    out_proj="o_proj",
    mlp="mlp",
    final_norm="model.norm",
    lm_head="lm_head",
    description="Llama-2/3, SmolLM2, Arcee and the Llama-style wind-tunnel transformer "
                "(GQA, RoPE, RMSNorm)",
)

"""The generic adapter: find the modules of an unlisted HF causal LM by their standard names.

Separate ``q_proj``/``k_proj``/``v_proj`` (or ``query``/``key``/``value``) projections are
supported, and a single fused ``qkv_proj`` laid out as ``[q | k | v]`` blocks (GQA included:
Phi-3 and others). Any other fused QKV is not split (its sites raise, naming the site), because
guessing the layout silently returns wrong heads.
"""

from __future__ import annotations

from torch import nn

from ..errors import UnsupportedArchitectureError
from ..qkv_layout import FusedBlocks, QKVLayout, SeparateQKV
from .adapter import FamilyAdapter, _get

LAYER_LISTS = ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers",
               "transformer.layers", "transformer.blocks", "model.blocks", "layers", "blocks")
ATTENTION = ("self_attn", "attention", "attn", "self_attention")
Q = ("q_proj", "query", "q")
K = ("k_proj", "key", "k")
V = ("v_proj", "value", "v")
#: fused projections whose layout is known: [q | k | v] blocks of H·dh, Hkv·dh, Hkv·dh
FUSED_BLOCKS = ("qkv_proj",)
OUT = ("o_proj", "out_proj", "dense", "c_proj", "wo")
MLP = ("mlp", "feed_forward", "ffn")
FINAL_NORM = ("model.norm", "model.final_layernorm", "model.final_layer_norm", "transformer.ln_f",
              "gpt_neox.final_layer_norm", "model.decoder.final_layer_norm", "transformer.norm_f",
              "norm", "ln_f")


def _first(root: nn.Module | None, names: tuple[str, ...]) -> str | None:
    if root is None:
        return None
    return next((n for n in names if _get(root, n) is not None), None)


def _is_layer_list(m: nn.Module | None) -> bool:
    return isinstance(m, nn.ModuleList) and len(m) > 0


def _qkv(attn: nn.Module | None) -> QKVLayout | None:
    q, k, v = _first(attn, Q), _first(attn, K), _first(attn, V)
    if q and k and v:
        return SeparateQKV(q, k, v)
    fused = _first(attn, FUSED_BLOCKS)
    return FusedBlocks(fused) if fused else None


def discover(model: nn.Module) -> FamilyAdapter:
    """A :class:`FamilyAdapter` for ``model`` built from standard module names."""
    layers_path = next((p for p in LAYER_LISTS if _is_layer_list(_get(model, p))), None)
    if layers_path is None:
        raise UnsupportedArchitectureError(
            f"unsupported architecture {type(model).__name__}: no decoder-layer list under any "
            f"of {', '.join(LAYER_LISTS)}, so no site (resid_pre.0 first) can be located; "
            "add a family adapter in interp/families/"
        )
    layer0 = _get(model, layers_path + ".0")
    attn_path = _first(layer0, ATTENTION)
    attn = _get(layer0, attn_path) if layer0 is not None and attn_path else None
    output_embeddings = getattr(model, "get_output_embeddings", None)  # an HF PreTrainedModel's
    head = output_embeddings() if callable(output_embeddings) else None
    head_path = next((n for n, m in model.named_modules() if head is not None and m is head), None)
    model_type = str(getattr(getattr(model, "config", None), "model_type", "unknown"))
    return FamilyAdapter(
        name="generic",
        model_types=(model_type,),
        layers=layers_path,
        attention=attn_path,
        qkv=_qkv(attn),
        out_proj=_first(attn, OUT),
        mlp=_first(layer0, MLP),
        final_norm=_first(model, FINAL_NORM),
        lm_head=head_path,
        description=f"generic adapter for {model_type} (standard module names)",
    )

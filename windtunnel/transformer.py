"""The wind-tunnel transformer: a stock Hugging Face ``GPT2LMHeadModel`` built from a preset.

Pre-LayerNorm blocks, learned absolute positions, GELU MLP, tied embedding/unembedding, no
dropout. Because it is a stock HF class, ``save_pretrained``/``from_pretrained`` work without
bayesgeom, and ``interp`` hooks it exactly as it hooks a pretrained LLM. The paper's production
model uses RMSNorm and bias-free attention (2,677,440 parameters: :mod:`windtunnel.llama`, arch
``llama``); the GPT-2 layout adds LayerNorm and attention biases and has one position fewer
(2,684,352 parameters for bijection V = 20, +0.26 %).

Arch ``transformer`` (:data:`TRANSFORMER`); the preset's parameter count,
:func:`transformer_params`, is the target every baseline is matched to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from transformers import GPT2Config, GPT2LMHeadModel, PretrainedConfig

from .arch_spec import ArchSpec, SavedModelSpec, n_params
from .task import TaskConfigError, TokenTask


@dataclass(frozen=True)
class TransformerPreset:
    """Depth, heads, width and MLP width of a wind-tunnel transformer."""

    n_layer: int
    n_head: int
    d_model: int
    d_ff: int


TRANSFORMER_PRESETS: dict[str, TransformerPreset] = {
    # Paper I production size: 6 layers, 6 heads, d_model 192, d_ff 768.
    "paper": TransformerPreset(n_layer=6, n_head=6, d_model=192, d_ff=768),
    # Paper I's HMM model (spec §1.5, the authors' gpt_mini): 9 layers, 8 heads, d_model 256,
    # d_ff 1024. The paper's "2.68M" for it is arithmetically inconsistent (9 such blocks alone
    # are ~7.1M); these are the sizes of the released code.
    "paper-hmm": TransformerPreset(n_layer=9, n_head=8, d_model=256, d_ff=1024),
    # Trains to < 0.01 bits on bijection V = 20 within 10 minutes on 2 CPU cores (README table).
    "small": TransformerPreset(n_layer=2, n_head=4, d_model=64, d_ff=256),
    # The small width at twice the depth: the HMM filter is a recursion over observations, which
    # a transformer unrolls one step per layer (benchmarks/hmm_time_to_bits.py compares the two).
    "small-deep": TransformerPreset(n_layer=4, n_head=4, d_model=64, d_ff=256),
    # A few-second model for tests.
    "tiny": TransformerPreset(n_layer=2, n_head=2, d_model=32, d_ff=64),
}


def get_preset(name: str) -> TransformerPreset:
    if name not in TRANSFORMER_PRESETS:
        raise TaskConfigError(
            f"unknown preset {name!r}; available: {', '.join(TRANSFORMER_PRESETS)}"
        )
    return TRANSFORMER_PRESETS[name]


def transformer_config(task: TokenTask, preset: TransformerPreset) -> GPT2Config:
    """The ``GPT2Config`` for ``task`` at ``preset`` size (positions cover ``task.max_seq_len``)."""
    if preset.d_model % preset.n_head:
        raise TaskConfigError(
            f"d_model {preset.d_model} is not divisible by n_head {preset.n_head}"
        )
    return GPT2Config(
        vocab_size=task.vocab_size,
        n_positions=task.max_seq_len,
        n_embd=preset.d_model,
        n_layer=preset.n_layer,
        n_head=preset.n_head,
        n_inner=preset.d_ff,
        activation_function="gelu",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        bayesgeom_preset=asdict(preset),
    )


def build_transformer(task: TokenTask, preset: TransformerPreset) -> GPT2LMHeadModel:
    model = GPT2LMHeadModel(transformer_config(task, preset))
    # Eager attention is ~30 % faster than sdpa for these tiny CPU models and returns patterns.
    model.set_attn_implementation("eager")
    return model


def transformer_params(task: TokenTask, preset: str) -> int:
    """Parameter count of the ``transformer`` arch for ``task`` at ``preset`` (counted on the
    meta device): the count the baselines are matched to."""
    with torch.device("meta"):
        return n_params(GPT2LMHeadModel(transformer_config(task, get_preset(preset))))


def attention_bytes(preset: str, n: int, seq_len: int, layers: int | None = None) -> int:
    """Estimated memory of the attention weights of an ``n``-sequence batch: float32
    [n, heads, T, T], two copies (scores and probabilities) per layer, for ``layers`` layers
    (default all: training keeps them for the backward pass). Measured: a bijection V = 400
    step on the small preset peaks 5.5 GiB above its batch, this estimate plus the logits
    says 5.4 GiB. The Llama-style archs hold the same patterns (eager)."""
    p = get_preset(preset)
    return 2 * 4 * n * p.n_head * seq_len * seq_len * (p.n_layer if layers is None else layers)


def attention_activation_bytes(task: TokenTask, preset: str, n: int, layers: int | None) -> int:
    """:func:`attention_bytes` at the task's sequence length (an ``ArchSpec`` estimate)."""
    return attention_bytes(preset, n, task.seq_len, layers)


#: what the attention estimate holds, in a memory refusal
ATTENTION_WHAT = "attention [{n}, heads, {T}, {T}]"


def preset_sizes(preset: str, params: int) -> dict[str, int]:
    """The preset's depth, heads, width and MLP width, with ``params``."""
    p = get_preset(preset)
    return {"n_layer": p.n_layer, "n_head": p.n_head, "d_model": p.d_model, "d_ff": p.d_ff,
            "params": params}


def _n_positions(config: PretrainedConfig) -> int:
    return int(config.n_positions)


#: a saved GPT-2 opens with the eager attention it trained with (identical logits)
GPT2_SAVED = SavedModelSpec("gpt2", final_norm="transformer.ln_f",
                            load_kwargs={"attn_implementation": "eager"},
                            position_limit=_n_positions)

TRANSFORMER = ArchSpec(
    "transformer", GPT2_SAVED,
    build=lambda task, preset: build_transformer(task, get_preset(preset)),
    sizes=lambda task, preset: preset_sizes(preset, transformer_params(task, preset)),
    activation_bytes=attention_activation_bytes, activation_what=ATTENTION_WHAT, attention=True)

"""Tiny random-initialised models of every family the GPU session checks, built from their
configs in memory (no Hub, no files, no tokenizer: prompts are token-id lists).

Each builder returns a fresh ``*ForCausalLM`` in float32 on the CPU, deterministic in the seed;
the session moves a copy to each (device, dtype) it compares. Sizes: width 32, 2 layers,
4 query heads (2 kv heads where the family has GQA), vocabulary :data:`VOCAB`, 64 positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

VOCAB, WIDTH, LAYERS, HEADS, CTX = 64, 32, 2, 4, 64


@dataclass(frozen=True)
class Family:
    """One family: its name, whether it has attention heads (taps, ``dynamics verify``) and
    how to build its tiny model."""

    name: str
    attention: bool
    build: Callable[[], nn.Module]


def _common() -> dict:
    return dict(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                max_position_embeddings=CTX, initializer_range=0.2)


def _gpt_neox() -> nn.Module:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    return GPTNeoXForCausalLM(GPTNeoXConfig(**_common()))


def _llama_gqa() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**_common(), num_key_value_heads=2))


def _mistral_sliding() -> nn.Module:
    from transformers import MistralConfig, MistralForCausalLM

    return MistralForCausalLM(MistralConfig(**_common(), num_key_value_heads=2,
                                            sliding_window=3))


def _phi() -> nn.Module:
    from transformers import PhiConfig, PhiForCausalLM

    return PhiForCausalLM(PhiConfig(**_common()))


def _gemma3() -> nn.Module:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(**_common(), num_key_value_heads=2, head_dim=WIDTH // HEADS,
                           sliding_window=3, layer_types=["sliding_attention", "full_attention"],
                           pad_token_id=0, bos_token_id=None, eos_token_id=None)
    return Gemma3ForCausalLM(cfg)


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=CTX, n_embd=WIDTH,
                                      n_layer=LAYERS, n_head=HEADS, initializer_range=0.2,
                                      bos_token_id=None, eos_token_id=None))


def _windtunnel(arch: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        from bayesgeom.windtunnel import make_task
        from bayesgeom.windtunnel.architectures import build_model

        return build_model(make_task("bijection", V=6), arch, "tiny", seed=0)

    return build


FAMILIES: tuple[Family, ...] = (
    Family("gpt_neox", True, _gpt_neox),
    Family("llama_gqa", True, _llama_gqa),
    Family("mistral_sliding", True, _mistral_sliding),
    Family("phi", True, _phi),
    Family("gemma3", True, _gemma3),
    Family("gpt2", True, _gpt2),
    Family("windtunnel_transformer", True, _windtunnel("transformer")),
    Family("windtunnel_llama", True, _windtunnel("llama")),
    Family("lstm", False, _windtunnel("lstm")),
    Family("mamba", False, _windtunnel("mamba")),
)


def build(family: Family, seed: int = 0) -> nn.Module:
    """A fresh float32 CPU model of ``family`` in eval mode (seeded)."""
    torch.manual_seed(seed)
    return family.build().eval()


def vocab_of(model: nn.Module) -> int:
    """The model's vocabulary size (the wind tunnels' differs from :data:`VOCAB`)."""
    return int(model.config.vocab_size)

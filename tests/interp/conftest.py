"""Fixtures: tiny random-initialised models of each family, saved with a tokenizer trained
offline, plus a tiny wind-tunnel transformer. Session-scoped: built once (well under a second)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    PhiConfig,
    PhiForCausalLM,
    PreTrainedTokenizerFast,
)

from bayesgeom import interp

CORPUS = [
    "The capital of France is Paris.",
    "A posterior is a prior updated by evidence.",
    "Attention routes information between positions in the sequence.",
    "Entropy measures uncertainty in bits.",
    "the cat sat on the mat and the dog sat on the log",
]
PROMPTS = [
    "The capital of France is",
    "Entropy measures",
    "Attention routes information between positions",
    "A prior",
]
WIDTH, LAYERS, HEADS, CTX = 32, 2, 4, 64


@dataclass(frozen=True)
class TinyModel:
    """A saved tiny model: its directory and family name."""

    family: str
    path: Path


def train_tokenizer() -> PreTrainedTokenizerFast:
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<unk>", "<pad>", "<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(CORPUS * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                                   eos_token="<eos>", bos_token="<eos>")


def tiny_hf_model(family: str, vocab: int) -> torch.nn.Module:
    common = dict(vocab_size=vocab, hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  max_position_embeddings=CTX, initializer_range=0.2)
    torch.manual_seed(0)
    if family == "gpt_neox":
        return GPTNeoXForCausalLM(GPTNeoXConfig(**common))
    if family == "phi":
        return PhiForCausalLM(PhiConfig(**common))
    if family == "llama":
        return LlamaForCausalLM(LlamaConfig(**common, num_key_value_heads=2))
    if family == "mistral":
        return MistralForCausalLM(MistralConfig(**common, num_key_value_heads=2, sliding_window=3))
    if family == "phi3":  # one fused qkv_proj laid out [q | k | v] under GQA (generic adapter)
        return Phi3ForCausalLM(Phi3Config(**common, num_key_value_heads=2, pad_token_id=0,
                                          bos_token_id=None, eos_token_id=None))
    raise ValueError(family)


@pytest.fixture(scope="session")
def tokenizer() -> PreTrainedTokenizerFast:
    return train_tokenizer()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory, tokenizer) -> dict[str, TinyModel]:
    """family -> saved model directory (HF families with a tokenizer; wind-tunnel without)."""
    root = tmp_path_factory.mktemp("tiny-models")
    out: dict[str, TinyModel] = {}
    for fam in ("gpt_neox", "phi", "llama", "mistral", "phi3"):
        d = root / fam
        tiny_hf_model(fam, len(tokenizer)).save_pretrained(d)
        tokenizer.save_pretrained(d)
        out[fam] = TinyModel(fam, d)
    from bayesgeom.windtunnel import make_task
    from bayesgeom.windtunnel.architectures import build_model

    d = root / "windtunnel"
    build_model(make_task("bijection", V=6), "transformer", "tiny", seed=0).save_pretrained(d)
    out["windtunnel"] = TinyModel("gpt2", d)
    return out


@pytest.fixture(scope="session")
def wt_prompts() -> torch.Tensor:
    """Wind-tunnel token sequences of different lengths (bijection V = 6)."""
    from bayesgeom.windtunnel import make_task

    ids = make_task("bijection", V=6).sample(4, 0).input_ids
    return ids


@pytest.fixture(scope="session")
def family_prompts(wt_prompts: torch.Tensor) -> dict[str, list]:
    """Prompts of different lengths: strings for HF families, token lists for the wind tunnel."""
    wt = wt_prompts
    out: dict[str, list] = {f: list(PROMPTS) for f in ("gpt_neox", "phi", "llama", "mistral",
                                                        "phi3")}
    out["windtunnel"] = [wt[0, :9].tolist(), wt[1, :4].tolist(), wt[2].tolist(),
                         wt[3, :6].tolist()]
    return out


@pytest.fixture(scope="session")
def smollm2():
    """The real embedded SmolLM2-135M (converted into the user cache on first use)."""
    from bayesgeom import interp

    return interp.load()


@pytest.fixture(scope="module")
def llama(tiny_models):
    """The tiny Llama (GQA) model, loaded once per test module."""
    return interp.load(tiny_models["llama"].path)


@pytest.fixture(scope="module")
def prompts(family_prompts):
    return family_prompts["llama"]

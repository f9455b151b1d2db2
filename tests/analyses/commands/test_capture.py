"""``bayesgeom capture`` and ``bayesgeom models`` on a tiny random model saved with a tokenizer."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from bayesgeom.analyses.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(["the capital of France is Paris"] * 5, trainers.BpeTrainer(
        vocab_size=280, special_tokens=["<unk>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>")
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("cli-model")
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                 num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=2, max_position_embeddings=32)
                     ).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_capture_writes_a_store(model_dir, tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("The capital of France is\nParis is\nthe\n")
    out = tmp_path / "store"
    assert main(["capture", "--model", str(model_dir), "--prompts", str(prompts), "--sites",
                 "resid_post.*", "attn.-1.v", "--positions", "all", "--out", str(out),
                 "--no-progress"]) == 0
    assert "-> " in capsys.readouterr().out
    man = json.loads((out / "manifest.json").read_text())
    assert man["complete"] and man["sites"] == ["resid_post.0", "resid_post.1", "attn.1.v"]
    shard = load_file(str(out / man["shards"][0]["file"]))
    assert shard["attn.1.v"].shape[1:] == (2, 8)
    assert shard["prompt_index"].tolist()[-1] == 2


@pytest.mark.parametrize("lines, sites, msg", [
    ("a\n\nb\n", ["resid_post.0"], "line 2 is empty"),
    ("", ["resid_post.0"], "holds no prompts"),
    ("a\n", ["resid_mid.0"], "unknown site 'resid_mid.0'"),
    ("a\n", ["attn.5.v"], "valid layers are 0..1"),
])
def test_capture_bad_input_is_one_clear_error(model_dir, tmp_path, capsys, lines, sites, msg):
    prompts = tmp_path / "p.txt"
    prompts.write_text(lines)
    rc = main(["capture", "--model", str(model_dir), "--prompts", str(prompts), "--sites",
               *sites, "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("bayesgeom: error:") and msg in err


def test_capture_unknown_model_offline_is_one_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    prompts = tmp_path / "p.txt"
    prompts.write_text("a\n")
    rc = main(["capture", "--model", "no-org/no-model", "--prompts", str(prompts), "--sites",
               "resid_post.0", "--out", str(tmp_path / "o"), "--no-progress"])
    assert rc == 2 and "not available" in capsys.readouterr().err


def test_models_lists_families_default_model_and_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path))
    assert main(["models", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in info["families"]] == ["gpt_neox", "phi", "llama", "mistral", "gpt2",
                                                   "mamba", "mamba2", "lstm"]
    assert info["default_model"]["name"] == "smollm2-135m-instruct"
    assert info["default_model"]["cache_dir"].startswith(str(tmp_path))
    assert info["backends"] == ["hf", "transformer_lens"]
    assert main(["models"]) == 0
    assert "default model: smollm2-135m-instruct" in capsys.readouterr().out

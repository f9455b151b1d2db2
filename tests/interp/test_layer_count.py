"""A model's layer count where it is known before it loads (issue 38, cause 8)."""

from __future__ import annotations

import json

import pytest

from bayesgeom.interp.layer_count import known_layer_count


def test_the_embedded_models_counts_are_in_the_catalogue():
    assert known_layer_count(None) == ("smollm2-135m-instruct", 30)
    assert known_layer_count("default") == ("smollm2-135m-instruct", 30)
    assert known_layer_count("gemma3-270m") == ("gemma-3-270m", 18)


@pytest.mark.parametrize("config, count", [
    ({"model_type": "llama", "num_hidden_layers": 4}, 4),
    ({"model_type": "gpt2", "n_layer": 3}, 3),
    ({"model_type": "gemma3", "text_config": {"num_hidden_layers": 6}}, 6),
    ({"model_type": "bayesgeom_mlp", "num_layers": 2}, None),  # a wind tunnel: counted on load
    ({"model_type": "gpt2", "n_layer": 2, "bayesgeom_preset": "tiny"}, None),
    ({"model_type": "llama"}, None),
])
def test_a_local_folder_is_read_from_its_config(tmp_path, config, count):
    (tmp_path / "config.json").write_text(json.dumps(config))
    got = known_layer_count(str(tmp_path))
    assert (got[1] if got else None) == count


def test_a_hub_name_is_read_from_the_hub_cache_alone(tmp_path, monkeypatch):
    """The cache's layout (models--org--name/refs/main -> snapshots/<commit>/config.json), as
    huggingface_hub writes it; nothing is fetched (HF_HUB_OFFLINE)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--org--model"
    for ref, commit, layers in (("main", "a" * 40, 12), ("v2", "b" * 40, 24)):
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "snapshots" / commit / "config.json").write_text(
            json.dumps({"model_type": "llama", "num_hidden_layers": layers}))
    assert known_layer_count("org/model") == ("org/model", 12)
    assert known_layer_count("org/model", revision="v2") == ("org/model", 24)
    assert known_layer_count("org/other") is None  # not in the cache
    assert known_layer_count("not a repo id!") is None


def test_unknown_without_loading_is_none(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    assert known_layer_count("org/model") is None  # a Hub name not in the cache
    assert known_layer_count(str(tmp_path)) is None  # no config.json
    (tmp_path / "config.json").write_text("{not json")
    assert known_layer_count(str(tmp_path)) is None


@pytest.mark.parametrize("config, shape", [
    ({"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8,
      "num_key_value_heads": 2}, (4, 8, 2)),
    ({"model_type": "gpt2", "n_layer": 3, "n_head": 12}, (3, 12, 12)),
    ({"model_type": "gemma3", "text_config": {"num_hidden_layers": 6, "num_attention_heads": 4,
                                              "num_key_value_heads": 1}}, (6, 4, 1)),
    ({"model_type": "mamba", "num_hidden_layers": 2}, (2, None, None)),
])
def test_head_counts_come_with_the_layer_count(tmp_path, config, shape):
    from bayesgeom.interp.layer_count import known_shape

    (tmp_path / "config.json").write_text(json.dumps(config))
    got = known_shape(str(tmp_path))[1]
    assert (got.n_layers, got.n_heads, got.n_kv_heads) == shape
    assert known_shape("default")[1].heads_of("attn.v") == 3  # SmolLM2: 3 kv heads
    assert known_shape("gemma3")[1].heads_of("attn.z") == 4

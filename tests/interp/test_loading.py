"""Loading: local directories, wind-tunnel runs/model directories/checkpoints, the generic
adapter, unsupported architectures, fast offline failures, eager switching, the cache dir."""

from __future__ import annotations

import time

import pytest
import torch
from transformers import FalconConfig, FalconForCausalLM, Qwen2Config, Qwen2ForCausalLM

from bayesgeom import interp
from bayesgeom.interp import capture
from bayesgeom.interp.errors import (
    InterpError,
    ModelNotAvailableError,
    ModelNotLoadedError,
    SiteNotLocatedError,
    UnsupportedArchitectureError,
)
from bayesgeom.interp.user_cache import cache_root


def test_local_directory_loads_with_its_tokenizer(tiny_models):
    m = interp.load(tiny_models["phi"].path, dtype="float32")
    assert m.info.source == "local" and m.info.family == "phi" and m.info.dtype == "float32"
    assert m.tokenizer is not None and m.n_ctx == 64
    assert "attn.1.pattern" in m.sites() and len(m.sites()) == 9 * 2 + 2


def test_a_directory_without_a_model_says_where_runs_are_opened(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(interp.ModelNotAvailableError, match=r"analyses\.open_model"):
        interp.load(tmp_path)


def test_generic_adapter_handles_an_unlisted_family(tmp_path, tokenizer):
    torch.manual_seed(0)
    hf = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=32,
                                      intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2))
    hf.save_pretrained(tmp_path / "qwen2")
    tokenizer.save_pretrained(tmp_path / "qwen2")
    m = interp.load(tmp_path / "qwen2", attn_implementation="eager")
    assert m.info.family == "generic" and m.geometry.n_kv_heads == 2
    store = capture(m, ["The capital of France is"], ["attn.*.v", "attn.*.z", "resid_post.-1"],
                    "all", progress=False)
    z, v = store["attn.1.z"], store["attn.1.v"]
    for q_head, kv_head in enumerate(m.geometry.kv_head_of_query):
        torch.testing.assert_close(z[0, q_head], v[0, kv_head], atol=1e-5, rtol=0)


def test_unsupported_pieces_name_the_site():
    torch.manual_seed(0)
    falcon = FalconForCausalLM(FalconConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2,
                                            num_attention_heads=4))
    m = interp.InterpModel(falcon)
    assert m.info.family == "generic"
    ok = capture(m, [[1, 2, 3]], ["resid_post.1", "mlp_out.0"], progress=False)
    assert ok["resid_post.1"].shape == (1, 32)
    with pytest.raises(SiteNotLocatedError, match=r"site attn\.0\.v could not be located"):
        capture(m, [[1, 2, 3]], ["attn.0.v"], progress=False)
    with pytest.raises(UnsupportedArchitectureError, match="no decoder-layer list"):
        interp.InterpModel(torch.nn.Sequential(torch.nn.Linear(2, 2)))


def test_uncached_hub_name_fails_fast_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t = time.perf_counter()
    with pytest.raises(ModelNotAvailableError) as e:
        interp.load("EleutherAI/pythia-70m-not-cached")
    assert time.perf_counter() - t < 5
    msg = str(e.value)
    assert "HF_HUB_OFFLINE" in msg and "local directory" in msg and "smollm2" in msg


def test_uncached_hub_name_fails_fast_when_the_hub_is_unreachable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    t = time.perf_counter()
    with pytest.raises(ModelNotAvailableError, match="unreachable"):
        interp.load("EleutherAI/pythia-70m-not-cached")
    assert time.perf_counter() - t < 10


def test_bad_paths_and_options(tmp_path, tiny_models):
    with pytest.raises(ModelNotAvailableError, match="no such model directory"):
        interp.load("./no/such/dir")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotAvailableError, match=r"no config\.json"):
        interp.load(tmp_path / "empty")
    with pytest.raises(InterpError, match="unknown dtype"):
        interp.load(tiny_models["llama"].path, dtype="float8")
    with pytest.raises(InterpError, match="unknown backend"):
        interp.load(tiny_models["llama"].path, backend="nnsight")


def test_patterns_switch_to_eager_and_restore(tiny_models):
    m = interp.load(tiny_models["llama"].path)  # transformers' default (sdpa)
    impl = m.hf.config._attn_implementation
    assert impl != "eager"
    store = capture(m, ["Entropy measures"], ["attn.0.pattern"], progress=False)
    torch.testing.assert_close(store["attn.0.pattern"].sum(-1), torch.ones(1, 4))
    assert m.hf.config._attn_implementation == impl


def test_cache_dir_respects_env(monkeypatch, tmp_path):
    monkeypatch.delenv("BAYESGEOM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "bayesgeom"
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    from bayesgeom.interp import embedded_model

    assert embedded_model.cached_dir().parent == tmp_path / "mine" / "models"


@pytest.mark.parametrize("spec", ["smollm2-135m-instruct", None, torch.nn.Linear(2, 2)])
def test_capture_takes_a_loaded_model_only(spec):
    with pytest.raises(ModelNotLoadedError, match=r"load it first with interp\.load\(\.\.\.\) "
                       r"or bayesgeom\.open_model\(\.\.\.\)$") as e:
        capture(spec, ["a prompt"], ["resid_post.0"], progress=False)
    assert "\n" not in str(e.value)

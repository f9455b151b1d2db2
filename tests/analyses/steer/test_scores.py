"""Steering's next-token metrics over a large vocabulary: the same numbers as float64 on the
whole [N, V] logits at once, computed a block of rows at a time from the float32 logits."""

import numpy as np
import pytest
import torch

from bayesgeom.analyses.kit.posteriors import model_posterior
from bayesgeom.analyses.steer import scores
from bayesgeom.analyses.steer.passes import PassOutput
from bayesgeom.analyses.steer.scores import CleanRef, next_token_stats, scored_logits
from bayesgeom.infotheory import entropy_bits_from_logits, kl_bits_from_logprobs


def _logits(seed: int, n: int = 9, v: int = 700) -> torch.Tensor:
    return torch.randn(n, v, generator=torch.Generator().manual_seed(seed)) * 3


def test_next_token_stats_equal_the_whole_array_in_float64(monkeypatch):
    clean, edited = _logits(0), _logits(1)
    zc, ze = clean.double(), edited.double()
    h = entropy_bits_from_logits(ze).numpy()
    kl = kl_bits_from_logprobs(torch.log_softmax(zc, -1), torch.log_softmax(ze, -1)).numpy()
    monkeypatch.setattr(scores, "CHUNK_ELEMENTS", 1500)  # two rows per block
    ref = CleanRef.of(PassOutput(clean))
    assert ref.probs is not None  # small enough to keep
    h2, top1, kl2 = next_token_stats(edited, ref)
    np.testing.assert_allclose(h2, h, rtol=1e-12)
    np.testing.assert_allclose(kl2, kl, rtol=1e-10, atol=1e-15)
    assert np.array_equal(top1, ze.argmax(-1).numpy())
    # the clean pass's own storage for its logits, no float64 copy of them
    assert ref.logits.untyped_storage().data_ptr() == clean.untyped_storage().data_ptr()
    np.testing.assert_allclose(ref.h_next, entropy_bits_from_logits(zc).numpy(), rtol=1e-12)
    assert np.array_equal(next_token_stats(clean, ref)[2], np.zeros(len(clean)))  # KL(p ‖ p)
    # past the cache budget the clean probabilities are recomputed per block: same numbers
    monkeypatch.setattr(scores, "CLEAN_CACHE_ELEMENTS", clean.numel() - 1)
    big = CleanRef.of(PassOutput(clean))
    assert big.probs is None
    for a, b in zip(next_token_stats(edited, big), (h2, top1, kl2), strict=True):
        assert np.array_equal(a, b)


def test_next_token_stats_refuse_non_finite_logits():
    z = _logits(3)
    z[4, 7] = float("-inf")
    with pytest.raises(FloatingPointError, match="NaN/inf"):
        next_token_stats(z)


def test_scored_columns_and_the_posterior_gather_before_widening():
    z = _logits(2)
    vocab = np.array([[3, 5]] * len(z))
    assert torch.equal(scored_logits(z, vocab), z.gather(1, torch.as_tensor(vocab)))
    p = model_posterior(z, vocab)
    expected = torch.softmax(z.double().gather(1, torch.as_tensor(vocab)), 1).numpy()
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    assert p.dtype == np.float64

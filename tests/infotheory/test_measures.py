"""infotheory: one implementation per measure, for numpy and torch, against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bayesgeom.infotheory import (
    calibration,
    calibration_by_group,
    entropy_bits_from_logits,
    entropy_bits_from_logprobs,
    entropy_bits_from_probs,
    kl_bits,
    kl_bits_from_logprobs,
    pearson,
    tvd,
)


def test_entropy_of_known_distributions():
    p = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.25, 0.25, 0.5]])
    np.testing.assert_allclose(entropy_bits_from_probs(p), [1.0, 0.0, 1.5])
    np.testing.assert_allclose(entropy_bits_from_probs(np.full(20, 0.05)), math.log2(20))


def test_the_three_inputs_agree_in_numpy_and_torch():
    z = np.random.default_rng(0).normal(size=(6, 9)) * 3
    p = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    ref = entropy_bits_from_probs(p)
    np.testing.assert_allclose(entropy_bits_from_logprobs(np.log(p)), ref, rtol=1e-12)
    np.testing.assert_allclose(entropy_bits_from_logits(z), ref, rtol=1e-12)
    t = torch.tensor(z, dtype=torch.float64)
    for h in (entropy_bits_from_logits(t), entropy_bits_from_logprobs(t.log_softmax(-1)),
              entropy_bits_from_probs(t.softmax(-1))):
        assert isinstance(h, torch.Tensor) and h.dtype == torch.float64
        np.testing.assert_allclose(h.numpy(), ref, rtol=1e-12)
    half = entropy_bits_from_logits(t.to(torch.bfloat16))
    assert half.dtype == torch.float32  # low precision is promoted, never kept


def test_kl_and_tvd():
    p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    assert float(kl_bits(p, q)) == pytest.approx(0.5 * math.log2(0.5 / 0.9)
                                                 + 0.5 * math.log2(0.5 / 0.1))
    assert float(kl_bits(p, log_q=np.log(q))) == pytest.approx(float(kl_bits(p, q)))
    assert float(kl_bits_from_logprobs(np.log(p), np.log(q))) == pytest.approx(
        float(kl_bits(p, q)))
    assert float(kl_bits(np.array([1.0, 0.0]), np.array([0.5, 0.5]))) == pytest.approx(1.0)
    # an impossible event stays finite: q is floored at 1e-300
    assert float(kl_bits(p, np.array([1.0, 0.0]))) == pytest.approx(
        0.5 * math.log2(0.5) + 0.5 * math.log2(0.5 / 1e-300))
    assert float(tvd(p, q)) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="exactly one"):
        kl_bits(p)


def test_pearson_is_nan_where_undefined_and_calibration_summarises():
    assert math.isnan(pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(pearson([1.0, 2.0], [2.0, 1.0], min_n=3))
    assert pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]) == pytest.approx(0.9933992677987828)
    hm, hb = np.array([1.0, 0.5, 0.2, 0.0]), np.array([1.0, 0.4, 0.0, 0.0])
    c = calibration(hm, hb)
    assert c.mae == pytest.approx(0.075) and c.n == 4 and c.h_bayes == pytest.approx(0.35)
    per = calibration_by_group(hm, hb, np.array([0, 0, 1, 1]))
    assert list(per) == ["0", "1"] and per["1"].mae == pytest.approx(0.1)
    with pytest.raises(ValueError, match="equal-length"):
        calibration(hm, hb[:2])


def test_entropy_from_logits_is_reduced_in_row_blocks_with_the_same_values(monkeypatch):
    """Large-vocabulary logits are reduced a block of rows at a time (no temporaries of their
    own size); every row's entropy is what the whole array gives at once."""
    from bayesgeom.infotheory import measures

    g = torch.Generator().manual_seed(0)
    z = torch.randn(3, 5, 1000, generator=g) * 4
    whole_t = entropy_bits_from_logprobs(torch.log_softmax(z, -1))
    whole_n = entropy_bits_from_logprobs(np.asarray(z.double()) - np.asarray(
        torch.logsumexp(z.double(), -1, keepdim=True)))
    monkeypatch.setattr(measures, "CHUNK_ELEMENTS", 2500)  # two rows per block
    assert torch.equal(entropy_bits_from_logits(z), whole_t)
    np.testing.assert_allclose(entropy_bits_from_logits(z.double().numpy()), whole_n,
                               rtol=1e-12)
    assert entropy_bits_from_logits(z[0, 0]).shape == ()
    assert isinstance(entropy_bits_from_logits(np.zeros(4)), float)
    assert float(entropy_bits_from_logits(np.zeros(4))) == pytest.approx(2.0)
    z.requires_grad_(True)
    entropy_bits_from_logits(z).sum().backward()  # still differentiable
    assert z.grad is not None and z.grad.shape == z.shape

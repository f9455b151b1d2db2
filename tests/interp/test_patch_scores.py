"""Patching scores: each equals its definition computed independently in numpy (infotheory's
numpy path), slices its per-pair data by the batch's pairs, and has a gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bayesgeom.infotheory import entropy_bits_from_probs, kl_bits
from bayesgeom.interp import (
    InterpError,
    PairScore,
    combine_scores,
    kl_score,
    logit_diff_score,
    posterior_kl_score,
)
from bayesgeom.interp.patch_scores import evaluate, metric_names

B, Q, V = 4, 2, 9


@pytest.fixture
def logits() -> torch.Tensor:
    return torch.randn(B, Q, V, generator=torch.Generator().manual_seed(0)) * 2


def test_logit_difference_per_pair_and_position(logits):
    z = logits.numpy()
    np.testing.assert_allclose(logit_diff_score(1, 2)(logits), (z[..., 1] - z[..., 2]).mean(-1),
                               rtol=1e-6)
    good, bad = torch.tensor([0, 3, 5, 8]), torch.tensor([1, 1, 1, 1])
    s = logit_diff_score(good, bad)
    ref = np.array([(z[b, :, good[b]] - z[b, :, 1]).mean() for b in range(B)])
    np.testing.assert_allclose(s(logits), ref, rtol=1e-6)
    pairs = torch.tensor([3, 1])  # a batch holding pairs 3 and 1 only
    np.testing.assert_allclose(s(logits[:2], pairs),
                               [(z[0, :, 8] - z[0, :, 1]).mean(), (z[1, :, 3] - z[1, :, 1]).mean()],
                               rtol=1e-6)
    per_q = logit_diff_score(torch.tensor([[0, 1]] * B), torch.tensor([[2, 2]] * B))(logits)
    np.testing.assert_allclose(per_q, ((z[:, 0, 0] - z[:, 0, 2]) + (z[:, 1, 1] - z[:, 1, 2])) / 2,
                               rtol=1e-6)


def test_kl_to_a_reference_run(logits):
    ref = torch.randn(B, Q, V, generator=torch.Generator().manual_seed(1))
    p = torch.softmax(ref.double(), -1).numpy()
    q = torch.softmax(logits.double(), -1).numpy()
    want = kl_bits(p, q).mean(-1)
    np.testing.assert_allclose(kl_score(ref)(logits), want, rtol=1e-9)
    assert torch.allclose(kl_score(ref)(ref), torch.zeros(B, dtype=torch.float64), atol=1e-12)
    with pytest.raises(InterpError, match="do not match"):
        kl_score(ref[:, :1])(logits)


def test_posterior_kl_restricts_and_renormalises(logits):
    hyp = [2, 4, 6]
    p_star = torch.softmax(torch.randn(B, Q, 3, generator=torch.Generator().manual_seed(2)), -1)
    out = posterior_kl_score(p_star, hyp)(logits)
    q = torch.softmax(logits[..., hyp].double(), -1).numpy()
    p = p_star.double().numpy()
    np.testing.assert_allclose(out[:, 0], kl_bits(p, q).mean(-1), rtol=1e-9)
    np.testing.assert_allclose(out[:, 1], entropy_bits_from_probs(q).mean(-1), rtol=1e-9)
    np.testing.assert_allclose(out[:, 2], np.abs(entropy_bits_from_probs(q)
                                                 - entropy_bits_from_probs(p)).mean(-1),
                               rtol=1e-9)
    sliced = posterior_kl_score(p_star, slice(2, 7, 2))(logits)  # a task's hyp_slice
    torch.testing.assert_close(sliced, out)
    with pytest.raises(InterpError, match="do not match"):
        posterior_kl_score(p_star, [2, 4])(logits)


def test_every_score_has_a_gradient(logits):
    x = logits.clone().requires_grad_()
    p_star = torch.full((B, Q, 3), 1 / 3)
    s = combine_scores(logit_diff_score(0, 1), kl_score(logits + 1, name="kl_ref_bits"),
                       posterior_kl_score(p_star, [0, 1, 2]))
    assert s.names == ("logit_diff", "kl_ref_bits", "kl_bits", "entropy_bits",
                       "entropy_abs_err_bits")
    out = s(x)
    assert out.shape == (B, 5)
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    with pytest.raises(InterpError, match="repeat a metric name"):
        combine_scores(logit_diff_score(0, 1), logit_diff_score(2, 3))


def test_plain_callables_and_shape_checks(logits):
    plain = PairScore(lambda z: z[:, -1, :3])
    pairs = torch.arange(B)
    assert evaluate(plain, logits, pairs).shape == (B, 3)
    assert metric_names(plain, 3) == ("score_0", "score_1", "score_2")
    assert metric_names(PairScore(lambda z: z[:, 0, 0]), 1) == ("score",)
    with pytest.raises(InterpError, match=r"\[B\] or \[B, m\]"):
        evaluate(PairScore(lambda z: z.sum()), logits, pairs)

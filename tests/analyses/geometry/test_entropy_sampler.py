"""Entropy scoring of a pool and Paper III's quintile sampler."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom import interp
from bayesgeom.analyses.geometry.entropy_sampler import (
    next_token_entropy,
    quantile_bins,
    stratified_sample,
)

PROMPTS = ["The capital of France is", "Entropy measures uncertainty in", "A",
           "the cat sat on the mat and the dog", "Attention routes information"]


def test_quantile_bins_split_by_rank_into_equal_groups():
    v = np.array([5.0, 1.0, 3.0, 3.0, 2.0, 9.0, 0.5, 7.0, 4.0, 6.0])
    bins = quantile_bins(v, 5)
    assert np.bincount(bins).tolist() == [2, 2, 2, 2, 2]
    for b in range(4):
        assert v[bins == b].max() <= v[bins == b + 1].min()
    with pytest.raises(ValueError, match="at least 5 values"):
        quantile_bins([1.0, 2.0], 5)


def test_stratified_sample_takes_n_per_quintile_without_replacement_by_seed():
    ent = np.random.default_rng(0).gamma(2.0, 2.0, size=200)
    idx, q = stratified_sample(ent, n_per_bin=15, n_bins=5, seed=7)
    assert idx.size == 75 and np.unique(idx).size == 75
    assert np.bincount(q).tolist() == [15] * 5
    bins = quantile_bins(ent, 5)
    assert (bins[idx] == q).all()
    again, _ = stratified_sample(ent, 15, 5, seed=7)
    other, _ = stratified_sample(ent, 15, 5, seed=8)
    assert (again == idx).all() and not (other == idx).all()
    with pytest.raises(ValueError, match="fewer than the 50 asked for"):
        stratified_sample(ent, 50, 5, 0)


def test_scores_match_capture_entropy_whatever_the_batching(text_models):
    model = interp.load(text_models["llama"])
    got = next_token_entropy(model, PROMPTS, batch_size=2, progress=False)
    ref = interp.capture(model, PROMPTS, ["resid_post.0"], progress=False).entropy_bits
    np.testing.assert_allclose(got, ref.double().numpy(), atol=1e-5)
    assert got.shape == (5,) and (got > 0).all()
    full = next_token_entropy(model, PROMPTS[:2], progress=False)
    part = next_token_entropy(model, PROMPTS[:2], vocab_slice=slice(10, 14), progress=False)
    assert (part <= 2.0 + 1e-6).all() and (full > part).all()  # at most log2(4) bits

"""Key orthogonality (weights and token keys), baselines, attention entropy, QK alignment."""

import math

import numpy as np
import pytest

from bayesgeom.probes import (
    attention_entropy_bits,
    attention_entropy_profile,
    exact_abs_cos_expectation,
    focusing_fraction,
    gaussian_abs_cos_baseline,
    head_entropies,
    head_key_orthogonality,
    layer_key_orthogonality,
    qk_alignment,
    qk_alignment_profile,
    qk_cosines,
    random_init_baseline,
    split_key_weight,
    token_key_orthogonality,
)


@pytest.mark.parametrize(("d_model", "d_k"), [(16, 16), (64, 64), (256, 64)])
def test_gaussian_baseline_matches_simulation(d_model, d_k):
    # The key-orthogonality statistic on Gaussian W_K [d_model, d_k], ~100k column pairs
    # (pairwise independent for isotropic columns): standard error ≈ 0.25 % of the mean.
    n_draws = max(1, 100_000 // (d_k * (d_k - 1) // 2))
    sim = random_init_baseline(d_model, d_k, n_draws=n_draws, seed=d_model).mean_abs_cos
    assert sim == pytest.approx(exact_abs_cos_expectation(d_model), rel=0.01)
    # √(2/(π·d)) is the large-d limit; it is ≈ 1/(4d) relatively low (1.6 % at d = 16)
    assert sim == pytest.approx(gaussian_abs_cos_baseline(d_model), rel=0.02)
    assert gaussian_abs_cos_baseline(d_model) == pytest.approx(math.sqrt(2 / (math.pi * d_model)))


def test_random_init_baseline_is_the_column_statistic_on_gaussian_weights():
    b = random_init_baseline(d_model=128, d_k=32, n_draws=40, seed=0)
    assert b.mean_abs_cos == pytest.approx(exact_abs_cos_expectation(128), rel=0.02)
    assert b.gaussian_formula == pytest.approx(gaussian_abs_cos_baseline(128))
    assert b == random_init_baseline(d_model=128, d_k=32, n_draws=40, seed=0)


def test_head_key_orthogonality_extremes_and_scale_invariance():
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((32, 8)))[0]  # orthonormal columns
    a, s = head_key_orthogonality(q * np.arange(1, 9))  # column norms do not matter
    assert a == pytest.approx(0.0, abs=1e-12) and s == pytest.approx(0.0, abs=1e-12)
    same = np.repeat(np.random.default_rng(1).standard_normal((32, 1)), 4, axis=1)
    a, s = head_key_orthogonality(same)
    assert a == pytest.approx(1.0) and s == pytest.approx(1.0)
    a, s = head_key_orthogonality(np.column_stack([same[:, 0], -same[:, 0]]))
    assert a == pytest.approx(1.0) and s == pytest.approx(-1.0)


def test_split_key_weight_and_layer_summary():
    rng = np.random.default_rng(2)
    n_heads, d_k, d_model = 4, 8, 32
    heads = rng.standard_normal((n_heads, d_model, d_k))
    heads[1] = np.linalg.qr(heads[1])[0]
    linear_weight = heads.transpose(0, 2, 1).reshape(n_heads * d_k, d_model)  # nn.Linear [out, in]
    np.testing.assert_array_equal(split_key_weight(linear_weight, n_heads), heads)
    with pytest.raises(ValueError):
        split_key_weight(linear_weight, 5)
    layers = layer_key_orthogonality([heads, heads[:2]])
    assert [lay.layer for lay in layers] == [0, 1]
    per_head, _ = head_key_orthogonality(heads)
    assert layers[0].mean_abs_cos == pytest.approx(per_head.mean())
    assert layers[0].head_abs_cos[1] == pytest.approx(0.0, abs=1e-12)
    assert layers[0].percentiles[5.0] <= layers[0].percentiles[50.0] <= layers[0].percentiles[95.0]
    rec = layers[0].to_record()
    assert rec["n_heads"] == 4 and rec["p50"] == pytest.approx(np.median(per_head))


def test_token_key_orthogonality():
    v, d_model, d_k = 6, 16, 8
    emb = np.eye(d_model)[:v]
    w = np.zeros((2, d_model, d_k))
    w[0, :d_k, :] = np.eye(d_k)  # head 0: distinct one-hot keys -> orthogonal
    w[1, :, 0] = 1.0  # head 1: every token has the same key direction
    res = token_key_orthogonality(emb, w)
    np.testing.assert_allclose(res.head_abs_cos, [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(res.head_signed_cos, [0.0, 1.0], atol=1e-12)
    assert res.mean_abs_cos == pytest.approx(0.5)
    assert res.gaussian_formula == pytest.approx(gaussian_abs_cos_baseline(d_k))
    biased = token_key_orthogonality(emb, w[:1], bias=np.full((1, d_k), 100.0))
    assert biased.mean_abs_cos > 0.9  # a large shared bias aligns all keys
    rng = np.random.default_rng(4)
    rand = token_key_orthogonality(rng.standard_normal((64, 256)), rng.standard_normal((256, 32)))
    assert rand.mean_abs_cos == pytest.approx(exact_abs_cos_expectation(32), rel=0.1)


def test_attention_entropy_bits():
    for n in (1, 2, 7, 64):
        assert attention_entropy_bits(np.full(n, 0.3)) == pytest.approx(math.log2(n))
    assert attention_entropy_bits([0.0, 1.0, 0.0]) == 0.0
    assert attention_entropy_bits([2.0, 2.0, 0.0, 0.0]) == pytest.approx(1.0)  # renormalised
    rows = np.array([[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]])  # [prompt, head, key], zero-padded
    np.testing.assert_allclose(attention_entropy_bits(rows), [[1.0, 0.0]])
    with pytest.raises(ValueError):
        attention_entropy_bits([0.0, 0.0])


def test_entropy_is_averaged_per_head_not_over_averaged_attention():
    attn = [np.array([[[1.0, 0.0], [0.0, 1.0]]]), np.array([[[1.0, 0.0], [1.0, 0.0]]])]
    e = head_entropies(attn)  # [1 prompt, 2 layers, 2 heads]
    assert e.shape == (1, 2, 2)
    np.testing.assert_allclose(e, 0.0)  # each head is focused; the head-averaged map is not


def test_focusing_and_profile():
    assert focusing_fraction([4.0, 3.0, 1.0]) == pytest.approx(0.75)
    assert focusing_fraction([2.0, 2.5]) == pytest.approx(-0.25)
    rng = np.random.default_rng(5)
    n, layers, heads = 60, 4, 3
    base = np.array([5.0, 4.0, 2.5, 1.0])
    e = base[None, :, None] + 0.2 * rng.standard_normal((n, layers, heads))
    prof = attention_entropy_profile(e, n_resamples=500, seed=0)
    np.testing.assert_allclose(prof.layer_entropy, e.mean(axis=(0, 2)))
    assert (prof.layer_low <= prof.layer_entropy).all() and (
        prof.layer_entropy <= prof.layer_high
    ).all()
    assert prof.focusing.estimate == pytest.approx(focusing_fraction(prof.layer_entropy))
    assert prof.focusing.low < 0.8 < prof.focusing.high
    assert prof.head_entropy.shape == (layers, heads)
    assert [r["layer"] for r in prof.to_records()] == [0, 1, 2, 3]


def test_qk_alignment():
    rng = np.random.default_rng(6)
    n, h, t, d = 5, 2, 7, 16
    k = rng.standard_normal((n, h, t, d))
    q_aligned = 50.0 * k[:, :, 3, :]  # each query equals (a multiple of) key 3
    cos = qk_cosines(q_aligned, k)
    np.testing.assert_allclose(cos[:, :, 3], 1.0)
    sharp = qk_alignment(q_aligned, k, layer=1)
    diffuse = qk_alignment(rng.standard_normal((n, h, d)), k)
    assert sharp.mean_max_cos == pytest.approx(1.0) and sharp.layer == 1
    assert diffuse.mean_max_cos < 0.8
    assert sharp.softmax_entropy_bits < 0.1 < diffuse.softmax_entropy_bits <= math.log2(t)
    # masked keys are ignored: hide key 3 and the perfect match disappears
    mask = np.ones((n, t), bool)
    mask[:, 3] = False
    assert qk_alignment(q_aligned, k, key_mask=mask).mean_max_cos < 0.9
    prof = qk_alignment_profile([diffuse_q := rng.standard_normal((n, h, d)), q_aligned], [k, k])
    assert [p.layer for p in prof] == [0, 1]
    assert prof[0] == qk_alignment(diffuse_q, k)

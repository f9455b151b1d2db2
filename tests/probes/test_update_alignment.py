"""The update-alignment numerics of the Paper II monitor on hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import update_alignment as ua


def _softmax(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    z = np.where(allowed, x, -np.inf)
    with np.errstate(invalid="ignore"):  # pad rows (all masked) are NaN
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def test_scores_read_each_query_heads_kv_head():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 4, 3, 5)), rng.normal(size=(2, 2, 3, 5))
    s = ua.head_scores(q, k, 0.5, (0, 0, 1, 1))
    assert s.shape == (2, 4, 3, 3)
    assert s[1, 3, 2, 0] == pytest.approx(0.5 * q[1, 3, 2] @ k[1, 1, 0])
    assert s[0, 1, 0, 2] == pytest.approx(0.5 * q[0, 1, 0] @ k[0, 0, 2])


def test_centred_rows_keep_the_softmax_and_drop_masked_entries():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(2, 3, 4, 4)) + 5.0
    allowed = np.tril(np.ones((4, 4), bool))[None, None].repeat(2, 0)
    allowed[1, 0, :2] = False  # two pad query rows
    c = ua.centre_rows(s, allowed)
    full = np.broadcast_to(allowed, s.shape)
    assert np.abs(c.sum(-1)).max() < 1e-12 and (c[~full] == 0).all()
    real = full.any(-1)
    np.testing.assert_allclose(_softmax(c, full)[real], _softmax(s, full)[real], atol=1e-12)


def test_head_cosine_per_head_over_the_masked_entries_only():
    a = np.zeros((1, 3, 2, 2))
    a[0, :, 0, 0], a[0, :, 1, 1] = 1.0, 2.0
    b = a.copy()
    b[0, 1] *= -3.0  # head 1: opposite
    b[0, 2] = [[0.0, 0.0], [3.0, 0.0]]  # head 2: orthogonal on the mask
    mask = np.array([[True, False], [True, True]])[None, None]
    a[0, :, 0, 1] = b[0, :, 0, 1] = 1e6  # off the mask: ignored
    np.testing.assert_allclose(ua.head_cosine(a, b, mask), [1.0, -1.0, 0.0], atol=1e-12)
    assert np.isnan(ua.head_cosine(a, np.zeros_like(a), mask)).all()
    with pytest.raises(ValueError, match="shapes differ"):
        ua.head_cosine(a, b[:, :2], mask)


def test_row_tv_distance_averages_real_rows():
    p0 = np.array([[[[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]]]])  # [1, 1, 3, 2]
    p1 = np.array([[[[0.0, 1.0], [0.5, 0.5], [0.0, 0.0]]]])
    allowed = np.array([[[[True, True], [True, True], [False, False]]]])  # last row: pad
    np.testing.assert_allclose(ua.row_tv_distance(p0, p1, allowed), [0.5])  # (1 + 0) / 2
    np.testing.assert_allclose(ua.row_tv_distance(p0, p0, allowed), [0.0])


def test_relative_change_and_real_keys():
    allowed = np.array([[[[True, False], [True, True]]], [[[True, False], [False, False]]]])
    keys = ua.real_keys(allowed)  # sequence 1 reads its first key only
    assert keys.shape == (2, 1, 2, 1) and keys[:, 0, :, 0].tolist() == [[True, True],
                                                                         [True, False]]
    v0 = np.ones((2, 2, 2, 3))
    v1 = v0.copy()
    v1[:, 0] *= 2.0  # kv head 0 doubles, head 1 stays
    v1[1, 1, 1] = 99.0  # a key nobody reads: ignored
    np.testing.assert_allclose(ua.relative_change(v0, v1, keys), [1.0, 0.0])


def test_value_pca_of_rank_one_and_spread_values():
    rng = np.random.default_rng(2)
    direction = rng.normal(size=6)
    v = np.empty((3, 2, 5, 6))
    v[:, 0] = rng.normal(size=(3, 5, 1)) * direction  # kv head 0: on one line
    v[:, 1] = rng.normal(size=(3, 5, 6))  # kv head 1: spread
    keys = np.ones((3, 1, 5, 1), bool)
    line, spread = ua.head_value_pca(v, keys)
    assert line.n_samples == 15 and line.explained_variance_ratio[0] == pytest.approx(1.0)
    assert line.participation_ratio() == pytest.approx(1.0)
    assert spread.explained_variance_ratio[0] < 0.5 and spread.participation_ratio() > 3


def test_path_length_fraction_and_settle_step():
    np.testing.assert_allclose(ua.path_length_fraction([1.0, np.nan, 3.0]), [0.25, 0.25, 1.0])
    assert np.isnan(ua.path_length_fraction([0.0, 0.0])).all()
    assert ua.settle_step([10, 20, 30], [9.0, 0.5, 0.5]) == 10
    assert ua.settle_step([10, 20, 30], [1.0, 1.0, 8.0]) == 30
    assert ua.settle_step([10, 20, 30], [0.0, 0.0, 0.0]) is None
    with pytest.raises(ValueError, match=">= 0"):
        ua.path_length_fraction([1.0, -1.0])
    with pytest.raises(ValueError, match="increasing"):
        ua.settle_step([20, 10], [1.0, 1.0])
    with pytest.raises(ValueError, match="level"):
        ua.settle_step([10, 20], [1.0, 1.0], level=0.0)

"""Streaming moments and PCA equal their batch counterparts."""

import numpy as np
import pytest

from bayesgeom.probes import StreamingMoments, StreamingPCA, fit_pca, principal_angles
from bayesgeom.probes.streaming_moments import merge_all


def _chunks(n_chunks=12, rows=500, d=16, seed=0):
    rng = np.random.default_rng(seed)
    mix = rng.standard_normal((d, d)) * rng.uniform(0.1, 5.0, size=d)
    # a large common offset stresses cancellation (a naive Σx² − n·x̄² loses digits here)
    return [
        (rng.standard_normal((rows + 37 * i, d)) @ mix + 1e3).astype(np.float32)
        for i in range(n_chunks)
    ]


def test_streaming_covariance_equals_batch():
    chunks = _chunks()
    full = np.concatenate(chunks).astype(np.float64)
    m = StreamingMoments.from_batches(16, chunks)
    assert m.n == full.shape[0]
    np.testing.assert_allclose(m.mean, full.mean(axis=0), rtol=0, atol=1e-6)
    np.testing.assert_allclose(m.covariance(), np.cov(full, rowvar=False), rtol=0, atol=1e-6)
    np.testing.assert_allclose(m.covariance(ddof=0), np.cov(full, rowvar=False, ddof=0), atol=1e-6)
    np.testing.assert_allclose(m.variance(), full.var(axis=0, ddof=1), atol=1e-6)


def test_merge_of_disjoint_accumulators_equals_one_pass():
    chunks = _chunks(n_chunks=6)
    one = StreamingMoments.from_batches(16, chunks)
    parts = [StreamingMoments.from_batches(16, chunks[i::3]) for i in range(3)]
    merged = merge_all(parts)
    assert merged.n == one.n
    np.testing.assert_allclose(merged.mean, one.mean, atol=1e-9)
    np.testing.assert_allclose(merged.scatter, one.scatter, rtol=1e-10, atol=1e-6)
    assert parts[0].n < one.n  # inputs untouched


def test_single_rows_and_empty_batches():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 4))
    m = StreamingMoments(4)
    m.update(np.empty((0, 4)))
    for row in x:
        m.update(row[None])
    np.testing.assert_allclose(m.covariance(), np.cov(x, rowvar=False), atol=1e-12)
    with pytest.raises(ValueError):
        m.update(np.zeros((2, 5)))
    with pytest.raises(ValueError):
        StreamingMoments(4).update(x[:1]).covariance()


@pytest.mark.parametrize("standardize", [False, True])
def test_streaming_pca_equals_batch_pca(standardize):
    chunks = _chunks()
    batch = fit_pca(np.concatenate(chunks), standardize=standardize)
    stream = StreamingPCA(16, standardize=standardize).fit(chunks).result()
    assert stream.n_samples == batch.n_samples
    np.testing.assert_allclose(stream.spectrum, batch.spectrum, rtol=1e-6)
    np.testing.assert_allclose(
        stream.explained_variance_ratio, batch.explained_variance_ratio, atol=1e-8
    )
    assert principal_angles(stream.components[:3], batch.components[:3]).max() < 1e-3
    np.testing.assert_allclose(
        np.abs(stream.components @ batch.components.T).diagonal(), 1.0, atol=1e-6
    )
    x = chunks[0][:20]
    np.testing.assert_allclose(np.abs(stream.transform(x)), np.abs(batch.transform(x)), atol=1e-5)

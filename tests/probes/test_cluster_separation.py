"""label_silhouette: about 1 on separated clusters, about 0 on shuffled labels, NaN without
two labels, and the seeded subsample above max_samples."""

import numpy as np
import pytest

from bayesgeom.probes.cluster_separation import label_silhouette


def _clusters(n_per: int = 60, k: int = 5, d: int = 12, spread: float = 0.05, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(k), n_per)
    centres = rng.normal(size=(k, d)) * 10
    return centres[labels] + spread * rng.normal(size=(labels.size, d)), labels


def test_separated_clusters_score_near_one_and_shuffled_near_zero():
    x, labels = _clusters()
    assert label_silhouette(x, labels) == pytest.approx(1.0, abs=0.02)
    shuffled = np.random.default_rng(1).permutation(labels)
    assert abs(label_silhouette(x, shuffled)) < 0.15
    # string labels work as well as ints
    assert label_silhouette(x, labels.astype(str)) == pytest.approx(
        label_silhouette(x, labels))


def test_subsample_is_seeded_and_close_to_exact():
    x, labels = _clusters(n_per=100, spread=3.0)
    exact = label_silhouette(x, labels, max_samples=10_000)
    sub = label_silhouette(x, labels, max_samples=200, seed=3)
    assert sub == label_silhouette(x, labels, max_samples=200, seed=3)
    assert sub == pytest.approx(exact, abs=0.1)


def test_undefined_cases_are_nan_and_bad_shapes_raise():
    x, _ = _clusters(n_per=4)
    assert np.isnan(label_silhouette(x, np.zeros(len(x), dtype=int)))
    assert np.isnan(label_silhouette(x, np.arange(len(x))))
    with pytest.raises(ValueError, match="labels must have shape"):
        label_silhouette(x, np.zeros(3))
    with pytest.raises(ValueError, match="n_components"):
        label_silhouette(x, np.arange(len(x)) % 2, n_components=0)

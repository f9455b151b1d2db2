"""How well given labels separate representations into clusters: the silhouette on a PCA
projection (Paper I v3's recurrent-geometry check: final-layer Mamba states labelled by the
argmax of the exact posterior form five clusters).

:func:`label_silhouette` centres ``x`` [n, d], projects it onto its top ``n_components``
principal components (centred PCA, :func:`probes.pca.fit_pca`; the authors use 10) and returns
scikit-learn's mean silhouette coefficient (Euclidean) of ``labels`` there, in [-1, 1]:
about 1 for tight, well-separated clusters, about 0 when the labels say nothing about where a
point lies (shuffled labels), negative when points sit nearer another label's points. Above
``max_samples`` points it is computed on a seeded random subset of that size (the exact score
costs O(n²) distances). NaN when fewer than two labels occur, or every point is its own label.

Example:
    >>> rng = np.random.default_rng(0)
    >>> centres = np.eye(5) * 10
    >>> labels = np.repeat(np.arange(5), 40)
    >>> x = centres[labels] + 0.1 * rng.normal(size=(200, 5))
    >>> round(label_silhouette(x, labels), 2)
    0.98
    >>> abs(label_silhouette(x, rng.permutation(labels))) < 0.1
    True
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import silhouette_score

from .arrays import as_matrix
from .bootstrap import make_rng
from .pca import fit_pca


def label_silhouette(x: object, labels: object, n_components: int = 10,
                     max_samples: int = 5000, seed: int = 0) -> float:
    """Mean silhouette of ``labels`` [n] (any hashable values) for rows ``x`` [n, d] projected
    onto their top ``n_components`` centred principal components (module doc); float in
    [-1, 1], or NaN."""
    a = as_matrix(x, min_rows=2)
    lab = np.asarray(labels)
    if lab.shape != (a.shape[0],):
        raise ValueError(f"labels must have shape [{a.shape[0]}], got {list(lab.shape)}")
    if n_components < 1 or max_samples < 2:
        raise ValueError("n_components must be >= 1 and max_samples >= 2")
    if a.shape[0] > max_samples:
        keep = np.sort(make_rng(seed).choice(a.shape[0], size=max_samples, replace=False))
        a, lab = a[keep], lab[keep]
    k = np.unique(lab).size
    if k < 2 or k >= a.shape[0]:
        return float("nan")
    z = fit_pca(a, n_components=n_components).transform(a, n_components=n_components)
    return float(silhouette_score(z, lab, metric="euclidean"))

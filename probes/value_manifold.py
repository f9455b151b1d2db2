"""Wind-tunnel value-manifold summary (Paper I ``qkv_analysis value-manifold``).

For representations ``x`` [n, d] (e.g. attention outputs at prediction positions) and the
Bayes-posterior entropy ``h`` [n] (bits):
* centred PCA (no standardisation, as in the wind-tunnel code): variance ratios, 90/95 % dim,
  participation ratio;
* Pearson corr(PC_k, H) for k ≤ 5;
* linear R² of H from the full representation: scikit-learn's ``LinearRegression`` (least
  squares with intercept, minimum-norm when under-determined) fitted on a seeded 80 % split
  (``train_test_split``), R² on the other 20 %;
* ordering score: bin H into ``n_bins`` equal-width bins, take the mean PC1 coordinate per
  non-empty bin (in increasing H), and score |Σ sign(diff)| / (#non-empty bins − 1) ∈ [0, 1]
  (1 = PC1 moves monotonically with H; the sign of PC1 does not matter).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

from ..infotheory import pearson
from .arrays import as_matrix, as_vector
from .entropy_probe import r2_score
from .pca import fit_pca


def ordering_score(pc: object, h: object, n_bins: int = 10) -> float:
    """Monotonicity of bin-mean ``pc`` across equal-width bins of ``h``; NaN if < 2 bins filled."""
    p = as_vector(pc, "pc")
    t = as_vector(h, "h", n=p.size)
    lo, hi = float(t.min()), float(t.max())
    if hi == lo:
        return float("nan")
    edges = np.linspace(lo, hi, n_bins + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
    counts = np.bincount(which, minlength=n_bins)
    sums = np.bincount(which, weights=p, minlength=n_bins)
    means = sums[counts > 0] / counts[counts > 0]
    if means.size < 2:
        return float("nan")
    return float(abs(np.sign(np.diff(means)).sum()) / (means.size - 1))


@dataclass(frozen=True)
class ValueManifoldSummary:
    """See the module docstring; ratios are fractions, ``corr_pc_entropy`` has ≤ 5 entries."""

    n_samples: int
    n_features: int
    explained_variance_ratio: tuple[float, ...]
    pc1: float
    pc2: float
    dim90: int
    dim95: int
    participation_ratio: float
    corr_pc_entropy: tuple[float, ...]
    linear_r2: float
    ordering_score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def value_manifold_summary(
    x: object,
    h: object,
    n_bins: int = 10,
    n_pcs: int = 5,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> ValueManifoldSummary:
    """Summarise representations ``x`` [n, d] against entropies ``h`` [n] (bits)."""
    a = as_matrix(x, min_rows=5)
    t = as_vector(h, "h", n=a.shape[0])
    pca = fit_pca(a, standardize=False)
    scores = pca.transform(a, n_components=n_pcs)
    ratios = pca.explained_variance_ratio
    tr, te = train_test_split(np.arange(a.shape[0]), test_size=test_fraction, random_state=seed)
    ols = LinearRegression().fit(a[tr], t[tr])
    return ValueManifoldSummary(
        n_samples=a.shape[0],
        n_features=a.shape[1],
        explained_variance_ratio=tuple(float(r) for r in ratios[:10]),
        pc1=float(ratios[0]),
        pc2=float(ratios[1]) if ratios.size > 1 else 0.0,
        dim90=pca.dimension_at_variance(0.90),
        dim95=pca.dimension_at_variance(0.95),
        participation_ratio=pca.participation_ratio(),
        corr_pc_entropy=tuple(float(pearson(scores[:, k], t)) for k in range(scores.shape[1])),
        linear_r2=r2_score(t[te], ols.predict(a[te])),
        ordering_score=ordering_score(scores[:, 0], t, n_bins),
    )

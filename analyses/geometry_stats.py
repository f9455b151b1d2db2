"""The numbers of one geometry run, from captured arrays (pure composition of ``probes``).

* :func:`value_layer_stats`: standardised PCA of one layer's final-token values [n, Hkv·dh]
  (PC1, PC1+PC2 with bootstrap CIs, participation ratio), Spearman ρ(PC1, target) with its CI
  and the cross-validated ridge-probe R² of each target (entropies in bits).
* :func:`key_orthogonality_summary`: weight-based key orthogonality per layer with the Gaussian
  √(2/(π·d_model)) and random-initialisation baselines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from probes import (
    CorrelationResult,
    PCASummary,
    ProbeConfig,
    correlation_with_ci,
    entropy_probe,
    fit_pca,
    gaussian_abs_cos_baseline,
    layer_key_orthogonality,
    random_init_baseline,
    summarize_pca,
)


@dataclass(frozen=True)
class ValueLayerStats:
    """One layer, one prompt set. ``pc_coords`` [n, 2]: PC1/PC2 coordinates of each prompt;
    ``rho`` and ``probe_r2`` are keyed by target name (e.g. ``"entropy"``)."""

    layer: int
    pca: PCASummary
    pc_coords: np.ndarray
    rho: dict[str, CorrelationResult]
    probe_r2: dict[str, float]


def value_layer_stats(
    layer: int,
    values: np.ndarray,
    targets: Mapping[str, np.ndarray],
    n_resamples: int = 1000,
    probe: ProbeConfig | None = None,
    seed: int = 0,
) -> ValueLayerStats:
    """Statistics of values [n, d] against each target [n] (see the module doc)."""
    x = np.asarray(values, dtype=np.float64).reshape(values.shape[0], -1)
    summary = summarize_pca(x, standardize=True, n_resamples=n_resamples, seed=seed)
    coords = fit_pca(x, standardize=True, n_components=2).transform(x)
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    rho, r2 = {}, {}
    for name, t in targets.items():
        rho[name] = correlation_with_ci(coords[:, 0], t, n_resamples=n_resamples, seed=seed)
        r2[name] = entropy_probe(x, t, probe or ProbeConfig(seed=seed)).r2
    return ValueLayerStats(layer, summary, coords, rho, r2)


def key_orthogonality_summary(
    key_weights: Sequence[np.ndarray], layers: Sequence[int], n_draws: int = 64, seed: int = 0
) -> dict[str, Any]:
    """Per-layer mean |cos| between the ℓ2-normalised d_k columns of each head's W_K (each
    [Hkv, d_model, d_k]) with percentiles over heads, and the two chance baselines."""
    per_layer = layer_key_orthogonality(key_weights)
    _, d_model, d_k = np.asarray(key_weights[0]).shape
    rand = random_init_baseline(d_model, d_k, n_draws=n_draws, seed=seed)
    records = [{**lo.to_record(), "layer": int(L)} for lo, L in zip(per_layer, layers,
                                                                   strict=True)]
    means = np.array([r["mean_abs_cos"] for r in records])
    return {
        "per_layer": records,
        "mean_abs_cos": float(means.mean()),
        "fraction_layers_below_0.20": float((means < 0.20).mean()),
        "gaussian_baseline": gaussian_abs_cos_baseline(d_model),
        "gaussian_baseline_d_head": gaussian_abs_cos_baseline(d_k),
        "random_init_baseline": rand.to_dict(),
        "d_model": int(d_model),
        "d_head": int(d_k),
    }

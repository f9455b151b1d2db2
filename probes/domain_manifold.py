"""Domain manifolds: a PCA subspace per prompt domain, their angles, and projection onto them.

A :class:`DomainManifold` is the top-k PCA subspace of one domain's vectors (standardised by
default, as in Paper III), with k fixed or the smallest k explaining ``variance`` of that
domain's variance. Projecting new rows gives their k coordinates and the residual fraction
‖r‖² / ‖x̃‖² of each row's (centred, scaled) norm that lies outside the subspace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .pca import PCAResult, fit_pca
from .subspace_angles import principal_angles


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class DomainManifold:
    """``pca`` keeps exactly the manifold's k components ([k, d] rows)."""

    name: str
    pca: PCAResult

    @property
    def k(self) -> int:
        return int(self.pca.components.shape[0])

    @property
    def explained_variance(self) -> float:
        """Fraction of the domain's variance inside the manifold."""
        return float(self.pca.explained_variance_ratio.sum())


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class ManifoldProjection:
    """``coords`` [n, k]; ``residual_fraction`` [n] per row (NaN for a row at the mean);
    ``total_residual_fraction`` = Σ‖r‖² / Σ‖x̃‖² over all rows."""

    coords: np.ndarray
    residual_fraction: np.ndarray
    total_residual_fraction: float


def fit_domain_manifold(
    name: str,
    x: object,
    n_components: int | None = None,
    variance: float = 0.9,
    standardize: bool = True,
) -> DomainManifold:
    """Fit one domain's manifold from rows ``x`` [n, d]; ``n_components`` overrides ``variance``."""
    full = fit_pca(x, standardize=standardize)
    k = n_components if n_components is not None else full.dimension_at_variance(variance)
    k = max(1, min(k, full.components.shape[0]))
    pca = PCAResult(
        mean=full.mean,
        scale=full.scale,
        components=full.components[:k],
        eigenvalues=full.eigenvalues[:k],
        spectrum=full.spectrum,
        n_samples=full.n_samples,
    )
    return DomainManifold(name, pca)


def fit_domain_manifolds(
    domains: Mapping[str, object],
    n_components: int | None = None,
    variance: float = 0.9,
    standardize: bool = True,
) -> dict[str, DomainManifold]:
    """One manifold per domain name -> rows [n_domain, d]."""
    return {
        name: fit_domain_manifold(name, x, n_components, variance, standardize)
        for name, x in domains.items()
    }


def project_onto_manifold(manifold: DomainManifold, x: object) -> ManifoldProjection:
    """Coordinates of new rows ``x`` [n, d] in the manifold, and what is left outside it."""
    z = manifold.pca.preprocess(x)
    coords = z @ manifold.pca.components.T
    resid = z - coords @ manifold.pca.components
    r2 = (resid**2).sum(axis=1)
    z2 = (z**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(z2 > 0, r2 / np.where(z2 > 0, z2, 1.0), np.nan)
    total = float(r2.sum() / z2.sum()) if z2.sum() > 0 else float("nan")
    return ManifoldProjection(coords, frac, total)


def manifold_angle_table(manifolds: Mapping[str, DomainManifold]) -> list[dict[str, Any]]:
    """Principal angles (degrees) for every unordered pair of manifolds, as tidy records.

    Only meaningful between manifolds fitted in the same coordinates (same standardisation
    convention and, for standardised fits, comparable scales).
    """
    names = list(manifolds)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ang = principal_angles(manifolds[a].pca.components, manifolds[b].pca.components)
            out.append(
                {
                    "domain_a": a,
                    "domain_b": b,
                    "k_a": manifolds[a].k,
                    "k_b": manifolds[b].k,
                    "angles_deg": ang.tolist(),
                    "min_angle_deg": float(ang.min()),
                    "mean_angle_deg": float(ang.mean()),
                    "max_angle_deg": float(ang.max()),
                }
            )
    return out

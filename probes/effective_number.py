"""How many independent controls a set amounts to: by its effects, and by its directions.

:func:`effect_effective_number`: the participation ratio (tr C)² / ‖C‖²_F of the correlation
matrix C [n, n] of the controls' *per-prompt effects* (n controls × P prompts): the effective
number of independent statistics they are (Cheverud–Nyholt / Li–Ji's effective number of tests
reads the same eigenvalues), n for effects that share nothing and 1 for controls whose effects
are one pattern at varying strength. Two statistics computed on the same prompts are correlated,
over draws of the prompts, as their per-prompt values are, so C is also the correlation of the
controls' mean effects under a new draw of prompts. Even independent effects give less than n
on P prompts, whose sample correlations are ±1/√(P − 1): E‖C‖²_F ≈ n + n(n − 1)/(P − 1), so
the ratio is ≈ n(P − 1)/(n + P − 2) (:func:`independent_reference`).

:func:`effective_number`: the participation ratio (Σ eigenvalues)² / Σ eigenvalues² of the
controls' Gram matrix of unit rows -- the effective number of controls, n for orthogonal ones
and 1 for controls that are one direction -- and, beside it, of their energy-weighted Gram
C_ij = r_iᵀMr_j / √(r_iᵀMr_i · r_jᵀMr_j), M the uncentred second moment of the activations the
edits act on (:class:`probes.energy_controls.EnergyMoments`): how much the coefficients x·r_i and
x·r_j that two controls remove co-vary over the edited positions. The ratio is taken as
(tr G)² / ‖G‖²_F, the same number as :func:`probes.pca.participation_ratio` of G's eigenvalues,
without an eigendecomposition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .energy_controls import EnergyMoments


@dataclass(frozen=True)
class EffectiveNumber:
    """How many independent controls a set amounts to: ``euclidean`` (participation ratio of
    the unit rows' Gram matrix; :attr:`value`), ``energy`` (of the energy-weighted Gram,
    module doc: how much the coefficients the controls remove co-vary over positions, which a
    shared offset raises even for orthogonal controls; reported beside, not used for
    verdicts); ``n`` controls; ``mean_abs_cos`` over pairs."""

    n: int
    euclidean: float
    energy: float
    mean_abs_cos: float

    @property
    def value(self) -> float:
        """The effective number: the Euclidean participation ratio (how many directions the
        controls amount to)."""
        return float(self.euclidean)


def effective_number(directions: np.ndarray, moments: EnergyMoments | None = None,
                     ) -> EffectiveNumber:
    """The effective number of the controls ``directions`` [n, d] (module doc).

    Example:
        >>> effective_number(np.eye(4)).value, effective_number(np.ones((5, 3))).value
        (4.0, 1.0)
    """
    r = np.asarray(directions, dtype=np.float64)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    n = r.shape[0]
    gram = r @ r.T
    cos = float(np.abs(gram)[np.triu_indices(n, 1)].mean()) if n > 1 else float("nan")
    euclid = _participation(gram)
    energy = euclid
    if moments is not None:
        c = r @ moments.matrix @ r.T
        s = np.sqrt(np.clip(np.diag(c), 1e-300, None))
        energy = _participation(c / np.outer(s, s))
    return EffectiveNumber(n, euclid, energy, cos)


@dataclass(frozen=True)
class EffectNumber:
    """The effective number of ``n`` controls' effects on ``prompts`` prompts (``value``, module
    doc), beside ``independent``, what effects that share nothing give at that n and P, and
    the share of the correlation's trace on its first eigenvector (``top_share``: near 1 when
    the effects are one pattern)."""

    n: int
    prompts: int
    value: float
    independent: float
    top_share: float


def independent_reference(n: int, prompts: int) -> float:
    """The participation ratio that ``n`` independent effects give on ``prompts`` prompts,
    n(P − 1) / (n + P − 2) (module doc).

    Example:
        >>> round(independent_reference(60, 150), 1), independent_reference(1, 30)
        (43.0, 1.0)
    """
    if n < 1 or prompts < 2:
        return float("nan")
    return n * (prompts - 1) / (n + prompts - 2)


def effect_effective_number(effects: np.ndarray) -> EffectNumber:
    """The effective number of the controls whose per-prompt effects are the rows of
    ``effects`` [n, P] (any unit; module doc). Prompts where any control is non-finite and
    controls constant over the prompts (no correlation defined) are left out; NaN when fewer
    than 2 of either remain.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> shared = rng.normal(size=200)
        >>> one = np.outer(rng.uniform(1, 2, size=50), shared) + 0.01 * rng.normal(size=(50, 200))
        >>> round(effect_effective_number(one).value, 2)
        1.0
        >>> e = effect_effective_number(rng.normal(size=(50, 200)))
        >>> round(e.value), round(e.independent)
        (40, 40)
    """
    e = np.asarray(effects, dtype=np.float64)
    if e.ndim != 2:
        raise ValueError(f"effects must be [n controls, P prompts], got shape {e.shape}")
    e = e[:, np.isfinite(e).all(0)]
    if e.shape[1] >= 2:
        z = e - e.mean(1, keepdims=True)
        sd = np.sqrt((z ** 2).sum(1))
        z = z[sd > 1e-12 * max(float(np.abs(e).max()), 1e-300)]
    else:
        z = e[:0]
    n, p = z.shape
    if n < 2 or p < 2:
        return EffectNumber(n, p, float("nan"), independent_reference(n, p), float("nan"))
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    # C = z zᵀ [n, n]; its nonzero eigenvalues are those of zᵀz [P, P]: the smaller one
    c = z @ z.T if n <= p else z.T @ z
    top = float(np.linalg.eigvalsh(c)[-1])
    return EffectNumber(n, p, _participation(c), independent_reference(n, p), top / n)


def _participation(gram: np.ndarray) -> float:
    """(tr G)² / ‖G‖²_F = (Σλ)² / Σλ² for a symmetric PSD G."""
    return float(np.trace(gram) ** 2 / (gram ** 2).sum())

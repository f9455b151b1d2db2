"""How many independent control directions a set amounts to.

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


def _participation(gram: np.ndarray) -> float:
    """(tr G)² / ‖G‖²_F = (Σλ)² / Σλ² for a symmetric PSD G."""
    return float(np.trace(gram) ** 2 / (gram ** 2).sum())

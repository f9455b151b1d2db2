"""The energy a directional edit moves where it is applied: streaming uncentred moments of the
activations an edit reaches, M = mean_i x_i x_iᵀ (:class:`EnergyMoments`). A cut of fraction f
along a unit u removes f²·uᵀMu of the mean ‖x‖² = tr M, keep-only removes tr M − uᵀMu, a shift
by s adds s² (:meth:`EnergyMoments.edit_energy` is exact for any affine edit).
:mod:`probes.energy_controls` draws control directions that carry an axis' energy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class EnergyMoments:
    """Streaming uncentred moments of activation rows: ``second`` = Σ x xᵀ [d, d] and ``first``
    = Σ x [d] (float64), over ``count`` rows.

    Example:
        >>> m = EnergyMoments.of(np.array([[1.0, 0.0], [0.0, 2.0]]))
        >>> m.energy(np.array([0.0, 1.0])), m.mean_sq_norm
        (2.0, 2.5)
    """

    second: np.ndarray
    first: np.ndarray
    count: int = 0
    #: the eigenpairs of :attr:`matrix`, computed once per state (every edit's energy reads them)
    _eig: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False,
                                                       compare=False)

    @classmethod
    def empty(cls, d: int) -> EnergyMoments:
        return cls(np.zeros((d, d)), np.zeros(d), 0)

    @classmethod
    def of(cls, rows: np.ndarray) -> EnergyMoments:
        x = np.asarray(rows, dtype=np.float64)
        m = cls.empty(x.shape[1])
        m.add(x)
        return m

    def add(self, rows: np.ndarray) -> None:
        """Add rows [N, d] (any float dtype; accumulated in float64)."""
        x = np.asarray(rows, dtype=np.float64).reshape(-1, self.first.size)
        if not np.isfinite(x).all():
            raise ValueError("non-finite activations: their energy is undefined")
        self.second += x.T @ x
        self.first += x.sum(0)
        self.count += x.shape[0]
        self._eig = None

    @property
    def matrix(self) -> np.ndarray:
        """M = mean x xᵀ [d, d]."""
        return self.second / max(self.count, 1)

    @property
    def mean(self) -> np.ndarray:
        """mean x [d]."""
        return self.first / max(self.count, 1)

    @property
    def mean_sq_norm(self) -> float:
        """mean ‖x‖² = tr M."""
        return float(np.trace(self.matrix))

    def energy(self, direction: np.ndarray) -> float:
        """mean (x·r̂)² for the unit r̂ of ``direction`` [d] (what a full cut along it removes)."""
        r = unit(direction)
        return float(r @ self.matrix @ r)

    def edit_energy(self, edit: Callable[[np.ndarray], np.ndarray]) -> float:
        """mean ‖edit(x) − x‖² / mean ‖x‖² over the rows, exactly, for an *affine* ``edit``
        (rows [n, d] -> rows [n, d]: a cut, keep-only or shift along a direction): with
        Δ(x) = Ax + b, mean ‖Δ‖² = Σ_k λ_k ‖A e_k‖² + 2 bᵀA·mean x + ‖b‖², (λ_k, e_k) the
        eigenpairs of M. A fraction ≥ 0 of mean ‖x‖²: how much the edit removed or added."""
        if self._eig is None:
            self._eig = np.linalg.eigh(self.matrix)
        lam, vecs = self._eig
        d = self.first.size
        probe = np.vstack([np.zeros((1, d)), vecs.T])
        delta = np.asarray(edit(probe), dtype=np.float64) - probe
        b, a_cols = delta[0], delta[1:] - delta[0]  # a_cols[k] = A e_k
        a_mean = a_cols.T @ (vecs.T @ self.mean)  # A · mean x
        moved = float((np.clip(lam, 0, None) * (a_cols ** 2).sum(1)).sum() + 2 * b @ a_mean
                      + b @ b)
        return moved / self.mean_sq_norm if self.mean_sq_norm > 0 else float("nan")


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` [d] as a float64 unit vector (a zero or non-finite one is a ValueError)."""
    v = np.asarray(v, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    if not norm > 0 or not math.isfinite(norm):
        raise ValueError("the direction must be finite and non-zero")
    return v / norm

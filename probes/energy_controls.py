"""Control directions for a directional edit, matched in the energy the edit moves where it is
applied.

A steering edit along a unit direction u acts on every position it is applied to. What it
removes or adds there depends on the *uncentred* second moment of those activations,
M = mean_i x_i x_iᵀ [d, d] (:class:`EnergyMoments`): a cut of fraction f removes f²·uᵀMu of
the mean ‖x‖² = tr M, keep-only removes tr M − uᵀMu, a shift by s adds s². A control r carries
the axis' energy when rᵀMr = uᵀMu; then every cut and keep-only along it moves exactly what the
axis edit moves, and a shift of the same s moves the same s².

:func:`energy_matched_controls` draws ``n`` such controls, unit, orthogonal to u and mutually
orthogonal where the spectrum allows (so that they are near-independent draws of the null, not
one direction repeated):

1. M is restricted to the hyperplane u⊥ (eigenvalues λ₁ ≥ … ≥ λ_{d−1});
2. k orthonormal directions can each carry t = uᵀMu iff the mean of the bottom k eigenvalues
   ≤ t ≤ the mean of the top k (Schur–Horn); a frame has k = min(n, the largest such k)
   columns;
3. a seeded Gaussian frame G [d−1, k] is tilted towards the high- or low-energy eigenvectors,
   diag(λ^β)·G, and orthonormalised, β found by bisection so that the frame's mean energy
   tr(QᵀMQ)/k is t (β = 0: a uniformly random frame; β → ±∞: the top / bottom k
   eigenvectors);
4. Givens rotations inside the frame, each between a column above t and one below, set every
   column's energy to t (the frame's trace is kept, so this always ends: a constructive
   Schur–Horn step);
5. more than k controls take further independent frames: they cannot all be orthogonal, and
   the effective number says how many they amount to.

If fewer than k₀ = min(n, d − 1, :data:`FALLBACK_DIM`) orthogonal directions can carry t (the
axis is among the top-energy directions: t is above the mean of the top k₀ eigenvalues; none
at all when t > λ₁), matched controls could only be a few directions repeated, and the
fallback is stated in :attr:`ControlDraw.method` and :attr:`ControlDraw.reason`:
``top_subspace`` -- random orthonormal directions of equal energy inside the top-k₀
eigen-subspace, carrying :attr:`ControlDraw.energy_ratio` < 1 of the axis' energy, the most
that k₀ independent controls can carry (``bottom_subspace`` likewise for an axis among the
lowest-energy directions).

:mod:`probes.effective_number` says how many independent controls a set amounts to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: the controls' energy may differ from the axis' by this relative amount and count as matched
ENERGY_TOLERANCE = 0.01
#: matched controls need at least this many orthogonal directions that carry the axis' energy,
#: else the fallback's subspace has this many dimensions (module doc): as many independent
#: controls as :data:`EFFECTIVE_FLOOR` asks
FALLBACK_DIM = 20
#: below this many effective controls a parametric verdict is withheld (analyses.steer.stats)
EFFECTIVE_FLOOR = 20
#: the bisection over the tilt β stops within this relative error of the target mean energy
_TILT_RTOL = 1e-10


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
        r = _unit(direction)
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


@dataclass(frozen=True)
class ControlDraw:
    """The controls [n, d] (unit, float64, orthogonal to the axis) with what they carry:
    ``target`` = uᵀMu, ``energy_ratio`` (min, max) of rᵀMr / uᵀMu over the controls,
    ``method`` ("matched": every control carries the target to float precision;
    "top_subspace": the fallback, module doc), ``per_frame`` controls per orthogonal frame,
    and ``reason`` (why the fallback, else "")."""

    directions: np.ndarray
    target: float
    energy_ratio: tuple[float, float]
    method: str
    per_frame: int
    reason: str = ""

    @property
    def matched(self) -> bool:
        lo, hi = self.energy_ratio
        return lo >= 1 - ENERGY_TOLERANCE and hi <= 1 + ENERGY_TOLERANCE


def energy_matched_controls(axis: np.ndarray, moments: EnergyMoments, n: int,
                            seed: int = 0, min_frame: int = FALLBACK_DIM) -> ControlDraw:
    """``n`` seeded control directions for edits along ``axis`` [d] on activations with
    ``moments`` (module doc): matched when at least min(n, d − 1, ``min_frame``) orthogonal
    directions can carry the axis' energy, else the fallback. Same seed, same controls.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(500, 8)) * np.array([4, 3, 2, 2, 1, 1, 1, 0.5])
        >>> m = EnergyMoments.of(x)
        >>> c = energy_matched_controls(np.eye(8)[2], m, n=5, seed=1)
        >>> c.method, c.directions.shape, bool(abs(c.directions @ np.eye(8)[2]).max() < 1e-12)
        ('matched', (5, 8), True)
        >>> [round(m.energy(r) / m.energy(np.eye(8)[2]), 9) for r in c.directions]
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    u = _unit(axis)
    d = u.size
    if d < 2:
        raise ValueError("the axis must have at least 2 entries")
    mat = moments.matrix
    target = float(u @ mat @ u)
    if not target > 0:
        raise ValueError("the activations carry no energy along the axis (uᵀMu = 0)")
    basis = _complement(u)  # [d, d-1], orthonormal, ⟂ u
    lam, vecs = np.linalg.eigh(basis.T @ mat @ basis)
    lam, vecs = np.clip(lam[::-1], 0, None), vecs[:, ::-1]  # descending
    sizes = np.arange(1, d)
    top, bottom = np.cumsum(lam) / sizes, np.cumsum(lam[::-1]) / sizes
    slack = 1e-12 * target
    feasible = np.flatnonzero((bottom <= target + slack) & (target <= top + slack))
    k_max = int(sizes[feasible[-1]]) if feasible.size else 0
    want = min(n, d - 1, min_frame)
    rng = np.random.default_rng(seed)
    frames: list[np.ndarray] = []
    method, reason = "matched", ""
    if k_max >= want:
        k = min(n, k_max)
        while sum(f.shape[1] for f in frames) < n:
            q = _tilted_frame(lam, rng.standard_normal((d - 1, k)), target)
            frames.append(_equalise(q, np.diag(lam), target, rng))
    else:
        k = want
        high = target > top[k - 1]
        method = "top_subspace" if high else "bottom_subspace"
        idx = np.arange(k) if high else np.arange(d - 1 - k, d - 1)
        side = "top" if high else "bottom"
        few = (f"no direction orthogonal to the axis carries its energy {target:.4g} where "
               f"the edits are applied (it is the {side}-energy direction)" if k_max == 0 else
               f"only {k_max} mutually orthogonal directions orthogonal to the axis carry its "
               f"energy {target:.4g} where the edits are applied (it is among the {side}-energy "
               f"directions), fewer than the {k} independent controls asked for")
        reason = (f"{few}; controls are random orthonormal directions of equal energy in the "
                  f"{side}-{k} eigen-subspace orthogonal to the axis, carrying "
                  f"{float(lam[idx].mean()) / target:.3f} of the axis' energy")
        sub = np.eye(d - 1)[:, idx]
        while sum(f.shape[1] for f in frames) < n:
            q = sub @ _orth(rng.standard_normal((k, k)))
            frames.append(_equalise(q, np.diag(lam), float(lam[idx].mean()), rng))
    frames = [(basis @ (vecs @ q)).T for q in frames]
    r = np.vstack(frames)[:n]
    for _ in range(2):
        r = r - np.outer(r @ u, u)
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    ratios = np.array([float(x @ mat @ x) for x in r]) / target
    return ControlDraw(r, target, (float(ratios.min()), float(ratios.max())), method, k, reason)


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    if not norm > 0 or not math.isfinite(norm):
        raise ValueError("the direction must be finite and non-zero")
    return v / norm


def _complement(u: np.ndarray) -> np.ndarray:
    """An orthonormal basis [d, d−1] of the hyperplane orthogonal to the unit ``u``."""
    q, _ = np.linalg.qr(np.column_stack([u, np.eye(u.size)]))
    return q[:, 1:u.size]


def _orth(a: np.ndarray) -> np.ndarray:
    q, rr = np.linalg.qr(a)
    return q * np.sign(np.diag(rr))  # a unique orthonormalisation (positive diagonal)


def _tilted_frame(lam: np.ndarray, g: np.ndarray, goal: float) -> np.ndarray:
    """The orthonormal frame [m, k] orth(diag(λ^β) g) whose mean energy Σλ_i q_i²/k is
    ``goal``, β by bisection (λ descending, the eigenbasis coordinates)."""
    k = g.shape[1]
    logl = np.log(np.clip(lam, lam.max() * 1e-15 + 1e-300, None))

    def frame(beta: float) -> np.ndarray:
        w = beta * logl
        return _orth(np.exp(w - w.max())[:, None] * g)

    def mean_energy(q: np.ndarray) -> float:
        return float((lam[:, None] * q ** 2).sum() / k)

    lo, hi = -1.0, 1.0
    while mean_energy(frame(hi)) < goal and hi < 1e4:
        hi *= 2
    while mean_energy(frame(lo)) > goal and lo > -1e4:
        lo *= 2
    q = frame(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        q = frame(mid)
        e = mean_energy(q)
        if abs(e - goal) <= _TILT_RTOL * goal:
            break
        lo, hi = (mid, hi) if e < goal else (lo, mid)
    return q


def _equalise(q: np.ndarray, mat: np.ndarray, goal: float, rng: np.random.Generator,
              ) -> np.ndarray:
    """Rotate the columns of ``q`` [m, k] in pairs so that each carries qᵀ·mat·q = mean energy
    (≈ ``goal``): each Givens step sets one column above and one below the mean to it."""
    q = q.copy()
    e = np.einsum("ik,ij,jk->k", q, mat, q)
    level = float(e.mean()) if abs(float(e.mean()) - goal) > 1e-9 * goal else goal
    tol = 1e-12 * max(level, 1e-300)
    for _ in range(4 * q.shape[1]):
        hi_ = np.flatnonzero(e > level + tol)
        lo_ = np.flatnonzero(e < level - tol)
        if hi_.size == 0 or lo_.size == 0:
            break
        i, j = int(rng.choice(hi_)), int(rng.choice(lo_))
        a, b = q[:, i], q[:, j]
        sii, sjj, sij = float(a @ mat @ a), float(b @ mat @ b), float(a @ mat @ b)
        th = _angle(sii, sjj, sij, level)
        c, s = math.cos(th), math.sin(th)
        q[:, i], q[:, j] = c * a + s * b, -s * a + c * b
        e[i] = float(q[:, i] @ mat @ q[:, i])
        e[j] = float(q[:, j] @ mat @ q[:, j])
    return q


def _angle(sii: float, sjj: float, sij: float, level: float) -> float:
    """θ ∈ [0, π/2] with cos²θ·sii + sin²θ·sjj + 2 sinθ cosθ·sij = level (sii > level > sjj),
    by bisection on the continuous energy between the two ends."""

    def energy(th: float) -> float:
        c, s = math.cos(th), math.sin(th)
        return c * c * sii + s * s * sjj + 2 * s * c * sij

    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if energy(mid) > level:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-16:
            break
    return (lo + hi) / 2

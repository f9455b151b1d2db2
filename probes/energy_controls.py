"""Control directions for a directional edit, matched in the energy the edit moves where it is
applied.

A steering edit along a unit direction u acts on every position it is applied to. What it
removes or adds there depends on the *uncentred* second moment of those activations,
M = mean_i x_i x_iᵀ [d, d] (:class:`EnergyMoments`): a cut of fraction f removes f²·uᵀMu of
the mean ‖x‖² = tr M, keep-only removes tr M − uᵀMu, a shift by s adds s². A control r carries
the axis' energy when rᵀMr = uᵀMu = t; then every cut and keep-only along it moves exactly what
the axis edit moves, and a shift of the same s moves the same s².

With λ_min ≤ … ≤ λ_max the eigenvalues of M restricted to the hyperplane u⊥, a *single* unit
direction r ⟂ u with rᵀMr = t exists iff λ_min ≤ t ≤ λ_max (the Rayleigh quotient is
continuous on the sphere); k *mutually orthogonal* ones exist iff the mean of the bottom k
eigenvalues ≤ t ≤ the mean of the top k (Schur–Horn), a far stronger demand for an axis among
the top-energy directions.

:func:`independent_energy_controls` (the default null) draws ``n`` controls independently, each
carrying t exactly: a seeded Gaussian g in u⊥, tilted towards the high- or low-energy
eigenvectors, r ∝ diag(λ^β)·g in the eigenbasis, β found by bisection so that rᵀMr = t
(β = 0: a uniformly random direction; the energy rises monotonically with β from λ_min to
λ_max). Independent draws are exchangeable with an axis that is "one more control", so the
permutation p among them is exact whatever their effects share. Where no direction carries t
(t outside [λ_min, λ_max]: the axis is the top- or bottom-energy direction), the controls carry
the nearest energy that still leaves them random (:data:`UNREACHABLE_CAP` of λ_max, or λ_min
over it), ``method`` "unmatched", the reason and ratio stated: an edit that moves the axis'
energy then has no matched control.

:func:`energy_matched_controls` is the orthonormal construction, used only where it matches:

1. k orthonormal directions can each carry t iff the Schur–Horn bounds above hold; a frame has
   k = min(n, the largest such k) columns;
2. a seeded Gaussian frame G [d−1, k] is tilted, diag(λ^β)·G, and orthonormalised, β found by
   bisection so that the frame's mean energy tr(QᵀMQ)/k is t;
3. Givens rotations inside the frame, each between a column above t and one below, set every
   column's energy to t (a constructive Schur–Horn step);
4. more than k controls take further independent frames.

If fewer than k₀ = min(n, d − 1, :data:`MIN_FRAME`) orthogonal directions can carry t, no
orthonormal frame matches, and the controls are :func:`independent_energy_controls` instead
(the reason says how many orthogonal ones could).

:mod:`probes.effective_number` says how many independent controls a set amounts to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .energy_moments import EnergyMoments, unit  # EnergyMoments: re-exported

#: the controls' energy may differ from the axis' by this relative amount and count as matched
ENERGY_TOLERANCE = 0.01
#: the orthonormal construction needs at least this many mutually orthogonal directions that
#: carry the axis' energy (else its frames would be a few directions repeated): as many
#: independent draws as :data:`EFFECTIVE_FLOOR` asks
MIN_FRAME = 20
#: a null's spread estimated from fewer independent draws than this gives no verdict
#: (analyses.steer.stats: the relative standard error of a standard deviation from k draws is
#: 1/√(2(k − 1)), above 16 % below 20, and the Student t quantile at a Holm threshold of
#: 0.05/6 is more than 11 % above the normal one at 19 degrees of freedom)
EFFECTIVE_FLOOR = 20
#: where no direction carries the axis' energy, controls carry this fraction of the largest
#: energy reachable orthogonal to it (or the smallest over it): the nearest that leaves them
#: random (the value :data:`interp.directions.UNREACHABLE_CAP` uses for variance)
UNREACHABLE_CAP = 0.9
#: the bisection over the tilt β stops within this relative error of the target mean energy
_TILT_RTOL = 1e-10


@dataclass(frozen=True)
class ControlDraw:
    """The controls [n, d] (unit, float64, orthogonal to the axis) with what they carry:
    ``target`` t = uᵀMu, ``energy_ratio`` (min, max) of rᵀMr / t over the controls,
    ``method`` ("independent": drawn independently, each carrying t to float precision;
    "orthonormal": frames of mutually orthogonal ones, each carrying t; "unmatched": no
    direction carries t, module doc), ``per_frame`` controls per orthogonal frame (1 for
    independent draws), ``reason`` (why not the construction asked for, else ""), ``reach``
    (λ_min / t, λ_max / t on u⊥: a single matched direction exists iff the first is ≤ 1 ≤ the
    second), ``orthogonal`` (how many mutually orthogonal directions ⟂ u can carry t) and
    ``independent`` (whether the controls are independent draws, exchangeable with one more:
    not for orthonormal frames)."""

    directions: np.ndarray
    target: float
    energy_ratio: tuple[float, float]
    method: str
    per_frame: int
    reason: str = ""
    reach: tuple[float, float] = (math.nan, math.nan)
    orthogonal: int = 0
    independent: bool = True

    @property
    def matched(self) -> bool:
        lo, hi = self.energy_ratio
        return lo >= 1 - ENERGY_TOLERANCE and hi <= 1 + ENERGY_TOLERANCE


@dataclass(frozen=True)
class _Spectrum:
    """M restricted to u⊥: ``basis`` [d, d−1] of u⊥, eigenvalues ``lam`` (descending, ≥ 0)
    with eigenvectors ``vecs`` [d−1, d−1] in that basis, the axis' energy ``target``, and
    ``k_max``: how many mutually orthogonal directions ⟂ u can carry it (Schur–Horn)."""

    u: np.ndarray
    mat: np.ndarray
    basis: np.ndarray
    lam: np.ndarray
    vecs: np.ndarray
    target: float
    k_max: int

    @classmethod
    def of(cls, axis: np.ndarray, moments: EnergyMoments) -> _Spectrum:
        u = unit(axis)
        if u.size < 2:
            raise ValueError("the axis must have at least 2 entries")
        mat = moments.matrix
        target = float(u @ mat @ u)
        if not target > 0:
            raise ValueError("the activations carry no energy along the axis (uᵀMu = 0)")
        basis = _complement(u)  # [d, d-1], orthonormal, ⟂ u
        lam, vecs = np.linalg.eigh(basis.T @ mat @ basis)
        lam, vecs = np.clip(lam[::-1], 0, None), vecs[:, ::-1]  # descending
        sizes = np.arange(1, u.size)
        top, bottom = np.cumsum(lam) / sizes, np.cumsum(lam[::-1]) / sizes
        slack = 1e-12 * target
        ok = np.flatnonzero((bottom <= target + slack) & (target <= top + slack))
        return cls(u, mat, basis, lam, vecs, target, int(sizes[ok[-1]]) if ok.size else 0)

    @property
    def reach(self) -> tuple[float, float]:
        return float(self.lam[-1]) / self.target, float(self.lam[0]) / self.target

    def draw(self, frames: list[np.ndarray], method: str, per_frame: int, n: int,
             reason: str = "") -> ControlDraw:
        """Frames [d−1, k] in the eigenbasis -> the unit controls [n, d] ⟂ u, with what they
        carry."""
        r = np.vstack([(self.basis @ (self.vecs @ q)).T for q in frames])[:n]
        for _ in range(2):
            r = r - np.outer(r @ self.u, self.u)
        r = r / np.linalg.norm(r, axis=1, keepdims=True)
        ratios = np.einsum("ij,jk,ik->i", r, self.mat, r) / self.target
        return ControlDraw(r, self.target, (float(ratios.min()), float(ratios.max())), method,
                           per_frame, reason, self.reach, self.k_max,
                           independent=method != "orthonormal")


def independent_energy_controls(axis: np.ndarray, moments: EnergyMoments, n: int,
                                seed: int = 0, reason: str = "") -> ControlDraw:
    """``n`` seeded control directions for edits along ``axis`` [d] on activations with
    ``moments``, drawn independently, each carrying the axis' energy exactly (module doc), or
    the nearest random energy where none can ("unmatched"). Same seed, same controls.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(500, 8)) * np.array([4, 3, 2, 2, 1, 1, 1, 0.5])
        >>> m = EnergyMoments.of(x)
        >>> c = independent_energy_controls(np.eye(8)[1], m, n=5, seed=1)
        >>> c.method, c.directions.shape, c.orthogonal, round(c.reach[1], 2)
        ('independent', (5, 8), 2, 1.71)
        >>> [round(m.energy(r) / c.target, 9) for r in c.directions]
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    sp = _Spectrum.of(axis, moments)
    lam, t = sp.lam, sp.target
    lo, hi = float(lam[-1]), float(lam[0])
    method, goal = "independent", t
    if not lo * (1 - 1e-12) <= t <= hi * (1 + 1e-12):
        high = t > hi
        goal = UNREACHABLE_CAP * hi if high else min(lo / UNREACHABLE_CAP, hi)
        method = "unmatched"
        reason = (f"no direction orthogonal to the axis carries its energy {t:.4g} where the "
                  f"edits are applied (it is the {'top' if high else 'bottom'}-energy "
                  f"direction; reachable {lo:.4g}..{hi:.4g}); controls are independent random "
                  f"directions carrying {goal / t:.3f} of it, so a cut or keep-only along them "
                  "does not move what the axis' does")
    rng = np.random.default_rng(seed)
    frames = [_tilted_frame(lam, rng.standard_normal((lam.size, 1)), goal) for _ in range(n)]
    return sp.draw(frames, method, 1, n, reason)


def energy_matched_controls(axis: np.ndarray, moments: EnergyMoments, n: int,
                            seed: int = 0, min_frame: int = MIN_FRAME) -> ControlDraw:
    """``n`` seeded control directions for edits along ``axis`` [d] on activations with
    ``moments`` in orthonormal frames (module doc), where at least min(n, d − 1,
    ``min_frame``) orthogonal directions can carry the axis' energy; else
    :func:`independent_energy_controls`, the reason said. Same seed, same controls.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(500, 8)) * np.array([4, 3, 2, 2, 1, 1, 1, 0.5])
        >>> m = EnergyMoments.of(x)
        >>> c = energy_matched_controls(np.eye(8)[2], m, n=5, seed=1)
        >>> c.method, c.directions.shape, bool(abs(c.directions @ np.eye(8)[2]).max() < 1e-12)
        ('orthonormal', (5, 8), True)
        >>> [round(m.energy(r) / m.energy(np.eye(8)[2]), 9) for r in c.directions]
        [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    sp = _Spectrum.of(axis, moments)
    d = sp.u.size
    want = min(n, d - 1, min_frame)
    if sp.k_max < want:
        few = ("no direction" if sp.k_max == 0 else
               f"only {sp.k_max} mutually orthogonal direction{'s' * (sp.k_max > 1)}")
        return independent_energy_controls(
            axis, moments, n, seed,
            reason=f"{few} orthogonal to the axis carr{'ies' if sp.k_max <= 1 else 'y'} its "
                   f"energy {sp.target:.4g} where the edits are applied, fewer than the "
                   f"{want} an orthonormal frame needs; controls are drawn independently")
    rng = np.random.default_rng(seed)
    k = min(n, sp.k_max)
    frames: list[np.ndarray] = []
    while sum(f.shape[1] for f in frames) < n:
        q = _tilted_frame(sp.lam, rng.standard_normal((d - 1, k)), sp.target)
        frames.append(_equalise(q, np.diag(sp.lam), sp.target, rng))
    return sp.draw(frames, "orthonormal", k, n)


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

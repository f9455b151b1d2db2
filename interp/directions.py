"""Directions for interventions: seeded random controls matched to a true axis (in norm, or in
the variance they carry over a set of activations), and the spread of activations along a
direction (the σ of a δ·σ shift).

Every function refuses non-finite input instead of returning NaN: a NaN/inf or zero axis or
direction, or one of the wrong size, is a :class:`DirectionShapeError`; NaN/inf activations a
:class:`NonFiniteActivationError` (one line each)."""

from __future__ import annotations

import math
import warnings

import torch

from .errors import DirectionShapeError, NonFiniteActivationError
from .finite import nonfinite_rows

#: when no direction orthogonal to the axis carries its variance, controls aim at this fraction
#: of the largest achievable variance (or the smallest divided by it), so they stay random
UNREACHABLE_CAP = 0.9


class VarianceMatchWarning(UserWarning):
    """No direction orthogonal to the axis carries the axis' variance; the controls carry the
    closest achievable variance instead (their ratio to the target says how close)."""


def random_controls(axis: torch.Tensor, n: int = 1, seed: int = 0) -> torch.Tensor:
    """``n`` random directions [n, *axis.shape], each with ``axis``' norm and orthogonal to it.

    Drawn from a seeded generator (same seed, same controls), Gaussian, with the component
    along ``axis`` removed (twice, in float64, so the dot product is ~1e-16 relative).
    """
    a = _vector(axis, "axis")
    norm = a.norm()
    if a.numel() < 2 or norm == 0:
        raise DirectionShapeError("the axis must be a non-zero vector of at least 2 entries")
    _check_n(n)
    u = a / norm
    g = torch.Generator().manual_seed(seed)
    r = torch.randn(n, a.numel(), generator=g, dtype=torch.float64)
    for _ in range(2):
        r = r - (r @ u)[:, None] * u[None, :]
    r = r / r.norm(dim=1, keepdim=True) * norm
    return r.reshape(n, *torch.as_tensor(axis).shape).to(torch.as_tensor(axis).dtype)


def projection_std(x: torch.Tensor, direction: torch.Tensor) -> float:
    """Standard deviation of ``x @ u`` over rows (``x`` [N, ...] flattened per row,
    u = direction / |direction|): the σ for :class:`interp.interventions.ShiftAlong`."""
    xc = _centred_rows(x, "x")
    u = _unit_axis(direction, xc.shape[1], "direction")
    return float((xc @ u).std())


def _vector(v: torch.Tensor, what: str) -> torch.Tensor:
    """``v`` flattened to float64 on the CPU; NaN/inf entries are a DirectionShapeError."""
    try:
        a = torch.as_tensor(v).detach().to("cpu", torch.float64).flatten()
    except (TypeError, ValueError, RuntimeError):
        raise DirectionShapeError(f"the {what} must be a tensor of numbers") from None
    if not bool(torch.isfinite(a).all()):
        raise DirectionShapeError(f"the {what} has {int((~torch.isfinite(a)).sum())} NaN/inf "
                                  "entries; pass a finite vector")
    return a


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DirectionShapeError(f"n must be an integer of at least 1, got {n!r}")


def _unit_axis(axis: torch.Tensor, features: int, what: str = "axis") -> torch.Tensor:
    a = _vector(axis, what)
    if a.numel() != features:
        raise DirectionShapeError(f"{what} has {a.numel()} entries, activation rows have "
                                  f"{features}")
    if a.norm() == 0:
        raise DirectionShapeError(f"the {what} must be a finite, non-zero vector")
    return a / a.norm()


def _centred_rows(acts: torch.Tensor, what: str = "acts") -> torch.Tensor:
    try:
        x = torch.as_tensor(acts).detach().to("cpu", torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise DirectionShapeError(f"{what} must be a tensor of numbers") from None
    if x.ndim < 2 or x.shape[0] < 2:
        raise DirectionShapeError(f"{what} must be [N, d] with N >= 2 rows, got {list(x.shape)}")
    x = x.flatten(1)
    rows = int(nonfinite_rows(x).sum())
    if rows:
        raise NonFiniteActivationError(f"{what} holds NaN or inf in {rows} of {len(x)} rows; "
                                       "drop or fix those rows first")
    return x - x.mean(0)


def variance_ratios(directions: torch.Tensor, axis: torch.Tensor, acts: torch.Tensor
                    ) -> torch.Tensor:
    """Var(acts · r̂) / Var(acts · û) for each row r of ``directions`` [n, d] (float64 [n];
    û, r̂ unit; variances over the rows of ``acts`` [N, d])."""
    xc = _centred_rows(acts)
    u = _unit_axis(axis, xc.shape[1])
    r = _vector(directions, "directions")
    if r.numel() == 0 or r.numel() % xc.shape[1]:
        raise DirectionShapeError(f"directions must be [n, {xc.shape[1]}], got "
                                  f"{list(torch.as_tensor(directions).shape)}")
    r = r.reshape(-1, xc.shape[1])
    norms = r.norm(dim=1, keepdim=True)
    if bool((norms == 0).any()):
        raise DirectionShapeError(f"direction {int(torch.nonzero(norms[:, 0] == 0)[0])} has "
                                  "zero norm")
    r = r / norms
    target = (xc @ u).pow(2).sum()
    if target == 0:
        raise DirectionShapeError("the activations do not vary along the axis (variance 0), so "
                                  "no ratio to it exists")
    return (xc @ r.T).pow(2).sum(0) / target


def variance_matched_controls(axis: torch.Tensor, acts: torch.Tensor, n: int = 1,
                              seed: int = 0) -> torch.Tensor:
    """``n`` seeded random unit directions [n, *axis.shape], orthogonal to ``axis`` [d], each
    carrying the axis' variance over the rows of ``acts`` [N, d] (any units):
    Var(acts · r) = Var(acts · û), û = axis / |axis| (ddof = 1, to float64 rounding).

    A null for editing a high-variance axis: norm-matched random directions carry far less of
    the activations than a top principal direction, so any edit along them moves less.

    Construction, per control: the eigen-directions of the covariance of ``acts`` within the
    hyperplane orthogonal to û split into those carrying at least the target variance t (A) and
    the rest (B, with the covariance's null space when N ≤ d). a: a random unit direction in
    span(A) (Var ≥ t); b: a random unit direction orthogonal to û and to span(A) (Var ≤ t, and
    a ⟂ b with no covariance between them); r = cos θ·a + sin θ·b with θ ∈ [0, π/2] solved by
    bisection for Var(r) = t. If no direction orthogonal to û carries t (t above the largest
    variance λ_max reachable there, e.g. when û is PC1, or below the smallest λ_min), the
    controls carry the closest variance that still leaves them random, t = 0.9·λ_max (or
    min(λ_min / 0.9, λ_max)), :data:`UNREACHABLE_CAP`; a :class:`VarianceMatchWarning` says so
    and :func:`variance_ratios` gives the achieved ratio.

    The match is in variance, the energy a cut removes on average; a readout nonlinear in each
    row (e.g. in each row's norm) can still tell an eigen-direction from a mixed control.

    Raises :class:`DirectionShapeError` (shapes, zero axis, n < 1) or
    :class:`NonFiniteActivationError` (NaN/inf activations).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> acts = torch.randn(200, 6, generator=g, dtype=torch.float64) * torch.tensor(
        ...     [3.0, 2.0, 1.0, 1.0, 0.5, 0.5], dtype=torch.float64)
        >>> u = torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
        >>> r = variance_matched_controls(u, acts, n=3, seed=1)
        >>> r.shape, bool((r @ u).abs().max() < 1e-12)
        (torch.Size([3, 6]), True)
        >>> variance_ratios(r, u, acts).round(decimals=9).tolist()
        [1.0, 1.0, 1.0]
    """
    _check_n(n)
    shape = torch.as_tensor(axis).shape
    dtype = torch.as_tensor(axis).dtype
    xc = _centred_rows(acts)
    N, d = xc.shape
    u = _unit_axis(axis, d)
    if d < 2:
        raise DirectionShapeError("the axis must have at least 2 entries")
    target = float((xc @ u).pow(2).sum()) / (N - 1)
    xp = xc - (xc @ u)[:, None] * u[None, :]  # rows projected off û
    _, s, vh = torch.linalg.svd(xp, full_matrices=False)
    lam = s.pow(2) / (N - 1)
    tol = float(s.max()) * max(N, d) * 2.2e-16 if s.numel() else 0.0
    kept = s > tol
    lam, vh = lam[kept], vh[kept]
    lam_max = float(lam.max()) if lam.numel() else 0.0
    lam_min = float(lam.min()) if lam.numel() == d - 1 else 0.0  # a null space carries 0
    t = target
    if not lam_min <= target <= lam_max:
        t = (UNREACHABLE_CAP * lam_max if target > lam_max
             else min(lam_min / UNREACHABLE_CAP, lam_max))
        warnings.warn(f"no direction orthogonal to the axis carries its variance {target:.4g} "
                      f"(achievable {lam_min:.4g}..{lam_max:.4g}); controls carry {t:.4g} "
                      f"(ratio {t / target if target > 0 else math.nan:.3g})",
                      VarianceMatchWarning, stacklevel=2)
    above = vh[lam >= t]
    g = torch.Generator().manual_seed(seed)
    out = torch.empty(n, d, dtype=torch.float64)
    for i in range(n):
        w = torch.randn(above.shape[0], generator=g, dtype=torch.float64)
        a = w @ above
        b = torch.randn(d, generator=g, dtype=torch.float64)
        for _ in range(2):
            b = b - (b @ u) * u - above.T @ (above @ b)
        bn = b.norm()  # zero when every direction orthogonal to û carries t or more
        b = b / bn if bn > 1e-12 else torch.zeros_like(b)
        out[i] = _solve(xc, u, a / a.norm(), b, t, N)
    return out.reshape(n, *shape).to(dtype)


def _solve(xc: torch.Tensor, u: torch.Tensor, a: torch.Tensor, b: torch.Tensor, t: float,
           N: int) -> torch.Tensor:
    """The unit r = cos θ·a + sin θ·b (orthogonal to u) with Var(xc · r) = t, θ by bisection."""
    pa, pb = xc @ a, xc @ b
    va, vb, vab = (float(pa @ pa) / (N - 1), float(pb @ pb) / (N - 1),
                   float(pa @ pb) / (N - 1))

    def var(th: float) -> float:
        c, s = math.cos(th), math.sin(th)
        return c * c * va + s * s * vb + 2 * s * c * vab

    lo, hi = 0.0, math.pi / 2
    if var(lo) < t or not bool(b.any()):  # t at an end of the spectrum: take a
        hi = 0.0
    for _ in range(200):
        if hi - lo < 1e-15:
            break
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if var(mid) > t else (lo, mid)
    th = (lo + hi) / 2
    r = math.cos(th) * a + math.sin(th) * b
    for _ in range(2):
        r = r - (r @ u) * u
    return r / r.norm()

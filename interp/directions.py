"""Directions for interventions: seeded random controls matched to a true axis, and the spread
of activations along a direction (the σ of a δ·σ shift)."""

from __future__ import annotations

import torch

from interp.errors import DirectionShapeError


def random_controls(axis: torch.Tensor, n: int = 1, seed: int = 0) -> torch.Tensor:
    """``n`` random directions [n, *axis.shape], each with ``axis``' norm and orthogonal to it.

    Drawn from a seeded generator (same seed, same controls), Gaussian, with the component
    along ``axis`` removed (twice, in float64, so the dot product is ~1e-16 relative).
    """
    a = torch.as_tensor(axis).detach().to("cpu", torch.float64).flatten()
    norm = a.norm()
    if a.numel() < 2 or norm == 0:
        raise DirectionShapeError("the axis must be a non-zero vector of at least 2 entries")
    if n < 1:
        raise DirectionShapeError(f"n must be at least 1, got {n}")
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
    xf = x.detach().flatten(1).double()
    u = torch.as_tensor(direction).detach().flatten().double()
    if u.numel() != xf.shape[1]:
        raise DirectionShapeError(f"direction has {u.numel()} entries, rows have {xf.shape[1]}")
    if xf.shape[0] < 2:
        raise DirectionShapeError("need at least 2 rows to estimate a standard deviation")
    return float((xf @ (u / u.norm())).std())

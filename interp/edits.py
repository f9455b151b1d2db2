"""Plain edit functions on feature vectors, in the style of steering-vectors' operators.

Each takes activations ``x`` [N, F] (float32) and a unit direction ``u`` [F] -- or, per head,
``x`` [N, k, dh] with ``u`` [k, dh] -- and returns the edited activations of the same shape.
:class:`interp.DirectionEdit` applies one of them at a site, positions and heads of a model.
Each refuses a non-finite parameter (``fraction``, ``amount``, ``scale``) with one
:class:`~interp.errors.DirectionShapeError` line instead of returning NaN activations.

Example:
    >>> import torch
    >>> x, u = torch.tensor([[3.0, 4.0]]), torch.tensor([1.0, 0.0])
    >>> project_out(x, u).tolist(), keep_only(x, u).tolist(), shift(x, u, 2.0).tolist()
    ([[0.0, 4.0]], [[3.0, 0.0]], [[5.0, 4.0]])
"""

from __future__ import annotations

import math

import torch

from .errors import DirectionShapeError


def check_finite(name: str, value: float | torch.Tensor) -> None:
    """Raise :class:`DirectionShapeError` unless ``value`` is a finite number (or a tensor of
    finite numbers)."""
    try:
        if isinstance(value, str | bytes):
            raise TypeError
        ok = (bool(torch.isfinite(value).all()) if isinstance(value, torch.Tensor)
              else math.isfinite(value))
    except TypeError:
        raise DirectionShapeError(f"{name} must be a number, got {type(value).__name__}") from None
    if not ok:
        raise DirectionShapeError(f"{name} must be finite, got {value}")


def dot(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """x·u over the last axis, keeping it: [..., F] -> [..., 1]."""
    return (x * u).sum(-1, keepdim=True)


def project_out(x: torch.Tensor, u: torch.Tensor, fraction: float = 1.0) -> torch.Tensor:
    """``x − f (x·u) u``: f = 1 removes the component along u; 0 < f < 1 is a partial cut (for
    dose–response sweeps); f = 2 reflects x through the hyperplane orthogonal to u."""
    check_finite("fraction", fraction)
    return x - fraction * dot(x, u) * u


def keep_only(x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``(x·u) u``: only the component along u."""
    return dot(x, u) * u


def shift(x: torch.Tensor, u: torch.Tensor, amount: float) -> torch.Tensor:
    """``x + amount · u`` (``amount`` = δσ for a shift of δ standard deviations)."""
    check_finite("amount", amount)
    return x + amount * u


def add(x: torch.Tensor, v: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``x + scale · v`` for an arbitrary (not normalised) vector v."""
    check_finite("scale", scale)
    return x + scale * v

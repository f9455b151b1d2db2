"""What an intervention is: the site(s) and positions it applies to, its vector or direction,
its numeric parameters and the edit (a plain function of :mod:`interp.edits`) -- each checked
when built: every parameter a finite number, the vector numeric, finite and (for a direction)
non-zero, else one :class:`~interp.errors.DirectionShapeError` line. Its shape against a site
is checked when :func:`interp.intervene` attaches it. See :mod:`interp.interventions`.

Example:
    >>> import torch
    >>> ShiftAlong("resid_post.0", torch.ones(4), delta=float("nan"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    bayesgeom.interp.errors.DirectionShapeError: ShiftAlong: ...must be finite, got delta=nan
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .edits import add, keep_only, project_out, shift
from .errors import DirectionShapeError
from .positions import PositionSpec


@dataclass
class Intervention:
    """Base: where an edit applies. Subclasses define the vector and the edit."""

    site: str | Sequence[str]
    positions: PositionSpec = field(default="all", kw_only=True)
    heads: Sequence[int] | None = field(default=None, kw_only=True)

    def _vector(self) -> torch.Tensor:
        raise NotImplementedError

    def _unit(self) -> bool:
        return True

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Edited ``x`` [..., F] given the prepared vector ``v`` (broadcastable, unit if a
        direction)."""
        raise NotImplementedError

    def label(self) -> str:
        return type(self).__name__

    def numeric_params(self) -> dict[str, Any]:
        """The edit's numeric parameters (each must be finite)."""
        return {}

    def _check_finite(self, **params: Any) -> None:
        bad = {}
        for k, v in params.items():
            try:
                if isinstance(v, str | bytes):
                    raise TypeError
                ok = math.isfinite(float(v))
            except (TypeError, ValueError, RuntimeError):
                raise DirectionShapeError(f"{type(self).__name__}: {k} must be a number, got "
                                          f"{v!r:.40} ({type(v).__name__})") from None
            if not ok:
                bad[k] = float(v)
        if bad:
            raise DirectionShapeError(f"{type(self).__name__}: parameters must be finite, got "
                                      f"{', '.join(f'{k}={v}' for k, v in bad.items())}")

    def check(self) -> None:
        """Raise :class:`DirectionShapeError` unless the parameters are finite numbers and the
        vector is numeric and finite (and non-zero for a direction)."""
        self._check_finite(**self.numeric_params())
        v = self.vector_tensor()
        what = "direction" if self._unit() else "vector"
        if v.numel() == 0:
            raise DirectionShapeError(f"{self.label()}: the {what} is empty")
        if not bool(torch.isfinite(v).all()):
            n = int((~torch.isfinite(v)).sum())
            raise DirectionShapeError(f"{self.label()}: the {what} has {n} NaN/inf entr"
                                      f"{'y' if n == 1 else 'ies'}; pass a finite vector")
        if self._unit() and not bool((v.double().norm(dim=-1) > 0).all()):
            raise DirectionShapeError(f"{self.label()}: the direction has zero norm")

    def vector_tensor(self) -> torch.Tensor:
        """The vector or direction as a float tensor (a one-line error if it is not numeric)."""
        try:
            v = torch.as_tensor(self._vector())
        except (TypeError, ValueError, RuntimeError):
            raise DirectionShapeError(f"{type(self).__name__}: the vector must be a tensor or a "
                                      "list of numbers") from None
        if not (v.is_floating_point() or v.dtype in (torch.int32, torch.int64, torch.int16,
                                                     torch.int8, torch.uint8)):
            raise DirectionShapeError(f"{type(self).__name__}: the vector must be real numbers, "
                                      f"got {v.dtype}")
        return v.detach()


@dataclass
class DirectionEdit(Intervention):
    """Apply ``operation(x, u, **params)`` (a plain function of :mod:`interp.edits`, or your
    own with that signature) with the unit direction u = direction / |direction|.

    Example:
        >>> import torch
        >>> e = DirectionEdit("attn.-1.v", torch.ones(4), project_out, fraction=0.5)
        >>> e.label()
        'project_out(fraction=0.5)'
    """

    direction: torch.Tensor
    operation: Callable[..., torch.Tensor] = project_out
    params: dict[str, float] = field(default_factory=dict)

    def __init__(self, site: str | Sequence[str], direction: torch.Tensor,
                 operation: Callable[..., torch.Tensor] = project_out, *,
                 positions: PositionSpec = "all", heads: Sequence[int] | None = None,
                 **params: float):
        super().__init__(site, positions=positions, heads=heads)
        self.direction, self.operation, self.params = direction, operation, dict(params)
        self.check()

    def numeric_params(self) -> dict[str, Any]:
        return self.params

    def _vector(self) -> torch.Tensor:
        return self.direction

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.operation(x, v, **self.params)

    def label(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{getattr(self.operation, '__name__', 'edit')}({args})"


@dataclass
class AddVector(Intervention):
    """``x + scale · vector``."""

    vector: torch.Tensor
    scale: float = field(default=1.0, kw_only=True)

    def __post_init__(self) -> None:
        self.check()

    def numeric_params(self) -> dict[str, Any]:
        return {"scale": self.scale}

    def _vector(self) -> torch.Tensor:
        return self.vector

    def _unit(self) -> bool:
        return False

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return add(x, v, self.scale)


@dataclass
class ProjectOut(Intervention):
    """Remove the fraction ``fraction`` of the component along ``direction``
    (:func:`interp.edits.project_out`)."""

    direction: torch.Tensor
    fraction: float = field(default=1.0, kw_only=True)

    def __post_init__(self) -> None:
        self.check()

    def numeric_params(self) -> dict[str, Any]:
        return {"fraction": self.fraction}

    def _vector(self) -> torch.Tensor:
        return self.direction

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return project_out(x, v, self.fraction)


@dataclass
class KeepOnly(Intervention):
    """Keep only the component along ``direction`` (:func:`interp.edits.keep_only`)."""

    direction: torch.Tensor

    def __post_init__(self) -> None:
        self.check()

    def _vector(self) -> torch.Tensor:
        return self.direction

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return keep_only(x, v)


@dataclass
class ShiftAlong(Intervention):
    """Move along the unit ``direction`` by ``delta · sigma`` (:func:`interp.edits.shift`)."""

    direction: torch.Tensor
    delta: float
    sigma: float = field(default=1.0, kw_only=True)

    def __post_init__(self) -> None:
        self.check()

    def numeric_params(self) -> dict[str, Any]:
        return {"delta": self.delta, "sigma": self.sigma}

    def check(self) -> None:
        super().check()
        if not math.isfinite(float(self.delta) * float(self.sigma)):
            raise DirectionShapeError(f"{self.label()}: delta·sigma = {self.delta:g}·"
                                      f"{self.sigma:g} overflows; pass smaller values")

    def _vector(self) -> torch.Tensor:
        return self.direction

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return shift(x, v, self.delta * self.sigma)

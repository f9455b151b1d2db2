"""Interventions: edits written back into a site while a context is open.

One direction edit, :class:`DirectionEdit` (site, direction, operation), applies a plain
edit function of :mod:`interp.edits` to the site's feature vector at the chosen positions
(``"all"`` real tokens by default, ``"last"``, or indices counted over each prompt's real
tokens), with u = direction / |direction|. The named edits are its common cases:

* :class:`ProjectOut` ``x - f·(x·u) u`` (:func:`~interp.edits.project_out`; f = ``fraction``)
* :class:`KeepOnly` ``(x·u) u`` (:func:`~interp.edits.keep_only`)
* :class:`ShiftAlong` ``x + δ·σ·u`` (:func:`~interp.edits.shift`; σ e.g. the std of x·u over a
  capture, see :func:`interp.directions.projection_std`)
* :class:`AddVector` ``x + scale·v`` (:func:`~interp.edits.add`; v not normalised)

For per-head sites (``attn.L.v`` etc.) the vector spans all heads (``[H·dh]`` or ``[H, dh]``), or,
with ``heads=[...]``, each listed head separately (``[dh]`` shared, or ``[len(heads), dh]``).
``site`` may be one name, a list, or a ``*`` pattern (``"resid_post.*"``: every layer).

``with intervene(model, ProjectOut("attn.-1.v", u)) as h:`` registers hooks, and removes them on
exit -- also when the body raises, and independently for nested contexts. On a normal exit any
intervention that never matched a position or whose effect on the hooked activation was
numerically nil (max change <= ``nil_rtol`` × max |x|) is reported with a
:class:`NilInterventionWarning` (or raises :class:`NilInterventionError` with ``strict=True``);
``h.effects`` holds the measured change per site.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import torch

from interp.edits import add, keep_only, project_out, shift
from interp.errors import (
    DirectionShapeError,
    InterpError,
    NilInterventionError,
    NilInterventionWarning,
)
from interp.positions import PositionSpec, normalise_positions
from interp.sites import Site

NIL_RTOL = 1e-6


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

    def _check_finite(self, **params: float) -> None:
        bad = {k: v for k, v in params.items() if not math.isfinite(float(v))}
        if bad:
            raise DirectionShapeError(f"{self.label()}: parameters must be finite, got {bad}")


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
        self._check_finite(**self.params)

    def _vector(self) -> torch.Tensor:
        return torch.as_tensor(self.direction)

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
        self._check_finite(scale=self.scale)

    def _vector(self) -> torch.Tensor:
        return torch.as_tensor(self.vector)

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
        self._check_finite(fraction=self.fraction)

    def _vector(self) -> torch.Tensor:
        return torch.as_tensor(self.direction)

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return project_out(x, v, self.fraction)


@dataclass
class KeepOnly(Intervention):
    """Keep only the component along ``direction`` (:func:`interp.edits.keep_only`)."""

    direction: torch.Tensor

    def _vector(self) -> torch.Tensor:
        return torch.as_tensor(self.direction)

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return keep_only(x, v)


@dataclass
class ShiftAlong(Intervention):
    """Move along the unit ``direction`` by ``delta · sigma`` (:func:`interp.edits.shift`)."""

    direction: torch.Tensor
    delta: float
    sigma: float = field(default=1.0, kw_only=True)

    def __post_init__(self) -> None:
        self._check_finite(delta=self.delta, sigma=self.sigma)

    def _vector(self) -> torch.Tensor:
        return torch.as_tensor(self.direction)

    def edit(self, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return shift(x, v, self.delta * self.sigma)


@dataclass
class InterventionEffect:
    """What one intervention did at one site: forward calls, edited rows, largest change of
    the hooked activation and largest |activation| among edited rows."""

    intervention: str
    site: str
    calls: int = 0
    rows: int = 0
    max_abs_change: float = 0.0
    max_abs_activation: float = 0.0

    def nil(self, rtol: float = NIL_RTOL) -> bool:
        return self.rows == 0 or self.max_abs_change <= rtol * max(self.max_abs_activation, 1e-30)

    def describe(self) -> str:
        if self.calls == 0:
            return f"{self.intervention} at {self.site} never ran (no forward pass reached it)"
        if self.rows == 0:
            return (f"{self.intervention} at {self.site} matched no positions in {self.calls} "
                    "forward call(s)")
        return (f"{self.intervention} at {self.site}: max |change| {self.max_abs_change:.3g} "
                f"over {self.rows} rows (max |x| {self.max_abs_activation:.3g})")


def _prepare(iv: Intervention, site: Site, model: Any) -> tuple[torch.Tensor, list[int] | None]:
    """(vector as float32 [F] or [k, dh], heads or None), checked against the site's shape."""
    if not site.writable:
        raise InterpError(f"site {site.name} is read-only; interventions cannot write to it")
    v = iv._vector().detach().to("cpu", torch.float32)
    shape = model.feature_shape(site)
    F = int(torch.tensor(shape).prod())
    heads = None if iv.heads is None else [int(h) for h in iv.heads]
    if heads is not None:
        if not site.per_head:
            raise DirectionShapeError(f"heads= applies to per-head sites only, not {site.name}")
        bad = [h for h in heads if not 0 <= h < shape[0]]
        if bad or not heads:
            raise DirectionShapeError(
                f"heads {bad or heads} invalid for {site.name}, which has heads 0..{shape[0] - 1}")
        if tuple(v.shape) == (shape[1],):
            v = v.expand(len(heads), shape[1]).clone()
        elif tuple(v.shape) != (len(heads), shape[1]):
            raise DirectionShapeError(
                f"{iv.label()} at {site.name} with heads={heads}: vector must have shape "
                f"[{shape[1]}] (shared) or [{len(heads)}, {shape[1]}], got {list(v.shape)}")
    elif tuple(v.shape) in ((F,), shape):
        v = v.reshape(F)
    else:
        want = f"[{F}]" + (f" or {list(shape)}" if len(shape) > 1 else "")
        raise DirectionShapeError(
            f"{iv.label()} at {site.name}: vector must have shape {want}, got {list(v.shape)}")
    if not bool(torch.isfinite(v).all()):
        raise DirectionShapeError(f"{iv.label()} at {site.name}: vector has NaN/inf entries")
    if iv._unit():
        norm = v.norm(dim=-1, keepdim=True)
        if bool((norm == 0).any()):
            raise DirectionShapeError(f"{iv.label()} at {site.name}: direction has zero norm")
        v = v / norm
    return v, heads


class InterventionHandle:
    """Registered interventions; a context manager that removes them on exit."""

    def __init__(self, model: Any, interventions: Sequence[Intervention], strict: bool = False,
                 nil_rtol: float = NIL_RTOL):
        self.model, self.strict, self.nil_rtol = model, strict, nil_rtol
        self.effects: list[InterventionEffect] = []
        self._handles: list[Any] = []
        try:
            for iv in interventions:
                for site in model.resolve_sites(iv.site):
                    self._attach(iv, site)
        except BaseException:
            self.remove()
            raise

    def _attach(self, iv: Intervention, site: Site) -> None:
        v, heads = _prepare(iv, site, self.model)
        spec = normalise_positions(iv.positions)
        eff = InterventionEffect(iv.label(), site.name)
        cache: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}
        model = self.model

        def fn(x: torch.Tensor) -> torch.Tensor | None:
            eff.calls += 1
            axis = site.pos_axis
            mask = model.position_mask(spec, x.shape[axis], x.shape[0]).to(x.device)
            if not bool(mask.any()):
                return None
            vv = cache.setdefault((x.device, torch.float32), v.to(x.device))
            sel = x[mask]  # [N, *feature]
            xf = sel.float()
            if heads is None:
                new = iv.edit(xf.flatten(1), vv).view_as(xf)
            else:
                new = xf.clone()
                new[:, heads] = iv.edit(xf[:, heads], vv)
            new = new.to(x.dtype)
            eff.rows += int(mask.sum())
            eff.max_abs_change = max(eff.max_abs_change, float((new.float() - xf).abs().max()))
            eff.max_abs_activation = max(eff.max_abs_activation, float(xf.abs().max()))
            out = x.clone()
            out[mask] = new
            return out

        self._handles.append(self.model.add_hook(site, fn))
        self.effects.append(eff)

    def remove(self) -> None:
        """Detach every hook (idempotent)."""
        while self._handles:
            self._handles.pop().remove()

    def nil_effects(self) -> list[InterventionEffect]:
        return [e for e in self.effects if e.nil(self.nil_rtol)]

    def report(self) -> str:
        return "\n".join(e.describe() for e in self.effects)

    def __enter__(self) -> InterventionHandle:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()
        if exc_type is not None:
            return
        nil = self.nil_effects()
        if not nil:
            return
        msg = "intervention had no effect: " + "; ".join(e.describe() for e in nil)
        if self.strict:
            raise NilInterventionError(msg)
        warnings.warn(msg, NilInterventionWarning, stacklevel=2)


def intervene(model: Any, *interventions: Intervention, strict: bool = False,
              nil_rtol: float = NIL_RTOL) -> InterventionHandle:
    """Register ``interventions`` on ``model`` (an :class:`interp.InterpModel`) now; use the
    result as a context manager (or call ``.remove()``)."""
    if not interventions:
        raise InterpError("intervene() needs at least one intervention")
    return InterventionHandle(model, interventions, strict=strict, nil_rtol=nil_rtol)

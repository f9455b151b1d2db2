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

Numeric guards: every parameter (``scale``, ``fraction``, ``delta``, ``sigma``, a
:class:`DirectionEdit`'s keyword parameters) must be a finite number and every vector finite --
and non-zero where it is a direction -- when the intervention is built, and of the site's shape
when it is attached (:class:`DirectionShapeError`, one line). While the context is open
(``check_finite=True``, the default), an edit that turns finite activations into NaN or inf
(e.g. a huge scale, or overflow into float16) and non-finite logits of an intervened forward
raise :class:`NonFiniteActivationError` naming the intervention, site, prompt and position, so
a NaN is never reported as an edit that "had no effect".
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import torch

from .errors import (
    DirectionShapeError,
    InterpError,
    NilInterventionError,
    NilInterventionWarning,
    NonFiniteActivationError,
)
from .finite import all_finite, nonfinite_rows
from .intervention_kinds import (
    AddVector,
    DirectionEdit,
    Intervention,
    KeepOnly,
    ProjectOut,
    ShiftAlong,
)
from .positions import normalise_positions
from .sites import Site

NIL_RTOL = 1e-6
__all__ = ["AddVector", "DirectionEdit", "Intervention", "InterventionEffect",
           "InterventionHandle", "KeepOnly", "ProjectOut", "ShiftAlong", "intervene"]


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
    iv.check()  # again: its fields may have changed since it was built
    v = iv.vector_tensor().to("cpu", torch.float64)
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
    if iv._unit():
        norm = v.norm(dim=-1, keepdim=True)  # float64: no overflow for large float32 entries
        if bool((norm == 0).any()):
            raise DirectionShapeError(f"{iv.label()} at {site.name}: direction has zero norm")
        v = v / norm
    v = v.to(torch.float32)
    if not bool(torch.isfinite(v).all()):
        raise DirectionShapeError(f"{iv.label()} at {site.name}: the vector overflows float32 "
                                  "(entries beyond 3.4e38); pass a smaller vector")
    return v, heads


def _raise_nonfinite(iv: Intervention, site: Site, model: Any, mask: torch.Tensor,
                     bad_rows: torch.Tensor) -> None:
    """Name the prompt and position of the first edited row that became non-finite."""
    b, t = (int(i) for i in torch.nonzero(mask)[int(torch.nonzero(bad_rows)[0])])
    batch = model.current_batch
    if batch is not None:
        prompt = int(batch.prompt_index[b])
        pos = t + batch.width - mask.shape[1] - int(batch.offsets[b])
    else:
        prompt, pos = b, t
    raise NonFiniteActivationError(
        f"{iv.label()} at {site.name} turned finite activations into NaN/inf at prompt {prompt}, "
        f"position {pos} ({int(bad_rows.sum())} of {len(bad_rows)} edited rows); use a smaller "
        "scale or shift, or a wider dtype")


class EffectsHandle:
    """The reporting shared by :class:`InterventionHandle` and :class:`interp.AblationHandle`:
    the measured ``effects``, the nil ones among them, and, on a normal exit, one
    :class:`NilInterventionWarning` (:class:`NilInterventionError` when ``strict``) naming them.
    """

    #: what the nil report calls the edits ("intervention had no effect: ...")
    noun = "intervention"
    effects: list[InterventionEffect]
    strict: bool
    nil_rtol: float

    def nil_effects(self) -> list[InterventionEffect]:
        return [e for e in self.effects if e.nil(self.nil_rtol)]

    def report(self) -> str:
        return "\n".join(e.describe() for e in self.effects)

    def __enter__(self) -> Self:
        return self

    def _report_nil(self) -> None:
        """Warn (or raise, when ``strict``) about the nil effects; called from ``__exit__``, so
        the warning points at the ``with`` statement."""
        nil = self.nil_effects()
        if not nil:
            return
        msg = f"{self.noun} had no effect: " + "; ".join(e.describe() for e in nil)
        if self.strict:
            raise NilInterventionError(msg)
        warnings.warn(msg, NilInterventionWarning, stacklevel=3)


class InterventionHandle(EffectsHandle):
    """Registered interventions; a context manager that removes them on exit."""

    def __init__(self, model: Any, interventions: Sequence[Intervention], strict: bool = False,
                 nil_rtol: float = NIL_RTOL, check_finite: bool = True):
        self.model, self.strict, self.nil_rtol = model, strict, nil_rtol
        self.check_finite = check_finite
        self.effects: list[InterventionEffect] = []
        self._handles: list[Any] = []
        self._labels: list[str] = []
        try:
            for iv in interventions:
                if not isinstance(iv, Intervention):
                    raise InterpError(f"intervene() takes Intervention objects (ProjectOut, "
                                      f"AddVector, ...), got {type(iv).__name__}")
                for site in model.resolve_sites(iv.site):
                    self._attach(iv, site)
        except BaseException:
            self.remove()
            raise
        if check_finite and hasattr(model, "checked_edits"):
            self._labels = [f"{e.intervention} at {e.site}" for e in self.effects]
            model.checked_edits.extend(self._labels)

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
            if self.check_finite and not all_finite(new):
                gone = ~nonfinite_rows(xf) & nonfinite_rows(new)
                if bool(gone.any()):
                    _raise_nonfinite(iv, site, model, mask.cpu(), gone.cpu())
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
        active = getattr(self.model, "checked_edits", None)
        while self._labels:
            label = self._labels.pop()
            if active is not None and label in active:
                active.remove(label)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()
        if exc_type is None:
            self._report_nil()


def intervene(model: Any, *interventions: Intervention, strict: bool = False,
              nil_rtol: float = NIL_RTOL, check_finite: bool = True) -> InterventionHandle:
    """Register ``interventions`` on ``model`` (an :class:`interp.InterpModel`) now; use the
    result as a context manager (or call ``.remove()``). ``check_finite``: raise
    :class:`NonFiniteActivationError` when an edit or the logits it leads to are not finite."""
    if not interventions:
        raise InterpError("intervene() needs at least one intervention")
    return InterventionHandle(model, interventions, strict=strict, nil_rtol=nil_rtol,
                              check_finite=check_finite)

"""Ablations as interventions: zero a head, zero a sublayer, bypass a layer -- hooks through
:class:`interp.InterpModel`, never edits to model code (Paper I's ablation protocols, spec §1.9).

* :class:`ZeroHead` ``("attn.L.z", head)``: the listed heads' slices of the per-head attention
  output (the out-projection's input) set to zero; other heads untouched.
* :class:`ZeroSublayer` ``("attn_out.L" | "mlp_out.L")``: the sublayer's output (bias included)
  set to zero. ``"attn_out.*"`` on every layer leaves an attention-free model.
* :class:`BypassLayer` ``(layers)``: ``resid_post.L`` replaced by ``resid_pre.L`` -- the block's
  output is its input. :func:`cumulative_bypass` ``(L)`` bypasses layers 0..L; bypassing every
  layer leaves the embedding-only model, logits = head(final_norm(embeddings)).

``with ablate(model, ZeroHead("attn.0.z", 2)) as h:`` registers the hooks and removes them on
exit (also when the body raises); plain :class:`~interp.Intervention` objects may be mixed in
and go through :func:`interp.intervene`. Every forward of ``model.hf`` inside the context is
ablated, so :func:`windtunnel.evaluate.evaluate` run on ``model.hf`` evaluates the ablated model
against the exact posterior. ``h.effects`` holds the measured change per site; an ablation that
changed nothing (never ran, or its site was already zero) warns with
:class:`NilInterventionWarning` (or raises :class:`NilInterventionError` with ``strict=True``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import torch

from .errors import InterpError
from .intervention_kinds import Intervention
from .interventions import (
    NIL_RTOL,
    EffectsHandle,
    InterventionEffect,
    InterventionHandle,
    intervene,
)
from .positions import PositionSpec, normalise_positions
from .sites import Site

if TYPE_CHECKING:
    from .model import InterpModel

__all__ = ["Ablation", "AblationHandle", "BypassLayer", "ZeroHead", "ZeroSublayer", "ablate",
           "cumulative_bypass"]


@dataclass
class Ablation:
    """Base: an edit that needs no vector (zeroing, bypassing)."""

    positions: PositionSpec = field(default="all", kw_only=True)

    def label(self) -> str:
        return type(self).__name__

    def attach(self, handle: AblationHandle) -> None:
        raise NotImplementedError


def _sites(model: InterpModel, names: str | Sequence[str], kinds: tuple[str, ...], who: str
           ) -> list[Site]:
    sites = model.resolve_sites(names)
    bad = [s.name for s in sites if s.kind not in kinds]
    if bad:
        raise InterpError(f"{who} applies to {' / '.join(kinds)} sites, not {', '.join(bad)}")
    return sites


def _zeroing(handle: AblationHandle, ab: Ablation, site: Site, label: str,
             zero: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Hook ``site`` with ``x[mask] = zero(x[mask])``, recording the change."""
    model, spec = handle.model, normalise_positions(ab.positions)
    eff = InterventionEffect(label, site.name)

    def fn(x: torch.Tensor) -> torch.Tensor | None:
        eff.calls += 1
        mask = model.position_mask(spec, x.shape[site.pos_axis], x.shape[0]).to(x.device)
        if not bool(mask.any()):
            return None
        sel = x[mask]
        new = zero(sel)
        eff.rows += int(mask.sum())
        with torch.no_grad():  # bookkeeping only: no graph, no requires_grad warning in training
            change = float((new.float() - sel.float()).abs().max())
            size = float(sel.float().abs().max())
        eff.max_abs_change = max(eff.max_abs_change, change)
        eff.max_abs_activation = max(eff.max_abs_activation, size)
        out = x.clone()
        out[mask] = new
        return out

    handle.add(site, fn, eff)


@dataclass
class ZeroHead(Ablation):
    """Zero head(s) ``head`` of the per-head attention output ``site`` (``"attn.L.z"``; a
    pattern such as ``"attn.*.z"`` zeroes that head in every layer)."""

    site: str | Sequence[str]
    head: int | Sequence[int]

    def heads(self) -> list[int]:
        return [int(self.head)] if isinstance(self.head, int) else [int(h) for h in self.head]

    def label(self) -> str:
        return f"ZeroHead(heads={self.heads()})"

    def attach(self, handle: AblationHandle) -> None:
        heads = self.heads()
        for site in _sites(handle.model, self.site, ("attn.z",), "ZeroHead"):
            n = handle.model.feature_shape(site)[0]
            bad = [h for h in heads if not 0 <= h < n]
            if bad or not heads:
                raise InterpError(f"ZeroHead: heads {bad or heads} invalid for {site.name}, "
                                  f"which has heads 0..{n - 1}")

            def zero(sel: torch.Tensor) -> torch.Tensor:  # sel [N, H, dh]
                out = sel.clone()
                out[:, heads] = 0
                return out

            _zeroing(handle, self, site, self.label(), zero)


@dataclass
class ZeroSublayer(Ablation):
    """Zero the output of a sublayer: ``"attn_out.L"`` (attention) or ``"mlp_out.L"`` (MLP);
    patterns (``"mlp_out.*"``) and lists allowed."""

    site: str | Sequence[str]

    def attach(self, handle: AblationHandle) -> None:
        for site in _sites(handle.model, self.site, ("attn_out", "mlp_out"), "ZeroSublayer"):
            _zeroing(handle, self, site, self.label(), torch.zeros_like)


@dataclass
class BypassLayer(Ablation):
    """Make block ``layers`` the identity: ``resid_post.L`` := ``resid_pre.L`` (of the same,
    possibly already ablated, forward pass). ``layers``: an int, a list, or ``"*"``."""

    layers: int | Sequence[int] | str

    def layer_list(self, n_layers: int) -> list[int]:
        if self.layers == "*":
            return list(range(n_layers))
        from .sites import resolve_layers

        if isinstance(self.layers, str):
            raise ValueError(f"layers must be '*', an index or indices, got {self.layers!r}")
        ls = [self.layers] if isinstance(self.layers, int) else list(self.layers)
        return resolve_layers(ls, n_layers)

    def attach(self, handle: AblationHandle) -> None:
        model, spec = handle.model, normalise_positions(self.positions)
        for L in self.layer_list(model.n_layers):
            pre, post = Site("resid_pre", L), Site("resid_post", L)
            eff = InterventionEffect(f"BypassLayer({L})", post.name)
            stash: list[torch.Tensor] = []

            def keep(x: torch.Tensor, stash: list = stash) -> None:
                stash.clear()
                stash.append(x)
                return None

            def swap(x: torch.Tensor, stash: list = stash, eff: InterventionEffect = eff,
                     pre: Site = pre, post: Site = post) -> torch.Tensor | None:
                eff.calls += 1
                if not stash:
                    raise InterpError(f"BypassLayer: {post.name} ran without {pre.name}")
                x_in = stash.pop()
                if x_in.shape != x.shape:
                    raise InterpError(f"BypassLayer: {pre.name} {list(x_in.shape)} and "
                                      f"{post.name} {list(x.shape)} differ in shape")
                mask = model.position_mask(spec, x.shape[1], x.shape[0]).to(x.device)
                if not bool(mask.any()):
                    return None
                eff.rows += int(mask.sum())
                eff.max_abs_change = max(eff.max_abs_change,
                                         float((x_in[mask].float() - x[mask].float()).abs().max()))
                eff.max_abs_activation = max(eff.max_abs_activation,
                                             float(x[mask].float().abs().max()))
                out = x.clone()
                out[mask] = x_in[mask].to(x.dtype)
                return out

            handle.add(pre, keep, None)
            handle.add(post, swap, eff)


def cumulative_bypass(last_layer: int, **kw: Any) -> BypassLayer:
    """Bypass layers 0..``last_layer`` (inclusive; negative counts from the end)."""
    if last_layer < 0:
        return _CumulativeBypass(last_layer, **kw)
    return BypassLayer(list(range(last_layer + 1)), **kw)


@dataclass
class _CumulativeBypass(BypassLayer):
    def layer_list(self, n_layers: int) -> list[int]:
        from .sites import resolve_layer

        return list(range(resolve_layer(int(self.layers), n_layers) + 1))  # type: ignore[arg-type]


class AblationHandle(EffectsHandle):
    """Registered ablations (and interventions); a context manager that removes them on exit."""

    noun = "ablation"

    def __init__(self, model: InterpModel, items: Sequence[Ablation | Intervention],
                 strict: bool = False, nil_rtol: float = NIL_RTOL):
        self.model, self.strict, self.nil_rtol = model, strict, nil_rtol
        self.effects: list[InterventionEffect] = []
        self._handles: list[Any] = []
        self._inner: InterventionHandle | None = None
        ivs = [i for i in items if isinstance(i, Intervention)]
        try:
            for it in items:
                if isinstance(it, Ablation):
                    it.attach(self)
                elif not isinstance(it, Intervention):
                    raise InterpError(f"ablate() takes ZeroHead, ZeroSublayer, BypassLayer or "
                                      f"Intervention objects, got {type(it).__name__}")
            if ivs:
                self._inner = intervene(model, *ivs, strict=strict, nil_rtol=nil_rtol)
        except BaseException:
            self.remove()
            raise

    def add(self, site: Site, fn: Callable[[torch.Tensor], torch.Tensor | None],
            eff: InterventionEffect | None) -> None:
        self._handles.append(self.model.add_hook(site, fn))
        if eff is not None:
            self.effects.append(eff)

    def remove(self) -> None:
        while self._handles:
            self._handles.pop().remove()
        if self._inner is not None:
            self._inner.remove()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._inner is not None:
            inner, self._inner = self._inner, None
            try:
                inner.__exit__(exc_type, exc, tb)
            finally:
                self.remove()
        self.remove()
        if exc_type is None:
            self._report_nil()


def ablate(model: InterpModel, *items: Ablation | Intervention, strict: bool = False,
           nil_rtol: float = NIL_RTOL) -> AblationHandle:
    """Register ablations (and any plain interventions) on ``model`` (an
    :class:`interp.InterpModel`) now; use the result as a context manager."""
    if not items:
        raise InterpError("ablate() needs at least one ablation")
    return AblationHandle(model, items, strict=strict, nil_rtol=nil_rtol)

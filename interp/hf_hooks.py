"""The default backend: plain PyTorch forward hooks on the Hugging Face modules themselves.

Each site is exposed to a hook function ``fn(x) -> x' | None`` in its canonical layout (see
:mod:`interp.sites`); returning a tensor replaces the activation (interventions), returning
``None`` only reads it (capture). Hooks exist only while a handle is held: nothing is registered on
modules whose sites were not requested, and an idle model carries no hooks at all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from .errors import InterpError
from .families import AttentionGeometry, ModuleMap
from .sites import Site
from .token_batch import TokenBatch

SiteFn = Callable[[torch.Tensor], torch.Tensor | None]


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def _replace_first(out: Any, new: torch.Tensor) -> Any:
    return (new, *out[1:]) if isinstance(out, tuple) else new


def _input_hook(module: nn.Module, fn: Callable[[torch.Tensor], torch.Tensor | None],
                ) -> RemovableHandle:
    """Pre-hook on ``module``'s first input (positional or ``hidden_states=``)."""

    def hook(_m: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        if args:
            new = fn(args[0])
            return None if new is None else ((new, *args[1:]), kwargs)
        new = fn(kwargs["hidden_states"])
        return None if new is None else (args, {**kwargs, "hidden_states": new})

    return module.register_forward_pre_hook(hook, with_kwargs=True)


def _output_hook(module: nn.Module, fn: Callable[[Any], Any | None]) -> RemovableHandle:
    def hook(_m: nn.Module, _args: tuple, out: Any) -> Any:
        return fn(out)

    return module.register_forward_hook(hook)


def norm_scale(x: torch.Tensor, norm: nn.Module) -> torch.Tensor:
    """[B, T] float32 divisor of a LayerNorm / RMSNorm applied to ``x`` [B, T, D]."""
    eps = next((getattr(norm, a) for a in ("eps", "variance_epsilon", "epsilon")
                if isinstance(getattr(norm, a, None), float)), 1e-5)
    h = x.float()
    if isinstance(norm, nn.LayerNorm) or "rms" not in type(norm).__name__.lower():
        h = h - h.mean(-1, keepdim=True)
    return (h.pow(2).mean(-1) + eps).sqrt()


class HFHookBackend:
    """Forward hooks on a ``*ForCausalLM`` located by a family adapter."""

    name = "hf"

    def __init__(self, model: nn.Module, modules: ModuleMap,
                 geometry: Callable[[], AttentionGeometry]):
        self.model = model
        self.modules = modules
        self._geometry = geometry  # lazily: read on the first per-head hook
        params = inspect.signature(model.forward).parameters
        self._accepts = {k for k in ("position_ids", "logits_to_keep", "use_cache") if k in params}

    @property
    def n_layers(self) -> int:
        return self.modules.n_layers

    # ------------------------------------------------------------------ hooks
    def add_hook(self, site: Site, fn: SiteFn) -> RemovableHandle:
        """Register ``fn`` on ``site``; the returned handle's ``remove()`` detaches it."""
        m, kind = self.modules, site.kind
        if kind == "resid_pre":
            return _input_hook(m.layer(site), fn)
        if kind == "resid_post":
            return _output_hook(m.layer(site), lambda o: self._swap(o, fn(_first(o))))
        if kind == "attn_out":
            return _output_hook(m.out_proj(site), lambda o: self._swap(o, fn(_first(o))))
        if kind == "mlp_out":
            return _output_hook(m.mlp(site), lambda o: self._swap(o, fn(_first(o))))
        if kind == "logits":
            return _output_hook(m.lm_head(site), lambda o: self._swap(o, fn(_first(o))))
        if kind == "attn.z":
            n_heads = self._geometry().n_heads
            return _input_hook(m.out_proj(site),
                               lambda x: _flat(fn(x.unflatten(-1, (n_heads, -1)))))
        if kind == "attn.pattern":
            return _output_hook(m.attention(site), lambda o: _pattern(o, site, fn))
        if kind == "final_norm.scale":
            norm = m.final_norm(site)
            return _input_hook(norm, lambda x: _read_only(fn(norm_scale(x, norm)), site))
        if kind in ("attn.q", "attn.k", "attn.v"):
            return self._qkv_hook(site, fn)
        raise InterpError(f"no hook for site kind {kind!r}")

    @staticmethod
    def _swap(out: Any, new: torch.Tensor | None) -> Any:
        return None if new is None else _replace_first(out, new)

    def _qkv_hook(self, site: Site, fn: SiteFn) -> RemovableHandle:
        module, which, layout = self.modules.projection(site)
        heads = self._geometry().heads

        def hook(raw: torch.Tensor) -> torch.Tensor | None:
            new = fn(layout.split(raw, which, heads))
            return None if new is None else layout.merge(raw, which, new, heads)

        return _output_hook(module, hook)

    # ------------------------------------------------------------------ forward
    @property
    def input_device(self) -> torch.device:
        emb = self.model.get_input_embeddings()  # type: ignore[operator]
        return emb.weight.device

    def forward(self, batch: TokenBatch, logits_to_keep: int = 0) -> torch.Tensor:
        """Logits [B, T', V] (T' = ``logits_to_keep`` last positions, or all when 0)."""
        b = batch.to(self.input_device)
        kw: dict[str, Any] = {"input_ids": b.input_ids, "attention_mask": b.attention_mask}
        if "position_ids" in self._accepts:
            kw["position_ids"] = b.position_ids
        if "use_cache" in self._accepts:
            kw["use_cache"] = False
        if "logits_to_keep" in self._accepts and logits_to_keep:
            kw["logits_to_keep"] = logits_to_keep
        logits = self.model(**kw).logits
        return logits[:, -logits_to_keep:] if logits_to_keep else logits

    @contextmanager
    def eager_attention(self) -> Iterator[None]:
        """Run with eager attention (the only kernel that returns patterns), then restore."""
        cfg = getattr(self.model, "config", None)
        before = getattr(cfg, "_attn_implementation", None)
        switch = before not in (None, "eager") and hasattr(self.model, "set_attn_implementation")
        if switch:
            self.model.set_attn_implementation("eager")  # type: ignore[operator]
        try:
            yield
        finally:
            if switch:
                self.model.set_attn_implementation(before)  # type: ignore[operator]


def _flat(x: torch.Tensor | None) -> torch.Tensor | None:
    return None if x is None else x.flatten(-2)


def _read_only(ret: torch.Tensor | None, site: Site) -> None:
    if ret is not None:
        raise InterpError(f"site {site.name} is read-only; hooks on it must return None")
    return None


def _pattern(out: Any, site: Site, fn: SiteFn) -> None:
    if not isinstance(out, tuple) or len(out) < 2 or out[1] is None:
        raise InterpError(
            f"{site.name}: the attention module returned no weights; load the model with "
            "attn_implementation='eager' (capture does this by itself when patterns are requested)"
        )
    return _read_only(fn(out[1]), site)

"""The TransformerLens 4.x backend: sites mapped onto ``TransformerBridge`` hook points.

``TransformerBridge`` wraps the same HF modules (raw HF weights, eager attention), so each site
yields the same tensor as the HF-hook backend; the tests check this family by family.
TransformerLens is imported lazily (the import takes seconds). The bridge rewraps the HF model it
is given in place, so a model loaded with this backend is not also hooked with the HF backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from .errors import InterpError
from .sites import SITE_KINDS, Site
from .tl_names import TL_HOOKS
from .token_batch import TokenBatch

SiteFn = Callable[[torch.Tensor], torch.Tensor | None]

assert set(TL_HOOKS) == set(SITE_KINDS), "every site kind needs a TransformerBridge hook"


def hook_name(site: Site) -> str:
    """The TransformerBridge hook point that holds ``site``."""
    return TL_HOOKS[site.kind].format(L=site.layer)


def build_bridge(hf_model: nn.Module, tokenizer: Any | None, source: str | None) -> Any:
    """Wrap ``hf_model`` (in place) in a ``TransformerBridge``.

    With a tokenizer saved next to the weights this is the public
    ``TransformerBridge.boot_transformers(source, hf_model=..., tokenizer=...)``; tokenizer-less
    models (wind-tunnel checkpoints) are wrapped with the same adapter factory directly.
    """
    from transformer_lens.model_bridge import TransformerBridge

    dtype = next(hf_model.parameters()).dtype
    device = str(next(hf_model.parameters()).device)
    if tokenizer is not None and source is not None:
        return TransformerBridge.boot_transformers(
            source, hf_model=hf_model, tokenizer=tokenizer, device=device, dtype=dtype
        )
    from transformer_lens.factories.architecture_adapter_factory import ArchitectureAdapterFactory
    from transformer_lens.model_bridge.sources._bridge_builder import build_bridge_config_from_hf
    from transformer_lens.model_bridge.sources._hf_format import (
        determine_architecture_from_hf_config,
    )
    from transformer_lens.utilities.attn_implementation import force_eager_attention

    cfg: Any = hf_model.config
    arch = determine_architecture_from_hf_config(cfg)
    bcfg = build_bridge_config_from_hf(cfg, arch, source or cfg.model_type, dtype)
    adapter = ArchitectureAdapterFactory.select_architecture_adapter(bcfg)
    adapter.cfg.device = device
    force_eager_attention(hf_model)
    adapter.prepare_model(hf_model)
    return TransformerBridge(hf_model, adapter, None)


class _Handle:
    def __init__(self, point: Any, lens: Any):
        self.point, self.lens = point, lens

    def remove(self) -> None:
        self.lens.hook.remove()
        self.point.fwd_hooks = [h for h in self.point.fwd_hooks if h is not self.lens]


class TransformerLensBackend:
    """Sites as TransformerBridge hook points; forward through the bridge."""

    name = "transformer_lens"

    def __init__(self, bridge: Any, n_layers: int):
        self.bridge = bridge
        self._n_layers = n_layers

    @property
    def n_layers(self) -> int:
        return self._n_layers

    def add_hook(self, site: Site, fn: SiteFn) -> _Handle:
        name = hook_name(site)
        point = self.bridge.hook_dict.get(name)
        if point is None:
            raise InterpError(f"TransformerBridge has no hook point {name} for site {site.name}")
        if site.kind == "final_norm.scale":
            def hook(x: torch.Tensor, hook: Any) -> torch.Tensor | None:
                if fn(x.squeeze(-1)) is not None:
                    raise InterpError(f"site {site.name} is read-only")
                return None
        elif site.kind == "attn.pattern":
            def hook(x: torch.Tensor, hook: Any) -> torch.Tensor | None:
                if fn(x) is not None:
                    raise InterpError(f"site {site.name} is read-only")
                return None
        else:
            def hook(x: torch.Tensor, hook: Any) -> torch.Tensor | None:
                return fn(x)
        return _Handle(point, point.add_hook(hook, dir="fwd"))

    @property
    def input_device(self) -> torch.device:
        return next(self.bridge.parameters()).device

    def forward(self, batch: TokenBatch, logits_to_keep: int = 0) -> torch.Tensor:
        b = batch.to(self.input_device)
        logits = self.bridge(b.input_ids, attention_mask=b.attention_mask,
                             position_ids=b.position_ids, return_type="logits")
        return logits[:, -logits_to_keep:] if logits_to_keep else logits

    @contextmanager
    def eager_attention(self) -> Iterator[None]:
        yield  # the bridge always runs eager attention

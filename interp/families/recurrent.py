"""Recurrent families: HF's Mamba and Mamba-2 and the wind-tunnel LSTM. They have no attention.

Their sites are ``resid_pre.L`` / ``resid_post.L`` (a block's input and output),
``final_norm.scale`` and ``logits``; Mamba's mixer output (the block's one sublayer, so
``resid_post.L = resid_pre.L + mlp_out.L`` as in a transformer block without attention) is
``mlp_out.L``; Mamba-2's block has the same layout (its mixer: the SSD with gated norm). The
LSTM's layers have no residual connection and no sublayer: a layer's output,
the recurrence itself, is ``resid_post.L``. Every attention site (``attn.L.q/k/v/pattern/z``,
``attn_out.L``), the LSTM's ``mlp_out.L`` and head geometry raise one
:class:`NoAttentionError` line saying so, before any forward pass runs.

The LSTM (``model_type`` ``bayesgeom_lstm``) loads with ``interp.load(path)`` once
``windtunnel`` is imported in the process (its Auto-class registration is global); Mamba is a
stock ``MambaForCausalLM`` (Mamba-2: ``Mamba2ForCausalLM``) and loads without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from torch import nn

from ..errors import SiteNotLocatedError, UnsupportedArchitectureError
from ..qkv_layout import QKVLayout
from ..sites import Site
from .adapter import AttentionGeometry, FamilyAdapter, ModuleMap, _get


class NoAttentionError(SiteNotLocatedError):
    """A site or head count asked of a model that has no attention (a usage error)."""


@dataclass(frozen=True)
class RecurrentAdapter(FamilyAdapter):
    """A family without attention; ``mixer`` names what ``mlp_out.L`` is (or ``None``)."""

    mixer: str | None = None

    def locate(self, model: nn.Module) -> ModuleMap:
        layers = _get(model, self.layers)
        if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
            raise UnsupportedArchitectureError(
                f"{type(model).__name__}: no layer list at {self.layers!r} "
                f"(adapter {self.name!r}); interp cannot locate resid_pre/resid_post")
        return RecurrentModuleMap(adapter=self, model=model, layers=list(layers))


@dataclass
class RecurrentModuleMap(ModuleMap):
    """The modules of a recurrent model: attention sites are refused in one line."""

    def _has(self) -> str:
        a = self.adapter
        mixer = getattr(a, "mixer", None)
        extra = f", mlp_out.L ({mixer})" if mixer else ""
        return (f"its sites are resid_pre.L, resid_post.L{extra}, final_norm.scale and logits "
                f"for L in 0..{self.n_layers - 1}")

    def _refuse(self, what: str) -> NoAttentionError:
        return NoAttentionError(
            f"{what}: {type(self.model).__name__} is a recurrent model ({self.adapter.name}) "
            f"with no attention; {self._has()}")

    def attention(self, site: Site) -> nn.Module:
        raise self._refuse(f"site {site.name}")

    def out_proj(self, site: Site) -> nn.Module:
        raise self._refuse(f"site {site.name}")

    def projection(self, site: Site) -> tuple[nn.Module, int, QKVLayout]:
        raise self._refuse(f"site {site.name}")

    def geometry(self) -> AttentionGeometry:
        raise self._refuse("attention heads (attn.L.* sites)")

    def mlp(self, site: Site) -> nn.Module:
        if self.adapter.mlp is None:
            raise NoAttentionError(
                f"site {site.name}: {type(self.model).__name__} ({self.adapter.name}) has no "
                f"MLP or mixer sublayer (a layer's output is resid_post.L); {self._has()}")
        return super().mlp(site)


MAMBA = RecurrentAdapter(
    name="mamba",
    model_types=("mamba",),
    layers="backbone.layers",
    attention=None,
    out_proj=None,
    mlp="mixer",
    final_norm="backbone.norm_f",
    lm_head="lm_head",
    mixer="the mixer output",
    description="Mamba (HF MambaForCausalLM: selective-scan mixer, RMSNorm, no attention; "
                "mlp_out.L is the mixer output)",
)

#: Mamba-2's block has Mamba's layout; only its mixer differs
MAMBA2 = replace(
    MAMBA, name="mamba2", model_types=("mamba2",),
    description="Mamba-2 (HF Mamba2ForCausalLM: SSD mixer with a scalar decay per head, "
                "RMSNorm, no attention; mlp_out.L is the mixer output)")

LSTM = RecurrentAdapter(
    name="lstm",
    model_types=("bayesgeom_lstm",),
    layers="layers",
    attention=None,
    out_proj=None,
    mlp=None,
    final_norm="norm",
    lm_head="lm_head",
    description="the wind-tunnel LSTM (stacked nn.LSTM layers, no residual, no attention)",
)

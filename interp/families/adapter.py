"""A family adapter: every layout fact of one architecture family -- where each site lives
inside a Hugging Face causal LM, and how its q/k/v projections are laid out.

Paths are dotted attribute paths: ``layers`` and the final norm / LM head from the
``*ForCausalLM`` module; ``attention`` and ``mlp`` from one decoder layer; the projections (see
:mod:`interp.qkv_layout`) from the attention module. :meth:`FamilyAdapter.locate` resolves them
on a model into a :class:`ModuleMap`, the only thing the hook backend needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..errors import SiteNotLocatedError, UnsupportedArchitectureError
from ..qkv_layout import QKVLayout
from ..sites import Site

#: config attribute names of the model width, head counts and head size, across families
WIDTH_NAMES = ("hidden_size", "n_embd", "d_model")
HEAD_NAMES = ("num_attention_heads", "n_head", "num_heads")
KV_HEAD_NAMES = ("num_key_value_heads", "n_kv_heads")


@dataclass(frozen=True)
class AttentionGeometry:
    """Head counts and sizes. Under GQA query head ``h`` reads key/value head
    ``kv_head_of_query[h]`` (``h // (n_heads // n_kv_heads)``, as in HF's ``repeat_kv``)."""

    n_heads: int
    n_kv_heads: int
    d_head: int

    @property
    def heads(self) -> tuple[int, int, int]:
        """(H, Hkv, dh), as the q/k/v layouts take it."""
        return (self.n_heads, self.n_kv_heads, self.d_head)

    @property
    def kv_head_of_query(self) -> tuple[int, ...]:
        group = self.n_heads // self.n_kv_heads
        return tuple(h // group for h in range(self.n_heads))


@dataclass(frozen=True)
class FamilyAdapter:
    """Module paths of one architecture family (``None``: the family has no such module)."""

    name: str
    model_types: tuple[str, ...]
    layers: str
    attention: str | None
    out_proj: str | None
    mlp: str | None
    final_norm: str | None
    lm_head: str | None
    qkv: QKVLayout | None = None
    description: str = ""

    def locate(self, model: nn.Module) -> ModuleMap:
        """Resolve the paths on ``model``; raises naming the first piece that is missing."""
        layers = _get(model, self.layers)
        if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
            raise UnsupportedArchitectureError(
                f"{type(model).__name__}: no decoder-layer list at {self.layers!r} "
                f"(adapter {self.name!r}); interp cannot locate resid_pre/resid_post"
            )
        return ModuleMap(adapter=self, model=model, layers=list(layers))


def _get(root: nn.Module, path: str | None) -> nn.Module | None:
    if path is None:
        return None
    mod: object = root
    for part in path.split("."):
        mod = getattr(mod, part, None)
        if mod is None:
            return None
    return mod if isinstance(mod, nn.Module) else None


def out_features(m: nn.Module) -> int:
    """Output width of a projection (``nn.Linear`` or transformers' ``Conv1D``)."""
    if isinstance(m, nn.Linear):
        return m.out_features
    nf = getattr(m, "nf", None)  # transformers' Conv1D (GPT-2): weight [in, out]
    if isinstance(nf, int):
        return nf
    w = getattr(m, "weight", None)
    if w is None:
        raise SiteNotLocatedError(f"cannot read the output width of {type(m).__name__}")
    return int(w.shape[0])


def in_features(m: nn.Module) -> int:
    """Input width of a projection (``nn.Linear`` or transformers' ``Conv1D``)."""
    if isinstance(m, nn.Linear):
        return m.in_features
    w = getattr(m, "weight", None)
    if w is not None and hasattr(m, "nf"):  # Conv1D: weight [in, out]
        return int(w.shape[0])
    if w is not None and w.ndim == 2:
        return int(w.shape[1])
    raise SiteNotLocatedError(f"cannot read the input width of {type(m).__name__}")


def config_int(cfg: object, *names: str) -> int | None:
    """The first positive int among ``cfg``'s attributes ``names`` (None if none)."""
    for n in names:
        v = getattr(cfg, n, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


@dataclass
class ModuleMap:
    """The modules of one loaded model that sites hook into."""

    adapter: FamilyAdapter
    model: nn.Module
    layers: list[nn.Module]

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def _need(self, root: nn.Module, path: str | None, site: Site, what: str) -> nn.Module:
        mod = _get(root, path)
        if mod is None and path is None:
            raise SiteNotLocatedError(
                f"site {site.name} could not be located in {type(self.model).__name__} "
                f"(adapter {self.adapter.name!r}): it has no {what} under a standard name; "
                "add a family adapter in interp/families/ for this architecture"
            )
        if mod is None:
            raise SiteNotLocatedError(
                f"site {site.name} could not be located in {type(self.model).__name__} "
                f"(adapter {self.adapter.name!r}): no {what} at {path!r}"
            )
        return mod

    def layer(self, site: Site) -> nn.Module:
        assert site.layer is not None
        return self.layers[site.layer]

    def attention(self, site: Site) -> nn.Module:
        return self._need(self.layer(site), self.adapter.attention, site, "attention module")

    def out_proj(self, site: Site) -> nn.Module:
        return self._need(self.attention(site), self.adapter.out_proj, site, "out-projection")

    def mlp(self, site: Site) -> nn.Module:
        return self._need(self.layer(site), self.adapter.mlp, site, "MLP module")

    def final_norm(self, site: Site) -> nn.Module:
        return self._need(self.model, self.adapter.final_norm, site, "final norm")

    def lm_head(self, site: Site) -> nn.Module:
        return self._need(self.model, self.adapter.lm_head, site, "LM head")

    def projection(self, site: Site) -> tuple[nn.Module, int, QKVLayout]:
        """(module, which: 0/1/2 for q/k/v, the layout) of an ``attn.L.{q,k,v}`` site."""
        which = {"attn.q": 0, "attn.k": 1, "attn.v": 2}[site.kind]
        layout = self.adapter.qkv
        if layout is None:
            raise SiteNotLocatedError(
                f"site {site.name} could not be located in {type(self.model).__name__} "
                f"(adapter {self.adapter.name!r}): no q/k/v projections under a standard name "
                "(a fused QKV of unknown layout is not split: guessing returns wrong heads); "
                "add a family adapter in interp/families/")
        what = "fused QKV projection" if layout.fused else f"{'qkv'[which]} projection"
        return self._need(self.attention(site), layout.module_path(which), site, what), \
            which, layout

    @property
    def d_model(self) -> int:
        """The residual-stream width (``hidden_size``, ``n_embd`` or ``d_model``)."""
        width = config_int(getattr(self.model, "config", None), *WIDTH_NAMES)
        if width is None:
            raise SiteNotLocatedError(f"{type(self.model).__name__}: its config names no width "
                                      f"({', '.join(WIDTH_NAMES)})")
        return width

    def geometry(self) -> AttentionGeometry:
        """Head counts and sizes, read from the config and checked against the weights."""
        cfg = getattr(self.model, "config", None)
        n_heads = config_int(cfg, *HEAD_NAMES)
        if n_heads is None:
            raise SiteNotLocatedError(f"{type(self.model).__name__}: its config names no head "
                                      f"count ({', '.join(HEAD_NAMES)})")
        d_head = config_int(cfg, "head_dim") or self.d_model // n_heads
        n_kv = config_int(cfg, *KV_HEAD_NAMES) or n_heads
        mod, which, layout = self.projection(Site("attn.v", 0))
        out = out_features(mod)
        if not layout.fused:
            n_kv = out // d_head
        elif out != layout.width(which, (n_heads, n_kv, d_head)):
            raise SiteNotLocatedError(
                f"fused QKV of width {out} does not match {type(layout).__name__} with "
                f"{n_heads} query heads, {n_kv} kv heads of {d_head}")
        if n_kv < 1 or n_heads % n_kv:
            raise SiteNotLocatedError(f"{n_heads} query heads cannot share {n_kv} kv heads")
        return AttentionGeometry(n_heads, n_kv, d_head)

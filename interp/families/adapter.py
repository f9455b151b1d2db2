"""A family adapter: where each site lives inside a Hugging Face causal LM of that family.

Paths are dotted attribute paths: ``layers`` and the final norm / LM head from the
``*ForCausalLM`` module; ``attention`` and ``mlp`` from one decoder layer; the projections from
the attention module. :meth:`FamilyAdapter.locate` resolves them on a model into a
:class:`ModuleMap`, the only thing the hook backend needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from interp.errors import SiteNotLocatedError, UnsupportedArchitectureError
from interp.qkv_layout import FUSED_LAYOUTS
from interp.sites import Site


@dataclass(frozen=True)
class AttentionGeometry:
    """Head counts and sizes. Under GQA query head ``h`` reads key/value head
    ``kv_head_of_query[h]`` (``h // (n_heads // n_kv_heads)``, as in HF's ``repeat_kv``)."""

    n_heads: int
    n_kv_heads: int
    d_head: int

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
    q: str | None = None
    k: str | None = None
    v: str | None = None
    qkv: str | None = None
    qkv_layout: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.qkv is not None and self.qkv_layout not in FUSED_LAYOUTS:
            raise ValueError(f"{self.name}: fused qkv needs a layout in {FUSED_LAYOUTS}")

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


def _out_features(m: nn.Module) -> int:
    if isinstance(m, nn.Linear):
        return m.out_features
    nf = getattr(m, "nf", None)  # transformers' Conv1D (GPT-2)
    if isinstance(nf, int):
        return nf
    w = getattr(m, "weight", None)
    if w is None:
        raise SiteNotLocatedError(f"cannot read the output width of {type(m).__name__}")
    return int(w.shape[0])


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

    def projection(self, site: Site) -> tuple[nn.Module, int | None]:
        """(module, index in the fused q/k/v or None) for an ``attn.L.{q,k,v}`` site."""
        which = {"attn.q": 0, "attn.k": 1, "attn.v": 2}[site.kind]
        attn = self.attention(site)
        if self.adapter.qkv is not None:
            return self._need(attn, self.adapter.qkv, site, "fused QKV projection"), which
        path = (self.adapter.q, self.adapter.k, self.adapter.v)[which]
        return self._need(attn, path, site, f"{'qkv'[which]} projection"), None

    def geometry(self) -> AttentionGeometry:
        """Head counts and sizes, read from the config and checked against the weights."""
        cfg = getattr(self.model, "config", None)
        n_heads = _cfg_int(cfg, "num_attention_heads", "n_head", "num_heads")
        width = _cfg_int(cfg, "hidden_size", "n_embd", "d_model")
        if n_heads is None or width is None:
            raise SiteNotLocatedError(
                f"{type(self.model).__name__}: config lacks num_attention_heads/hidden_size"
            )
        d_head = _cfg_int(cfg, "head_dim") or width // n_heads
        n_kv = _cfg_int(cfg, "num_key_value_heads", "n_kv_heads") or n_heads
        probe = Site("attn.v", 0)
        mod, which = self.projection(probe)
        out = _out_features(mod)
        if which is None:
            n_kv = out // d_head
        elif out != 3 * n_heads * d_head:
            raise SiteNotLocatedError(
                f"fused QKV of width {out} does not match 3 x {n_heads} heads x {d_head}"
            )
        if n_kv < 1 or n_heads % n_kv:
            raise SiteNotLocatedError(f"{n_heads} query heads cannot share {n_kv} kv heads")
        return AttentionGeometry(n_heads, n_kv, d_head)


def _cfg_int(cfg: object, *names: str) -> int | None:
    for n in names:
        v = getattr(cfg, n, None)
        if isinstance(v, int) and v > 0:
            return v
    return None

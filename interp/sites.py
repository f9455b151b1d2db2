"""Stable site names, in TransformerLens' spirit, and their parsing.

A *site* is a named activation of a causal LM. Layered sites carry a layer index ``L`` (negative
indices count from the end: ``resid_post.-1`` is the last layer); ``*`` in place of ``L`` expands
to every layer. Shapes below are per forward pass (``B`` batch, ``T`` positions, ``H`` query
heads, ``Hkv`` key/value heads, ``dh`` head size, ``D`` model width, ``V`` vocabulary):

==================  ===================  ======================================================
site                shape                meaning
==================  ===================  ======================================================
resid_pre.L         [B, T, D]            residual stream entering block L
resid_post.L        [B, T, D]            residual stream leaving block L
attn.L.q            [B, T, H, dh]        queries per head (projection output, before RoPE)
attn.L.k            [B, T, Hkv, dh]      keys per key/value head (before RoPE)
attn.L.v            [B, T, Hkv, dh]      values per key/value head
attn.L.pattern      [B, H, T, T]         attention probabilities (query, key); needs eager
attn.L.z            [B, T, H, dh]        per-head attention output (input of the out-projection)
attn_out.L          [B, T, D]            attention block output (out-projection output)
mlp_out.L           [B, T, D]            MLP output
final_norm.scale    [B, T]               the final norm's divisor sqrt(mean(x_c^2) + eps), x_c
                                         the (mean-centred for LayerNorm) final residual
logits              [B, T, V]            next-token logits
==================  ===================  ======================================================

A TransformerLens hook name holding the same tensor is accepted as its site
(``blocks.3.hook_resid_post`` is ``resid_post.3``; :mod:`interp.tl_names`); an unknown name
gets the nearest site as a hint ("did you mean resid_post.3?") before the list of valid ones.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import UnknownSiteError
from .tl_names import from_tl, tl_hint

#: kind -> (shape, description); the order is the order of listings.
SITE_KINDS: dict[str, tuple[str, str]] = {
    "resid_pre": ("[B, T, D]", "residual stream entering block L"),
    "resid_post": ("[B, T, D]", "residual stream leaving block L"),
    "attn.q": ("[B, T, H, dh]", "queries per head (projection output, before RoPE)"),
    "attn.k": ("[B, T, Hkv, dh]", "keys per key/value head (before RoPE)"),
    "attn.v": ("[B, T, Hkv, dh]", "values per key/value head"),
    "attn.pattern": ("[B, H, T, T]", "attention probabilities (query, key); eager attention"),
    "attn.z": ("[B, T, H, dh]", "per-head attention output (out-projection input)"),
    "attn_out": ("[B, T, D]", "attention block output (out-projection output)"),
    "mlp_out": ("[B, T, D]", "MLP output"),
    "final_norm.scale": ("[B, T]", "final norm divisor sqrt(mean(x_c^2) + eps)"),
    "logits": ("[B, T, V]", "next-token logits"),
}
GLOBAL_KINDS = ("final_norm.scale", "logits")
HEAD_KINDS = ("attn.q", "attn.k", "attn.v", "attn.z")
READ_ONLY_KINDS = ("attn.pattern", "final_norm.scale")
RESIDUAL_KINDS = ("resid_pre", "resid_post", "attn_out", "mlp_out")
#: per-layer kinds with one feature vector per token (what probes read and edits write)
VECTOR_KINDS = (*HEAD_KINDS, *RESIDUAL_KINDS)

_LAYERED = re.compile(r"^(resid_pre|resid_post|attn_out|mlp_out)\.(-?\d+|\*)$")
_ATTN = re.compile(r"^attn\.(-?\d+|\*)\.(q|k|v|pattern|z)$")


@dataclass(frozen=True, order=True)
class Site:
    """A resolved site: ``kind`` (a key of :data:`SITE_KINDS`) and a non-negative ``layer``."""

    kind: str
    layer: int | None = None

    @property
    def name(self) -> str:
        if self.layer is None:
            return self.kind
        if self.kind.startswith("attn."):
            return f"attn.{self.layer}.{self.kind[5:]}"
        return f"{self.kind}.{self.layer}"

    @property
    def per_head(self) -> bool:
        """True for ``attn.L.{q,k,v,z}``: the last two axes are (head, head dim)."""
        return self.kind in HEAD_KINDS

    @property
    def pos_axis(self) -> int:
        """The axis indexing (query) positions: 2 for patterns, 1 otherwise."""
        return 2 if self.kind == "attn.pattern" else 1

    @property
    def writable(self) -> bool:
        return self.kind not in READ_ONLY_KINDS

    def __str__(self) -> str:
        return self.name


def site_name(kind: str, layer: int | None = None) -> str:
    """The name of the site of ``kind`` at ``layer`` (e.g. ``site_name("attn.v", 3)`` is
    ``"attn.3.v"``); raises :class:`UnknownSiteError` for an unknown kind."""
    if kind not in SITE_KINDS:
        raise UnknownSiteError(f"unknown site kind {kind!r}; kinds: {', '.join(SITE_KINDS)}")
    return Site(kind, layer).name


def resolve_layer(layer: int, n_layers: int) -> int:
    """``layer`` as a non-negative index (negatives count from the end); raises
    :class:`UnknownSiteError` naming the valid range."""
    if not -n_layers <= layer < n_layers:
        raise UnknownSiteError(f"layer {layer} does not exist; the model has {n_layers} layers, "
                               f"valid layers are {_layer_range(n_layers)}")
    return layer % n_layers


def resolve_layers(layers: Sequence[int] | None, n_layers: int) -> list[int]:
    """Sorted distinct non-negative layers (None: every layer); a layer named twice (e.g. 1 and
    -1 of a two-layer model) is an error."""
    if layers is None:
        return list(range(n_layers))
    out = [resolve_layer(int(L), n_layers) for L in layers]
    if len(set(out)) != len(out):
        raise UnknownSiteError(f"layers {list(layers)} name the same layer twice")
    return sorted(out)


def all_sites(n_layers: int) -> list[Site]:
    """Every site of a model with ``n_layers`` blocks, kind by kind in :data:`SITE_KINDS`
    order, layers ascending."""
    return [Site(k) if k in GLOBAL_KINDS else Site(k, L)
            for k in SITE_KINDS for L in ([None] if k in GLOBAL_KINDS else range(n_layers))]


def _layer_range(n_layers: int) -> str:
    return f"0..{n_layers - 1} (or -{n_layers}..-1 from the end)"


def valid_site_listing(n_layers: int) -> str:
    """One line listing every valid site name for a model with ``n_layers`` blocks."""
    L = "{L}"
    layered = [f"{k}.{L}" for k in ("resid_pre", "resid_post", "attn_out", "mlp_out")]
    return (
        ", ".join(layered) + f", attn.{L}.{{q,k,v,pattern,z}}, " + ", ".join(GLOBAL_KINDS)
        + f"; L in {_layer_range(n_layers)} or *"
    )


def parse_sites(names: str | list[str] | tuple[str, ...], n_layers: int) -> list[Site]:
    """Resolve site names (``*`` expands to all layers) to unique :class:`Site` s, in order.

    Raises :class:`UnknownSiteError` naming the bad site and listing the valid ones.
    """
    if isinstance(names, str):
        names = [names]
    if not names:
        raise UnknownSiteError(f"no sites requested; valid sites: {valid_site_listing(n_layers)}")
    out: list[Site] = []
    for raw in names:
        for s in _parse_one(raw.strip(), n_layers):
            if s not in out:
                out.append(s)
    return out


def parse_site(name: str, n_layers: int) -> Site:
    """Resolve one site name without wildcards."""
    sites = _parse_one(name.strip(), n_layers)
    if len(sites) != 1:
        raise UnknownSiteError(f"site {name!r} names {len(sites)} sites; give a single layer")
    return sites[0]


def did_you_mean(name: str) -> str:
    """``"did you mean X? "`` for the site nearest to an unknown ``name`` (a TransformerLens
    hook's nearest site, or a near-miss spelling with the same layer), or ``""``."""
    hint = tl_hint(name)
    if hint is None:
        layer = re.search(r"-?\d+|\*", name)
        L = layer.group(0) if layer else "0"
        names = [Site(k).name if k in GLOBAL_KINDS else _named(k, L) for k in SITE_KINDS]
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
        hint = close[0] if close else None
    return f"did you mean {hint}? " if hint else ""


def _named(kind: str, layer: str) -> str:
    return f"attn.{layer}.{kind[5:]}" if kind.startswith("attn.") else f"{kind}.{layer}"


def _parse_one(name: str, n_layers: int) -> list[Site]:
    if name in GLOBAL_KINDS:
        return [Site(name)]
    m = _LAYERED.match(name)
    if m:
        kind, layer = m.group(1), m.group(2)
    else:
        m = _ATTN.match(name)
        if not m:
            tl = from_tl(name)
            if tl is not None:  # a TransformerLens hook name holding a site's tensor
                return _parse_one(tl, n_layers)
            raise UnknownSiteError(f"unknown site {name!r}; {did_you_mean(name)}"
                                   f"valid sites: {valid_site_listing(n_layers)}")
        kind, layer = f"attn.{m.group(2)}", m.group(1)
    if layer == "*":
        return [Site(kind, i) for i in range(n_layers)]
    try:
        return [Site(kind, resolve_layer(int(layer), n_layers))]
    except UnknownSiteError as e:
        raise UnknownSiteError(f"site {name!r}: {e}") from None

"""Patch cells: which activation a patch replaces (site × layer × head × position), and the grid
builder that checks them, with or without a loaded model (no torch is imported here).

A :class:`PatchCell` names one writable per-token site of :mod:`interp.sites` (a *vector* kind:
``resid_pre``, ``resid_post``, ``attn_out``, ``mlp_out``, ``attn.{q,k,v,z}``), at a non-negative
layer, optionally one head of a per-head kind (a key/value head for ``k`` and ``v``) and
optionally one position (an index over each prompt's real tokens, negative from its end;
``None``: every position at once). :func:`cell_grid` expands kinds or site names into cells;
given a :class:`ModelShape` (layer and head counts read from a config) instead of a model it
refuses a bad site, a head out of range or a bad position before anything loads.

Example:
    >>> shape = ModelShape(n_layers=2, n_heads=4, n_kv_heads=2)
    >>> cells = cell_grid(shape, ["resid_pre", "attn.v"], heads=True, positions=[0, -1])
    >>> len(cells), cells[0], cells[-1].site, cells[-1].head
    (12, PatchCell(site='resid_pre.0', layer=0, head=None, position=0), 'attn.1.v', 1)
    >>> cell_grid(shape, "attn.0.z", heads=[4])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayesgeom.interp.errors.UnknownSiteError: head 4 does not exist at attn.0.z: the model ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .errors import PositionError, PromptError, UnknownSiteError
from .sites import HEAD_KINDS, SITE_KINDS, VECTOR_KINDS, Site, parse_sites, resolve_layers
from .tl_names import from_tl

if TYPE_CHECKING:
    from .model import InterpModel

#: the kinds a patch can replace, in listing order
PATCH_KINDS = tuple(k for k in SITE_KINDS if k in VECTOR_KINDS)
CellPositions = None | Literal["each"] | int | Sequence[int | None]


@dataclass(frozen=True)
class ModelShape:
    """What a patch grid is checked against: ``n_layers`` blocks, ``n_heads`` query heads and
    ``n_kv_heads`` key/value heads (``None``: not known yet, so heads are checked once the model
    has loaded; ``n_kv_heads`` defaults to ``n_heads``)."""

    n_layers: int
    n_heads: int | None = None
    n_kv_heads: int | None = None

    def heads_of(self, kind: str) -> int | None:
        """The number of heads a per-head ``kind`` has (kv heads for ``attn.k``/``attn.v``)."""
        if kind in ("attn.k", "attn.v") and self.n_kv_heads is not None:
            return self.n_kv_heads
        return self.n_heads


def model_shape(model: InterpModel | ModelShape) -> ModelShape:
    """The :class:`ModelShape` of a loaded model (its attention geometry; heads unknown for a
    model without attention heads), or ``model`` itself when it already is one."""
    if isinstance(model, ModelShape):
        return model
    from .errors import InterpError

    try:
        g = model.geometry
    except InterpError:  # a recurrent model: no heads, so per-head kinds are refused later
        return ModelShape(model.n_layers, 0, 0)
    return ModelShape(model.n_layers, g.n_heads, g.n_kv_heads)


@dataclass(frozen=True, order=True)
class PatchCell:
    """One patched activation: ``site`` (a canonical site name such as ``"attn.2.z"``),
    its ``layer``, ``head`` (``None``: every head; only for ``attn.L.{q,k,v,z}``) and
    ``position`` (real-token index, negative from the end; ``None``: every position)."""

    site: str
    layer: int
    head: int | None = None
    position: int | None = None

    def __post_init__(self) -> None:
        kind = _kind_of(self.site, self.layer)
        if kind is None:
            raise UnknownSiteError(
                f"cell site {self.site!r} at layer {self.layer} is not a patchable site; give a "
                f"canonical name of kind {', '.join(PATCH_KINDS)} (e.g. resid_pre.{self.layer}, "
                f"attn.{self.layer}.z) or use PatchCell.at / cell_grid")
        if self.head is not None and kind not in HEAD_KINDS:
            raise UnknownSiteError(f"cell {self.site} has no heads (heads apply to "
                                   f"{', '.join(HEAD_KINDS)}); give head=None")

    @classmethod
    def at(cls, site: str, head: int | None = None, position: int | None = None) -> PatchCell:
        """The cell of ``site`` (a canonical name with a non-negative layer, or a
        TransformerLens hook name such as ``blocks.3.hook_resid_pre``)."""
        name = from_tl(site) or site
        if "*" in name or ".-" in name:
            raise UnknownSiteError(f"cell site {site!r}: give one site with a non-negative layer "
                                   "(cell_grid resolves * and negative layers against a model)")
        s = parse_sites(name, 1 << 30)[0]  # any layer: checked against a model later
        if s.layer is None:
            raise UnknownSiteError(f"site {s.name} cannot be patched; patchable kinds: "
                                   f"{', '.join(PATCH_KINDS)}")
        return cls(s.name, s.layer, head, position)

    @property
    def kind(self) -> str:
        """The site kind (``"attn.z"``, ``"resid_pre"`` ...)."""
        kind = _kind_of(self.site, self.layer)
        assert kind is not None
        return kind

    @property
    def label(self) -> str:
        """``site[h=head][@position]``, e.g. ``attn.2.z[h=1]@-1``."""
        head = "" if self.head is None else f"[h={self.head}]"
        pos = "" if self.position is None else f"@{self.position}"
        return f"{self.site}{head}{pos}"


def _kind_of(site: str, layer: int) -> str | None:
    if not isinstance(layer, int) or isinstance(layer, bool) or layer < 0:
        return None
    return next((k for k in PATCH_KINDS if Site(k, layer).name == site), None)


def check_cells(cells: Sequence[PatchCell], model: InterpModel | ModelShape,
                length: int | None = None) -> list[PatchCell]:
    """The cells as a list, each checked against the model (or a :class:`ModelShape`): its layer
    exists, its head exists (key/value heads for k and v) and, when ``length`` (tokens per
    prompt) is given, its position exists. Raises :class:`UnknownSiteError` or
    :class:`PositionError` in one line; an empty list is refused too."""
    shape = model_shape(model)
    out = list(cells)
    if not out:
        raise UnknownSiteError("no cells to patch; build them with interp.cell_grid")
    for c in out:
        if not isinstance(c, PatchCell):
            raise UnknownSiteError(f"cells must be PatchCell objects, got {type(c).__name__}")
        if c.layer >= shape.n_layers:
            raise UnknownSiteError(f"cell {c.label}: layer {c.layer} does not exist; the model "
                                   f"has {shape.n_layers} layers (0..{shape.n_layers - 1})")
        if c.head is not None:
            _check_head(c.head, c.site, shape.heads_of(c.kind))
        if c.position is not None and length is not None:
            _check_position(c.position, length, c.label)
    return out


def _check_head(head: int, site: str, n: int | None) -> None:
    if n is None:
        return
    if n == 0:
        raise UnknownSiteError(f"{site}: the model has no attention heads")
    if not 0 <= head < n:
        raise UnknownSiteError(f"head {head} does not exist at {site}: the model has heads "
                               f"0..{n - 1}")


def _check_position(pos: int, length: int, what: str) -> None:
    if not -length <= pos < length:
        raise PositionError(f"position {pos} of {what} does not exist in prompts of {length} "
                            f"tokens (valid: 0..{length - 1} or -{length}..-1)")


def cell_grid(model: InterpModel | ModelShape, kinds: str | Sequence[str], *,
              heads: bool | Sequence[int] = False, positions: CellPositions = None,
              layers: Sequence[int] | None = None, length: int | None = None,
              ) -> list[PatchCell]:
    """Every cell of some site kinds: kind by kind, then layer, head and position ascending.

    ``kinds``: kinds (``"resid_pre"``, ``"attn.z"`` ...), site names or patterns
    (``"attn.*.z"``, ``"mlp_out.-1"``, TransformerLens hook names); ``layers``: the layers of a
    bare kind (None: all), also restricting named sites; ``heads``: False (whole sites), True
    (each head of every per-head kind) or a list of heads; ``positions``: None (every position
    at once), ``"each"`` (each of ``length`` positions), an index or indices (negative from the
    end; checked against ``length`` when given; None among them: every position at once).
    ``model`` may be a :class:`ModelShape`, so a grid is checked before the model loads.
    """
    shape = model_shape(model)
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    if not names:
        raise UnknownSiteError(f"no site kinds to patch; kinds: {', '.join(PATCH_KINDS)}")
    keep = None if layers is None else set(resolve_layers(layers, shape.n_layers))
    sites: list[Site] = []
    for raw in names:
        name = raw.strip()
        if name in SITE_KINDS and name not in PATCH_KINDS:
            raise UnknownSiteError(f"site {name} cannot be patched; patchable kinds: "
                                   f"{', '.join(PATCH_KINDS)}")
        pattern = Site(name, 0).name.replace(".0", ".*", 1) if name in SITE_KINDS else name
        for s in parse_sites(pattern, shape.n_layers):
            if s.kind not in PATCH_KINDS:
                raise UnknownSiteError(f"site {s.name} cannot be patched; patchable kinds: "
                                       f"{', '.join(PATCH_KINDS)}")
            if (keep is None or s.layer in keep) and s not in sites:
                sites.append(s)
    pos = _positions(positions, length)
    cells = [PatchCell(s.name, int(s.layer), h, p)  # type: ignore[arg-type]
             for s in sites for h in _heads(heads, s, shape) for p in pos]
    if not cells:
        raise UnknownSiteError(f"no cells: {names} has no site at layers {sorted(keep or [])}")
    return check_cells(cells, shape, length)


def _heads(heads: bool | Sequence[int], site: Site, shape: ModelShape) -> list[int | None]:
    if heads is False or site.kind not in HEAD_KINDS:
        return [None]
    n = shape.heads_of(site.kind)
    if heads is True:
        if n is None:
            raise UnknownSiteError(f"{site.name}: the head count is not known before the model "
                                   "loads; give heads as a list or load the model")
        _check_head(0, site.name, n)
        return list(range(n))
    out = [int(h) for h in heads]
    if not out:
        raise UnknownSiteError(f"{site.name}: empty list of heads")
    for h in out:
        _check_head(h, site.name, n)
    return list(dict.fromkeys(out))


def _positions(positions: CellPositions, length: int | None) -> list[int | None]:
    if positions is None:
        return [None]
    if isinstance(positions, str):
        if positions != "each":
            raise PositionError(f"unknown positions {positions!r}: use None (all at once), "
                                "'each' or a list of indices")
        if length is None or length < 1:
            raise PositionError("positions='each' needs length= (tokens per prompt)")
        return list(range(length))
    out: list[int | None] = [positions] if isinstance(positions, int) else \
        [None if p is None else int(p) for p in positions]
    if not out:
        raise PositionError("empty list of positions: use None (all at once), 'each' or indices")
    if length is not None:
        for p in out:
            if p is not None:
                _check_position(p, length, "the grid")
    return list(dict.fromkeys(out))


def check_pairs(target_lengths: Sequence[int], source_lengths: Sequence[int],
                cells: Sequence[PatchCell] = ()) -> None:
    """Refuse, in one line, an empty pair set, a different number of target and source prompts,
    a pair whose prompts differ in length (activations are replaced position by position), or a
    cell position missing from some pair; model-free (token counts only).

    Example:
        >>> check_pairs([5, 4], [5, 3])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        bayesgeom.interp.errors.PositionError: pair 1: the target has 4 tokens, the source 3; ...
    """
    t, s = list(target_lengths), list(source_lengths)
    if not t or not s:
        raise PromptError("no pairs to patch (the target or source prompt list is empty)")
    if len(t) != len(s):
        raise PromptError(f"{len(t)} target prompts but {len(s)} source prompts; patching "
                          "needs one source per target")
    for i, (a, b) in enumerate(zip(t, s, strict=True)):
        if a != b:
            raise PositionError(f"pair {i}: the target has {a} tokens, the source {b}; patching "
                                "replaces activations position by position, so each pair needs "
                                "equal lengths")
    short = min(t)
    for c in cells:
        if c.position is not None:
            _check_position(c.position, short, c.label)

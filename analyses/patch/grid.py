"""The cells a patching run measures, and the conditions it measures them under.

Cells (:func:`grid_cells`): for each site kind, every layer (or ``--layers``) × every grid
position (:mod:`.pairs`); a per-head kind (``attn.z``, ``attn.q/k/v``) gets one cell per layer ×
head over every position at once, and, with ``--head-positions``, one per layer × head ×
position too. Conditions (:func:`conditions`), per direction: the trained model on the evidence
pairs, on the Bayes-null pairs (where an exact null exists) and with an unrelated source, and
the random-init twin on the evidence pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import interp
from ...interp.patch_cells import model_shape
from ...interp.sites import HEAD_KINDS, Site
from ..kit.errors import ExperimentError
from .config import DEFAULT_SITES, PatchConfig, site_kinds

#: the models and pair sets of a condition, in run order
MODELS = ("trained", "random_init")
PAIR_KINDS = ("evidence", "bayes_null", "unrelated_source")


@dataclass(frozen=True)
class Condition:
    """One set of patched passes: ``model`` (trained / random_init), ``pairs`` (evidence /
    bayes_null / unrelated_source) and ``direction``."""

    model: str
    pairs: str
    direction: str

    @property
    def key(self) -> str:
        return f"{self.model}-{self.pairs}-{self.direction}"


def conditions(directions: tuple[str, ...], has_null: bool) -> list[Condition]:
    """The run's conditions (module doc), trained ones first (the twin is built after them).

    Example:
        >>> [c.key for c in conditions(("denoising",), has_null=False)]
        ['trained-evidence-denoising', 'trained-unrelated_source-denoising', \
'random_init-evidence-denoising']
    """
    trained = [Condition("trained", p, d) for d in directions for p in PAIR_KINDS
               if p != "bayes_null" or has_null]
    return trained + [Condition("random_init", "evidence", d) for d in directions]


def available_kinds(m: interp.InterpModel, cfg: PatchConfig) -> tuple[str, ...]:
    """The grid's site kinds for the loaded model: as given (each must exist at layer 0), or
    the defaults it has."""
    kinds = site_kinds(cfg.sites, model_shape(m))
    have = []
    for k in kinds:
        try:
            m.resolve_sites(Site(k, 0).name)
            have.append(k)
        except interp.InterpError as e:
            if cfg.sites is not None or k not in DEFAULT_SITES:
                raise ExperimentError(f"--sites {k}: {e}") from None
    if not have:
        raise ExperimentError(f"{m.info.name} has none of the sites {', '.join(kinds)}")
    return tuple(have)


def grid_cells(m: interp.InterpModel, cfg: PatchConfig, positions: list[int], length: int,
               ) -> list[interp.PatchCell]:
    """Every cell of the run (module doc), kind by kind in ``--sites`` order; ``length``: the
    shortest prompt's token count (positions are checked against it)."""
    cells: list[interp.PatchCell] = []
    try:
        for kind in available_kinds(m, cfg):
            if kind in HEAD_KINDS:
                heads = list(cfg.heads) if cfg.heads is not None else True
                cells += interp.cell_grid(m, kind, heads=heads, layers=cfg.layers)
                if cfg.head_positions:
                    cells += interp.cell_grid(m, kind, heads=heads, layers=cfg.layers,
                                              positions=positions, length=length)
            else:
                cells += interp.cell_grid(m, kind, positions=positions, layers=cfg.layers,
                                          length=length)
    except interp.InterpError as e:
        raise ExperimentError(str(e)) from None
    return cells


def kind_of(cell: interp.PatchCell) -> str:
    """A cell's site kind as the heatmaps group it: per-head kinds per position get
    ``@pos`` (``attn.z@pos``), every other cell its kind."""
    return cell.kind + ("@pos" if cell.head is not None and cell.position is not None else "")


def group_of(cell: interp.PatchCell, edit: int | None) -> str:
    """The group a cell is judged in (one verdict each): its :func:`kind_of`, and, where the
    pairs' edit sits at one position ``edit`` (a wind tunnel), a position-wise cell split
    into ``@edit`` (the edited token itself) and ``@later`` (the positions after it).

    Example:
        >>> group_of(interp.PatchCell("resid_pre.2", 2, position=5), 5)
        'resid_pre@edit'
        >>> group_of(interp.PatchCell("attn.2.z", 2, head=1), 5)
        'attn.z'
    """
    kind = kind_of(cell)
    if edit is None or cell.position is None or cell.head is not None:
        return kind
    return f"{kind}@{'edit' if cell.position == edit else 'later'}"

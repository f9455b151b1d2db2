"""The typed result of ``bayesgeom patch`` (:mod:`analyses.patch.run`): what ``summary.json``
holds, read back with :func:`records.read_result`. Per-cell numbers are in ``table.parquet``;
this holds the verdicts, the controls' summaries and the definitions."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...windtunnel.learned import LearnedCheck


@dataclass
class KindVerdict:
    """Does a site kind carry the evidence, in one direction? Over its ``n_cells`` cells:

    * ``n_surviving``: cells that survive every per-cell control (Holm-adjusted paired test
      against the unrelated source, effect beyond the Bayes-null pairs' damage, recovered
      fraction beyond the twin's);
    * ``best``: the in-sample best cell by mean effect, with its effect (interval), recovered
      fraction and adjusted p;
    * the selection control: the best cell chosen on half the pairs and scored on the other
      (``held_out_*``; ``held_out_pick`` the cell chosen most often, ``pick_share`` how often),
      against the same choice among as many unrelated-source cells (``control_held_out_effect``)
      and the twin's cells (``twin_held_out_effect``), and the in-sample best of the control
      cells (``control_best_effect``);
    * ``null_abs_effect``: the Bayes-null pairs' mean |effect| at the held-out pick
      (NaN: no exact null); ``survives``: the held-out best beats the held-out control and
      the pick survives its per-cell controls (None: a quick run).
    """

    kind: str
    direction: str
    n_cells: int
    n_surviving: int
    best: str
    best_effect: float
    best_effect_low: float
    best_effect_high: float
    best_recovered_fraction: float
    best_p_holm: float
    held_out_effect: float
    held_out_recovered_fraction: float
    held_out_pick: str
    pick_share: float
    pick_survives: bool
    control_held_out_effect: float
    control_best_effect: float
    twin_held_out_effect: float
    twin_best_recovered_fraction: float
    null_abs_effect: float
    survives: bool | None


@dataclass
class Agreement:
    """Attribution against exact patching over one site kind's ``n_cells`` cells in one
    direction: Spearman ``spearman`` of the mean effects and the ``worst`` disagreements
    (cell, exact, attribution)."""

    kind: str
    direction: str
    n_cells: int
    spearman: float
    worst: list[str]


@dataclass
class TestFamily:
    """The per-cell tests of one direction: ``n_tests`` cells tested, their ``n_effective``
    independent tests (:func:`probes.effect_effective_number` of the cells' per-pair
    differences) and ``n_surviving`` cells."""

    direction: str
    n_tests: int
    n_effective: float
    n_surviving: int


@dataclass
class PatchingResult:
    """What ``summary.json`` holds. ``source``: "wind tunnel", "sula" or "file"; ``metric``:
    the effect's column (``effect_bits``, or ``effect_logit_diff`` for free pairs);
    ``positions``: the grid's (absolute for a wind tunnel, from the end for text);
    ``reads``: the scored reads (a wind tunnel's; None: each prompt's last token);
    ``n_pairs``: by pair set; ``dropped``: SULA pairs left out for unequal token lengths;
    ``evidence_scale``: mean KL(p*_source ‖ q_target) of the evidence pairs, by direction (what
    a patch could recover; bits); ``null_max_abs_effect``: the largest mean |effect| of any cell
    on the Bayes-null pairs, by direction; ``null_own_response``: the unpatched model's own
    response to the null edit, mean |KL(p* ‖ q_target) − KL(p* ‖ q_source)| (bits: what a
    patch that swaps the whole run moves even where nothing is off distribution);
    ``null_tolerance``: the tolerance of the largest effect as a share of the evidence
    scale."""

    model: str
    source: str
    task: str
    n_layers: int
    sites: list[str]
    directions: list[str]
    positions: list[int]
    reads: list[int] | None
    edit_position: int | None
    n_pairs: dict[str, int]
    n_cells: int
    conditions: list[str]
    metric: str
    kinds: list[KindVerdict]
    tests: list[TestFamily]
    attribution: list[Agreement]
    evidence_scale: dict[str, float]
    null_max_abs_effect: dict[str, float]
    null_own_response: dict[str, float]
    null_tolerance: float
    twin_best_recovered_fraction: dict[str, float]
    definitions: dict[str, str]
    learned: LearnedCheck | None
    quick: bool
    seed: int
    twin_seed: int
    labels: list[str] | None = None
    dropped: dict[str, int] = field(default_factory=dict)
    reused_conditions: int = 0
    wall_s: float = 0.0

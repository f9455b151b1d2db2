"""The typed result of ``bayesgeom dynamics em-vs-sgd`` (its ``summary.json``): the tuning,
per cell, per protocol and over the run. Losses and entropies are in nats, as in the authors'
code; wall times in seconds on the machine that ran it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Trial:
    """One tuning trial: ``protocol`` at ``value`` of its ``param`` on the pilot seed, trained
    the full step count; ``pilot_loss`` its final loss (NaN if it diverged); ``chosen``: the
    argmin of its protocol's trials."""

    protocol: str
    param: str
    value: float
    pilot_seed: int
    steps: int
    pilot_loss: float
    wall_s: float
    chosen: bool
    reused: bool


@dataclass
class Tuning:
    """One tuned protocol's tuning: its grid, the chosen value (the argmin of the pilot
    losses), whether that lies at an end of the grid (the optimum may lie beyond), and the
    wall time its trials took."""

    protocol: str
    param: str
    grid: list[float]
    pilot_losses: list[float]
    chosen: float
    at_edge: bool
    wall_s: float


@dataclass
class Cell:
    """One (protocol, seed): metrics of the final model on the training sequence (deep: on the
    held-out test sequence). ``value``: the protocol's setting (tuned or fixed); ``gap_loss``
    = loss − H_min, ``gap_entropy`` = entropy − H_min; ``steps_to_tuned``: first step
    (updates done) whose loss is below the same seed's final loss under tuned SGD (NaN if
    never, and for tuned SGD itself); ``wall_to_tuned`` = that × ``s_per_step`` (the
    protocol's measured seconds per step in this run); ``steps_to_sgd``: below the mean final
    loss of SGD at lr 0.01 (the authors' measure)."""

    protocol: str
    seed: int
    value: float
    steps: int
    final_loss: float
    entropy: float
    accuracy: float
    gap_loss: float
    gap_entropy: float
    steps_to_tuned: float
    wall_to_tuned: float
    steps_to_sgd: float
    train_loss: float
    wall_s: float
    s_per_step: float
    reused: bool


@dataclass
class ProtocolSummary:
    """Mean and sd (ddof 1; NaN for one seed) over seeds of one protocol's cells. Against
    tuned SGD: ``reached`` of ``n_seeds`` seeds reach their own tuned-SGD final loss;
    ``speedup`` = steps / mean steps to it and ``speedup_wall`` = tuned SGD's wall time for
    all its steps / mean wall time to it (NaN unless every seed reached it); the paired
    t-test of the final losses against tuned SGD's (``p_holm``: Holm over the protocols
    tested); ``survives``: every seed reached it, both speed-ups exceed 1 and the final loss
    is lower at Holm p < 0.05 (None for tuned SGD). ``*_sgd``: the authors' measure, against
    the mean final loss of SGD at lr 0.01."""

    protocol: str
    label: str
    param: str
    value: float
    n_seeds: int
    final_loss_mean: float
    final_loss_sd: float
    entropy_mean: float
    entropy_sd: float
    accuracy_mean: float
    accuracy_sd: float
    gap_loss_mean: float
    gap_loss_sd: float
    gap_entropy_mean: float
    gap_entropy_sd: float
    steps_to_tuned_mean: float
    steps_to_tuned_sd: float
    reached: int
    speedup: float
    wall_to_tuned_mean: float
    s_per_step: float
    speedup_wall: float
    steps_to_sgd_mean: float
    steps_to_sgd_sd: float
    reached_sgd: int
    speedup_sgd: float
    t_vs_tuned: float
    p_vs_tuned: float
    p_holm: float
    survives: bool | None


@dataclass
class EmVsSgdResult:
    """``summary.json``: the preset (``quick`` runs are not results), the set-up checks (P row
    0, effective self-transition, floor), the tuning, the verdict (sentences generated from
    the numbers, the first naming what survives tuning), per-protocol summaries, every cell,
    and the deep variant (None unless ``--deep``)."""

    quick: bool
    seeds: list[int]
    steps: int
    pilot_seed: int
    floor_nats: float
    p_row0: list[float]
    self_transition: float
    n_params: int
    sgd_final_mean: float
    tuned_sgd_final_mean: float
    settings: dict[str, float]
    tuning: dict[str, Tuning]
    tuning_wall_s: float
    verdict: list[str]
    survivors: list[str]
    authors_test: dict[str, float]
    protocols: dict[str, ProtocolSummary]
    cells: list[Cell]
    deep: ProtocolSummary | None
    deep_cells: list[Cell]
    deep_n_params: int | None
    deep_steps: int | None
    notes: list[str]
    references: dict[str, str]
    threads: int
    wall_s: float

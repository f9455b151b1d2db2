"""The typed result of ``bayesgeom dynamics em-vs-sgd`` (its ``summary.json``): per cell, per
protocol and over the run. Losses and entropies are in nats, as in the authors' code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Cell:
    """One (protocol, seed): metrics of the final model on the training sequence (deep:
    on the held-out test sequence). ``gap_loss`` = loss − H_min, ``gap_entropy`` = entropy −
    H_min (the authors' deep "gap", which their code labels bits but computes in nats);
    ``steps_to_sgd``: first step (updates done) whose loss is below the mean final SGD loss,
    NaN if never; ``steps_to_own_sgd``: below the final SGD loss of the same seed (the paired
    threshold; NaN for SGD itself and for the deep variant)."""

    protocol: str
    seed: int
    steps: int
    final_loss: float
    entropy: float
    accuracy: float
    gap_loss: float
    gap_entropy: float
    steps_to_sgd: float
    steps_to_own_sgd: float
    train_loss: float
    wall_s: float
    reused: bool


@dataclass
class ProtocolSummary:
    """Mean and sd (ddof 1; NaN for one seed) over seeds of one protocol's cells, its
    convergence (``reached`` of ``n_seeds`` seeds reach the mean final SGD loss;
    ``speedup`` = steps / mean steps, NaN unless all reached; ``*_own``: the same against each
    seed's own final SGD loss) and the paired t-test of its
    final losses against SGD's (``p_holm``: Holm over the protocols tested)."""

    protocol: str
    label: str
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
    steps_to_sgd_mean: float
    steps_to_sgd_sd: float
    reached: int
    speedup: float
    steps_to_own_sgd_mean: float
    steps_to_own_sgd_sd: float
    reached_own: int
    speedup_own: float
    t_vs_sgd: float
    p_vs_sgd: float
    p_holm: float


@dataclass
class EmVsSgdResult:
    """``summary.json``: the set-up checks (P row 0, effective self-transition, floor), the
    protocols' settings, per-protocol summaries, every cell, and the deep variant (None
    unless ``--deep``)."""

    seeds: list[int]
    steps: int
    floor_nats: float
    p_row0: list[float]
    self_transition: float
    n_params: int
    sgd_final_mean: float
    settings: dict[str, float]
    protocols: dict[str, ProtocolSummary]
    cells: list[Cell]
    deep: ProtocolSummary | None
    deep_cells: list[Cell]
    deep_n_params: int | None
    deep_steps: int | None
    notes: list[str]
    references: dict[str, str]
    wall_s: float

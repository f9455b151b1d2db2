"""The typed result of ``bayesgeom verify`` (:mod:`analyses.verify.run`): what
``summary.json`` holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...windtunnel.learned import LearnedCheck


@dataclass
class OutputScore:
    """One source's *output calibration* against the posterior: ``calibration`` = 1 − mean TV
    of the next-token distribution renormalised over the K hypotheses; KL in bits."""

    source: str
    calibration: float
    mean_tv: float
    mean_kl_bits: float


@dataclass
class HeadTracking:
    """One head: its attention–posterior ``consistency`` (1 − mean TV over the defined
    prompts, NaN where none is; :mod:`probes.posterior_consistency`) with the 10/50/90 %
    quantiles of its per-prompt TV and the random-init twin's same head; then the correlation
    of its per-occurrence attention with the posterior, its permutation test, and its mean
    attention mass on hypothesis tokens: ``mean_mass`` over every prompt, ``mass_defined``
    over the prompts where consistency is defined -- the un-renormalised share of its
    attention row that the renormalised consistency is computed from."""

    layer: int
    head: int
    consistency: float
    tv_p10: float
    tv_p50: float
    tv_p90: float
    consistency_random_init: float
    r: float
    p: float
    p_holm: float
    r_random_init: float
    mean_mass: float
    carries: bool
    mass_defined: float = float("nan")


@dataclass
class MaxControl:
    """A best-of-``n_heads`` null (:mod:`probes.selection_control`): ``null`` names it
    ("random Dirichlet heads", or "re-dealt heads": the model's own, their attention
    permuted among the hypothesis occurrences); over ``n_draws`` draws its
    maximum has ``mean`` ± ``sd`` and (1 − alpha) quantile ``quantile``; ``p`` is the one-sided
    p of the observed best head (NaN: undefined)."""

    null: str
    n_heads: int
    n_draws: int
    mean: float
    sd: float
    quantile: float
    p: float


@dataclass
class AttentionConsistency:
    """The headline: attention against the exact posterior, aggregated over heads.

    ``consistency``: the best head's (max over heads of 1 − mean TV; NaN with ``reason`` where
    no prompt is defined); ``best_head`` "L<l>.H<h>"; ``layer_best``: the best head of each of
    ``layers``; ``random_init``: the twin's best head (the same max over as many heads, so the
    selection is matched); ``uniform``: attention spread evenly over the prompt (q ∝ counts);
    ``n_defined``: prompts that count; ``shown_posterior_mass``: their mean posterior mass on
    the shown hypotheses (what attention can express); ``head_quantiles``: the 10/50/90 %
    quantiles over heads of their consistency (the distribution of per-head deviations).

    The selection-aware controls (:mod:`probes.selection_control`; the verdict is made by
    them, :func:`analyses.verify.report.headline_verdict`): ``held_out`` is the cross-fitted
    score (the head chosen on one half of the prompts, scored on the other, and vice versa;
    mean over ``n_splits`` seeded splits, their range ``held_out_range``), ``held_out_twin``
    the twin's heads cross-fitted on the same splits, ``held_out_gaps`` the smallest and
    largest gap of a half's held-out score over uniform attention on that half, and
    ``pick_agreement`` the share of halves whose chosen head is ``best_head``;
    ``random_heads`` and ``shuffled_heads`` the maxima over as many random and re-dealt heads
    as were read, at level ``alpha``. ``best_head_mass``: the best head's mean share of its
    attention row on the hypothesis tokens over the defined prompts (un-renormalised);
    ``uniform_mass``: that share under attention spread evenly over the prompt."""

    consistency: float
    best_head: str
    random_init: float
    uniform: float
    n_defined: int
    shown_posterior_mass: float
    layers: list[int] = field(default_factory=list)
    layer_best: list[float] = field(default_factory=list)
    head_quantiles: list[float] = field(default_factory=list)
    reason: str = ""
    best_head_mass: float = float("nan")
    uniform_mass: float = float("nan")
    held_out: float = float("nan")
    held_out_range: list[float] = field(default_factory=list)
    held_out_twin: float = float("nan")
    held_out_gaps: list[float] = field(default_factory=list)
    n_splits: int = 0
    pick_agreement: float = float("nan")
    random_heads: MaxControl | None = None
    shuffled_heads: MaxControl | None = None
    alpha: float = 0.05


@dataclass
class VerifyResult:
    """What ``summary.json`` holds: ``attention`` (the headline), ``outputs`` (output
    calibration of the model, its random-init twin and the group-mean baseline), the heads and
    the heads that carry the posterior by the correlation test."""

    model: str
    task: str
    group_name: str
    n_prompts: int
    n_hypotheses: int
    attention: AttentionConsistency
    outputs: list[OutputScore]
    heads: list[HeadTracking]
    carriers: list[str]
    twin_seed: int | None = None
    wall_s: float = 0.0
    #: a wind tunnel's learned check (None for other models): the verdicts stand behind it
    learned: LearnedCheck | None = None

    @property
    def consistency(self) -> float:
        """The headline: the best head's attention–posterior consistency (NaN: undefined)."""
        return self.attention.consistency

    @property
    def output_calibration(self) -> float:
        """The model's output calibration, 1 − mean TV of its renormalised next token."""
        return self.outputs[0].calibration

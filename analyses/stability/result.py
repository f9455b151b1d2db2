"""The typed result of ``bayesgeom stability`` (:mod:`analyses.stability.run`): what
``summary.json`` holds, read back with :func:`records.read_result`."""

from __future__ import annotations

from dataclasses import dataclass

#: the metrics the analyzer can measure, in report order
METRICS = ("accuracy", "kl_bits", "entropy_mae_bits", "attention_entropy",
           "key_orthogonality")


@dataclass
class CriticalLengthSummary:
    """The accuracy decay fit and ℓ_c (:mod:`probes.decay_fit`), lengths in tokens.
    ``status``: crossed, not_crossed (ℓ_c > ``lower_bound``) or at_floor (no ℓ_c);
    ``estimate`` None unless crossed; ``low``/``high`` the bootstrap interval at ``level``
    (None: beyond the measured range); ``a``, ``b``, ``critical_length`` the fitted curve
    (NaN where no fit ran), ``floor`` the chance level it was fixed at; ``rmse`` in accuracy
    units; ``n_boot`` replicates, ``n_not_crossed`` without a crossing, ``n_failed`` left out;
    ``method`` the interval's ("bc": bias-corrected percentile, or "percentile"); ``text`` says
    when the interval excludes the estimate (not evidence)."""

    metric: str
    status: str
    estimate: float | None
    lower_bound: float | None
    low: float | None
    high: float | None
    level: float
    a: float
    b: float
    critical_length: float
    floor: float
    halfway: float
    rmse: float
    n_boot: int
    n_not_crossed: int
    n_failed: int
    text: str
    method: str = "percentile"


@dataclass
class LengthSummary:
    """Headline numbers at one length (tokens; ``multiple`` of the training length).
    Accuracy with its controls (``bayes_accuracy``: the exact posterior's expected accuracy,
    ``chance`` 1/V); KL(p_Bayes ‖ p_model) and entropy MAE in bits; attention entropy of the
    query row (bits, mean over layers, heads and sequences) and normalised by log2 of the
    visible keys, with the random-init twin's; key orthogonality 1 − mean |cos| (mean over
    layers and kv heads) with the twin's and the random-vector chance (1 − E|cos|). NaN where
    not measured (``note``)."""

    length: int
    multiple: float
    accuracy: float
    bayes_accuracy: float
    chance: float
    kl_bits: float
    entropy_mae_bits: float
    attention_entropy_bits: float
    attention_entropy_norm: float
    attention_entropy_norm_random_init: float
    key_orthogonality: float
    key_orthogonality_random_init: float
    key_orthogonality_chance: float
    note: str


@dataclass
class StabilityResult:
    """What ``summary.json`` holds."""

    model: str
    task: str
    arch: str
    train_length: int
    lengths: list[int]
    metrics: list[str]
    n_eval: int
    max_attention_length: int
    n_layers: int
    seed: int
    per_length: list[LengthSummary]
    critical_length: CriticalLengthSummary | None
    wall_s: float

"""The typed result of ``bayesgeom lens`` (:mod:`analyses.lens.run`): what ``summary.json``
holds, read back with :func:`records.read_result`. Every number is named by a key of
:data:`DEFINITIONS`, which the summary carries beside it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...windtunnel.learned import LearnedCheck

CONDITIONS = ("trained", "random_init", "position_only")
LENSES = ("logit", "bayes", "tuned", "position_mean")
#: the three scores of every (condition, lens, depth), each with its interval
METRICS = ("kl_posterior", "kl_final", "entropy_mae")

#: what every measurement of the run means (the summary and the report carry it)
DEFINITIONS = {
    "depth": "0 = the embeddings entering block 0 (resid_pre.0); d >= 1 = the output of block "
             "d - 1 (resid_post.(d-1)); the last depth is what the final norm and unembedding "
             "turn into the model's output",
    "p*": "the exact posterior over the task's K hypothesis tokens at the read position (a "
          "wind tunnel's own; SULA's over its two label words)",
    "lens distribution": "a lens' logits over the K hypothesis tokens, softmaxed over those K "
                         "alone (restricted and renormalised)",
    "logit": "logit lens: the model's own final norm and unembedding applied to the residual "
             "stream at that depth, nothing fitted",
    "bayes": "Bayes lens: an affine translator h -> h + A h + b (A, b from zero) before the "
             "model's own final norm and unembedding, fitted per depth by L-BFGS to minimise "
             "the mean KL(p* || lens) in bits on the training prompts; scored on held-out ones",
    "tuned": "tuned lens restricted to the K tokens: the same translator fitted to the same "
             "model's final output instead of p*",
    "position_mean": "position-only baseline: at each read position the mean p* of the "
                     "training rows at that position (the best prediction of p* in KL from "
                     "the position alone; the overall mean where training had none), or the "
                     "overall mean wherever it predicts the training rows better left-one-out "
                     "(position_baseline says which); the same at every depth",
    "trained": "the model analysed",
    "random_init": "its random-initialisation twin (interp.random_init_twin): the same "
                   "analysis, its own lenses fitted on its own residual stream, its own final "
                   "output as 'final'",
    "position_only": "no model: the position_mean baseline",
    "kl_posterior": "mean over held-out prompts of the per-prompt mean over read positions of "
                    "KL(p* || lens) (bits)",
    "kl_final": "the same of KL(final || lens) (bits), final = the same model's output over "
                "the K tokens (the trained model's for position_only)",
    "entropy_mae": "the same of |H(lens) - H(p*)| (bits)",
    "low, high": "BCa bootstrap interval (level 0.95) of the mean over held-out prompts",
    "fit_kl": "a translator's mean KL to its target on its training rows after the fit (bits)",
    "decodable_depth": "the first depth at which the trained model's Bayes lens has its "
                       "kl_posterior interval wholly below both the twin's Bayes lens' and "
                       "the position-only interval (None: no such depth)",
    "posterior_depth": "the first read depth from which on, to the last, the trained "
                       "model's Bayes lens keeps kl_posterior at most formed_bits (None: never)",
    "answer_depth": "per lens (logit, tuned): the first read depth from which on, to the "
                    "last, the trained model's kl_final stays at most formed_bits (None: "
                    "never)",
}


@dataclass
class LensScore:
    """One (condition, lens, depth): each metric of :data:`METRICS` as ``<metric>_bits`` with
    its interval ``<metric>_low`` / ``<metric>_high`` (bits, :data:`DEFINITIONS`);
    ``fit_kl_bits`` and ``fit_iterations`` for a fitted lens (NaN and 0 otherwise)."""

    condition: str
    lens: str
    depth: int
    site: str
    kl_posterior_bits: float
    kl_posterior_low: float
    kl_posterior_high: float
    kl_final_bits: float
    kl_final_low: float
    kl_final_high: float
    entropy_mae_bits: float
    entropy_mae_low: float
    entropy_mae_high: float
    fit_kl_bits: float = float("nan")
    fit_iterations: int = 0


@dataclass
class LensResult:
    """What ``summary.json`` holds. ``source`` is ``"wind tunnel"`` or ``"SULA"``; ``n_*_rows``
    = prompts x read positions; ``readout_max_abs_diff``: |lens at the last depth − the
    model's logits| on the K tokens (:func:`interp.lens.check_readout`), per condition."""

    model: str
    task: str
    source: str
    n_layers: int
    d_model: int
    depths: list[int]
    sites: list[str]
    hypotheses: list[str]
    n_train: int
    n_test: int
    n_train_rows: int
    n_test_rows: int
    steps: int
    l2: float
    n_boot: int
    formed_bits: float
    seed: int
    twin_seed: int
    readout_max_abs_diff: dict[str, float]
    scores: list[LensScore]
    decodable_depth: int | None
    posterior_depth: int | None
    answer_depth: dict[str, int | None]
    position_baseline: str = "per-position mean"
    definitions: dict[str, str] = field(default_factory=lambda: dict(DEFINITIONS))
    ks: list[int] = field(default_factory=list)
    learned: LearnedCheck | None = None
    quick: bool = False
    wall_s: float = 0.0

    def score(self, condition: str, lens: str, depth: int) -> LensScore:
        """The score of ``condition``'s ``lens`` at ``depth`` (KeyError if not run)."""
        for s in self.scores:
            if (s.condition, s.lens, s.depth) == (condition, lens, depth):
                return s
        raise KeyError(f"no score for {condition} {lens} at depth {depth}")

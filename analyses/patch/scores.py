"""What a patched run is scored by, and the per-pair measurements read from a patching result.

The score of a pair set (:func:`pair_score`) is :mod:`interp.patch_scores`' own scores side by
side, at the scored reads: KL(p*_clean ‖ q_H) and KL(p*_corrupt ‖ q_H) in bits
(:func:`interp.posterior_kl_score`: q_H the model's distribution over the hypothesis tokens,
renormalised), |H(q_H) − H(p*_clean)| in bits, the logit difference of the hypothesis the clean
posterior favours over the one the corrupt posterior favours (:func:`interp.logit_diff_score`)
and the KL from the model's own clean run in bits (:func:`interp.kl_score` over the whole
vocabulary for a text model, the anchors' habit; over the hypothesis tokens for a wind tunnel,
the only logits it was trained on). Free pairs have the last two only.

Every measurement (:class:`Measured`, :data:`DEFINITIONS`) is per cell and pair. The **effect**
of a patch is how far it moves the target run toward the *source's* exact posterior, in bits:
KL(p*_source ‖ q_target) − KL(p*_source ‖ q_patched), p*_source = p*_clean when denoising and
p*_corrupt when noising (free pairs: the logit difference moved toward the source's, in
logits). The **recovered fraction** is 1 − KL(p*_source ‖ q_patched) / KL(p*_source ‖ q_target)
(:func:`infotheory.recovered_fraction`; denoising: issue 37's 1 − KL(p*_clean‖q_patched) /
KL(p*_clean‖q_corrupt)), taken over pairs as a ratio of means.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from ... import interp
from .pairs import PairSet

#: what each measurement means (the report's and summary's definitions table)
DEFINITIONS = {
    "effect_bits": "KL(p*_source ‖ q_target) − KL(p*_source ‖ q_patched), bits, at the scored "
                   "reads: how far the patch moves the target run toward the source input's "
                   "exact posterior (p*_source: p*_clean denoising, p*_corrupt noising); mean "
                   "over pairs, BCa interval over pairs",
    "effect_logit_diff": "free pairs: logit difference moved toward the source run's, "
                         "(LD_patched − LD_target) × (+1 denoising, −1 noising), logits",
    "recovered_fraction": "1 − Σ KL(p*_source ‖ q_patched) / Σ KL(p*_source ‖ q_target) over "
                          "pairs (infotheory.recovered_fraction of the means; denoising: "
                          "1 − KL(p*_clean‖q_patched)/KL(p*_clean‖q_corrupt)), BCa interval",
    "kl_source_bits": "KL(p*_source ‖ q_patched), bits, mean over pairs and scored reads",
    "kl_clean_bits": "KL(p*_clean ‖ q_patched), bits (q over the hypothesis tokens, "
                     "renormalised)",
    "entropy_mae_bits": "|H(q_patched) − H(p*_clean)|, bits, mean over pairs and reads",
    "logit_diff": "logit[h+] − logit[h−] of the patched run (h+: the hypothesis p*_clean favours "
                  "most over p*_corrupt, h−: the reverse; free pairs: answer − foil), the "
                  "anchors' metric",
    "logit_diff_recovered": "Σ (LD_patched − LD_target) / Σ (LD_source − LD_target) over pairs "
                            "(the anchors' normalised logit difference)",
    "kl_clean_run_bits": "KL(q_clean run ‖ q_patched), bits: distance from the patched model's "
                         "own clean run (the anchors' habit; a wind tunnel: over its hypothesis "
                         "tokens, a text model: over the vocabulary)",
    "abs_effect_bits": "mean over pairs of |effect|: on Bayes-null pairs, where p*_clean = "
                       "p*_corrupt, any effect is damage from an off-distribution activation",
    "attribution_effect_bits": "attribution patching's first-order estimate of effect_bits, "
                               "(a_source − a_target)·∇ KL (interp.attribution_patch), mean over "
                               "pairs",
}


def _named(score: interp.PairScore, names: tuple[str, ...]) -> interp.PairScore:
    return replace(score, names=names)


def column(score: interp.PairScore, j: int, name: str) -> interp.PairScore:
    """Column ``j`` of ``score`` as a score of its own (``name``), for attribution patching,
    which differentiates each column once."""
    def one(logits: torch.Tensor, *rows: torch.Tensor) -> torch.Tensor:
        return score.fn(logits, *rows)[..., j]

    return interp.PairScore(one, score.per_pair, (name,))


def exact_parts(ps: PairSet) -> list[interp.PairScore]:
    """The exact-posterior scores of ``ps`` (module doc), named; [] for free pairs."""
    if ps.p_clean is None or ps.p_corrupt is None or ps.hyp is None:
        return []
    a = interp.posterior_kl_score(ps.p_clean, ps.hyp)
    b = interp.posterior_kl_score(ps.p_corrupt, ps.hyp)
    return [_named(a, ("kl_clean_bits", "entropy_bits", "entropy_err_bits")),
            _named(b, ("kl_corrupt_bits", "entropy_copy_bits", "entropy_err_corrupt_bits"))]


def pair_score(ps: PairSet, ref_logits: torch.Tensor, hypotheses_only: bool,
               ) -> interp.PairScore:
    """Every column of the module doc for ``ps``; ``ref_logits`` [N, R, V]: the patched model's
    clean run at the reads (:func:`interp.read_logits`); ``hypotheses_only``: its KL over the
    hypothesis tokens (a wind tunnel) rather than the vocabulary."""
    if hypotheses_only and ps.hyp is not None:
        ref = torch.softmax(ref_logits[..., ps.hyp].double(), dim=-1)
        run = _named(interp.posterior_kl_score(ref, ps.hyp),
                     ("kl_clean_run_bits", "entropy_run_bits", "entropy_err_run_bits"))
    else:
        run = interp.kl_score(ref_logits, "kl_clean_run_bits")
    return interp.combine_scores(*exact_parts(ps), interp.logit_diff_score(ps.good, ps.bad), run)


def attribution_score(ps: PairSet, direction: str) -> interp.PairScore:
    """The columns attribution patching estimates: KL to the source's exact posterior (named
    ``kl_source_bits``; free pairs: none) and the logit difference."""
    parts = exact_parts(ps)
    ld = interp.logit_diff_score(ps.good, ps.bad)
    if not parts:
        return ld
    src = parts[0] if direction == "denoising" else parts[1]
    return interp.combine_scores(column(src, 0, "kl_source_bits"), ld)


@dataclass(frozen=True, eq=False)
class Measured:
    """One condition's measurements, float64: ``effect`` [C, N] (bits toward the source's
    posterior; free pairs: logits), ``kl_patched`` [C, N] and ``kl_target`` [N] (KL(p*_source
    ‖ ·) of the patched and unpatched target; NaN for free pairs), ``kl_clean`` and
    ``entropy_err`` [C, N] (NaN for free pairs), ``kl_clean_run`` [C, N], ``ld`` [C, N],
    ``ld_target`` and ``ld_source`` [N]; ``kl_source_run`` [N]: KL(p*_source ‖ q_source) of
    the unpatched source run; ``pairs`` [N]: which evidence pairs they are."""

    effect: np.ndarray
    kl_patched: np.ndarray
    kl_target: np.ndarray
    kl_source_run: np.ndarray
    kl_clean: np.ndarray
    entropy_err: np.ndarray
    kl_clean_run: np.ndarray
    ld: np.ndarray
    ld_target: np.ndarray
    ld_source: np.ndarray
    pairs: np.ndarray

    @property
    def exact(self) -> bool:
        return bool(np.isfinite(self.kl_target).any())


def measured(r: interp.PatchResult, direction: str, pairs: np.ndarray) -> Measured:
    """:class:`Measured` from an activation-patching result scored by :func:`pair_score`."""
    def col(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if name not in r.metrics:
            nan = np.full((len(r.cells), r.n_pairs), np.nan)
            return nan, nan[0], nan[0]
        return (r.value(name).double().numpy(), r.target[:, r.metrics.index(name)].double().numpy(),
                r.source[:, r.metrics.index(name)].double().numpy())

    src = "kl_clean_bits" if direction == "denoising" else "kl_corrupt_bits"
    kl_p, kl_t, kl_s = col(src)
    ld, ld_t, ld_s = col("logit_diff")
    if np.isfinite(kl_t).any():
        effect = kl_t[None, :] - kl_p
    else:
        effect = (ld - ld_t[None, :]) * (1.0 if direction == "denoising" else -1.0)
    return Measured(effect, kl_p, kl_t, kl_s, col("kl_clean_bits")[0], col("entropy_err_bits")[0],
                    col("kl_clean_run_bits")[0], ld, ld_t, ld_s, np.asarray(pairs))


def attribution_effect(r: interp.PatchResult, direction: str) -> np.ndarray:
    """[C, N]: attribution patching's estimate of each cell's effect (:class:`Measured`'s
    sign: toward the source)."""
    if "kl_source_bits" in r.metrics:
        return -r.effect("kl_source_bits").double().numpy()
    sign = 1.0 if direction == "denoising" else -1.0
    return sign * r.effect("logit_diff").double().numpy()

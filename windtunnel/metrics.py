"""Calibration metrics against the exact posterior, in bits, on the hypothesis slice.

Model quantities are computed in float32 from ``log_softmax`` over the hypothesis slice; the
posterior oracle is float64. Conventions:

* ``entropy_mae_bits`` — per-sample MAE: mean over sequences and positions of |H_model − H_Bayes|
  (the recommended variant, ≥ the curve variant).
* ``entropy_mae_curve_bits`` — curve MAE: mean over positions of |mean H_model − mean H_Bayes|.
* ``kl_bits`` — KL(Bayes ‖ model); ``kl_model_bayes_bits`` — KL(model ‖ Bayes) with the Bayes
  posterior clipped at 1e-12 (finite, but large when the model leaks mass onto eliminated values).
* ``tvd`` — ½ Σ |p_Bayes − p_model|; ``accuracy`` — argmax equals the true hypothesis;
  ``map_agreement`` — argmax equals the Bayes argmax.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from infotheory import (
    entropy_bits_from_logprobs,
    entropy_bits_from_probs,
    kl_bits,
    kl_bits_from_logprobs,
    tvd,
)

#: KL(model ‖ Bayes) floors the Bayes posterior here (eliminated values have probability 0)
KL_CLIP = 1e-12


def slice_log_probs(logits: torch.Tensor, hyp: slice) -> torch.Tensor:
    """Natural log-probabilities over the hypothesis slice, float32. [..., vocab] -> [..., H]."""
    return torch.log_softmax(logits[..., hyp].float(), dim=-1)


@dataclass
class CalibrationStats:
    """Per-(sequence, position) calibration values for one model readout. Shapes [B, Q]."""

    h_model: torch.Tensor
    h_bayes: torch.Tensor
    kl_bayes_model: torch.Tensor
    kl_model_bayes: torch.Tensor
    tvd: torch.Tensor
    correct: torch.Tensor
    map_agree: torch.Tensor


def calibration_stats(
    logp: torch.Tensor, posterior: torch.Tensor, targets: torch.Tensor
) -> CalibrationStats:
    """``logp`` [B,Q,H] model log-probs (fp32); ``posterior`` [B,Q,H] exact; ``targets`` [B,Q]."""
    p_b = posterior.float()
    am = logp.argmax(-1)
    return CalibrationStats(
        h_model=entropy_bits_from_logprobs(logp),
        h_bayes=entropy_bits_from_probs(p_b),
        kl_bayes_model=kl_bits(p_b, log_q=logp),
        kl_model_bayes=kl_bits_from_logprobs(logp, torch.log(p_b.clamp_min(KL_CLIP))),
        tvd=tvd(p_b, logp.exp()),
        correct=(am == targets).float(),
        map_agree=(am == posterior.argmax(-1)).float(),
    )


@dataclass
class Accumulator:
    """Streams :class:`CalibrationStats` over batches (float64 sums per position)."""

    sums: dict[str, np.ndarray] = field(default_factory=dict)
    n: int = 0

    def add(self, s: CalibrationStats) -> None:
        cols = {
            "h_model": s.h_model,
            "h_bayes": s.h_bayes,
            "abs_err": (s.h_model - s.h_bayes).abs(),
            "kl": s.kl_bayes_model,
            "kl_rev": s.kl_model_bayes,
            "tvd": s.tvd,
            "acc": s.correct,
            "map": s.map_agree,
        }
        for k, v in cols.items():
            tot = v.double().sum(0).cpu().numpy()
            self.sums[k] = self.sums.get(k, 0) + tot
        self.n += int(s.h_model.shape[0])

    def curves(self) -> dict[str, np.ndarray]:
        return {k: v / self.n for k, v in self.sums.items()}


@dataclass
class CalibrationReport:
    """Summary scalars plus per-position curves (lists, index = supervised position)."""

    n_sequences: int
    entropy_mae_bits: float
    entropy_mae_curve_bits: float
    kl_bits: float
    kl_model_bayes_bits: float
    tvd: float
    accuracy: float
    map_agreement: float
    mean_bayes_entropy_bits: float
    per_position: dict[str, list[float]]
    per_layer: dict[str, list[float]] | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def report_from(
    acc: Accumulator, per_layer: dict[str, list[float]] | None = None
) -> CalibrationReport:
    c = acc.curves()
    return CalibrationReport(
        n_sequences=acc.n,
        entropy_mae_bits=float(c["abs_err"].mean()),
        entropy_mae_curve_bits=float(np.abs(c["h_model"] - c["h_bayes"]).mean()),
        kl_bits=float(c["kl"].mean()),
        kl_model_bayes_bits=float(c["kl_rev"].mean()),
        tvd=float(c["tvd"].mean()),
        accuracy=float(c["acc"].mean()),
        map_agreement=float(c["map"].mean()),
        mean_bayes_entropy_bits=float(c["h_bayes"].mean()),
        per_position={
            "h_model_bits": c["h_model"].tolist(),
            "h_bayes_bits": c["h_bayes"].tolist(),
            "entropy_abs_err_bits": c["abs_err"].tolist(),
            "kl_bits": c["kl"].tolist(),
            "tvd": c["tvd"].tolist(),
            "accuracy": c["acc"].tolist(),
        },
        per_layer=per_layer,
    )

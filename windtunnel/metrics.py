"""Calibration metrics against the exact posterior, in bits, on the hypothesis slice.

Model quantities are computed in float32 from ``log_softmax`` over the hypothesis slice; the
posterior oracle is float64. Conventions:

* ``entropy_mae_bits`` — per-sample MAE: mean over sequences and positions of |H_model − H_Bayes|
  (the recommended variant, ≥ the curve variant).
* ``entropy_mae_curve_bits`` — curve MAE: mean over positions of |mean H_model − mean H_Bayes|.
* ``kl_bits`` — KL(Bayes ‖ model); ``kl_model_bayes_bits`` — KL(model ‖ Bayes) with the Bayes
  posterior clipped at 1e-12 (finite, but large when the model leaks mass onto eliminated values).
* ``tvd`` — ½ Σ |p_Bayes − p_model|; ``accuracy`` — argmax equals the true hypothesis.
* ``map_agreement`` — argmax equals the Bayes argmax, defined only where that argmax is unique:
  where the posterior's maximum is attained by two or more hypotheses (within a relative
  :data:`TIE_RTOL`) it is NaN and left out, so the aggregate is the mean over the untied
  (sequence, position) pairs -- ``map_untied`` of them; NaN when there are none. On bijection
  the posterior is uniform over the unrevealed values, so only positions with one value left
  are untied: none at the default L = V − 1 (map_agreement is NaN there), the last key when
  L = V, the paired layout's query, repeated keys with replacement.

Every statistic is also computed from a sparse posterior
(:class:`~windtunnel.sparse_posterior.SparsePosterior`, large hypothesis spaces) in closed form,
without a float64 [B, Q, H] posterior: :func:`calibration_stats` takes either form.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import torch

from ..infotheory import (
    entropy_bits_from_logprobs,
    entropy_bits_from_probs,
    kl_bits,
    kl_bits_from_logprobs,
    tvd,
)
from .sparse_posterior import SparsePosterior, calibration_terms

#: KL(model ‖ Bayes) floors the Bayes posterior here (eliminated values have probability 0)
KL_CLIP = 1e-12
#: two hypotheses tie for the Bayes argmax when the smaller is within this fraction of the larger
TIE_RTOL = 1e-12
#: statistics that may be undefined (NaN) at some entries; their means are over defined entries
PARTIAL = frozenset({"map"})


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
    #: 1/0 where the Bayes argmax is unique, NaN where it is tied
    map_agree: torch.Tensor


def unique_argmax(posterior: torch.Tensor) -> torch.Tensor:
    """[..., H] probabilities -> [...] bool: the maximum is attained by exactly one hypothesis
    (any other within a relative :data:`TIE_RTOL` of it counts as a tie)."""
    top = posterior.max(-1, keepdim=True).values
    return (posterior >= top * (1.0 - TIE_RTOL)).sum(-1) == 1


def calibration_stats(
    logp: torch.Tensor, posterior: torch.Tensor | SparsePosterior, targets: torch.Tensor
) -> CalibrationStats:
    """``logp`` [B,Q,H] model log-probs (fp32); ``posterior`` [B,Q,H] exact, or its sparse
    form; ``targets`` [B,Q]."""
    if isinstance(posterior, SparsePosterior):
        return _sparse_stats(logp, posterior, targets)
    p_b = posterior.float()
    am = logp.argmax(-1)
    agree = (am == posterior.argmax(-1)).float()
    return CalibrationStats(
        h_model=entropy_bits_from_logprobs(logp),
        h_bayes=entropy_bits_from_probs(p_b),
        kl_bayes_model=kl_bits(p_b, log_q=logp),
        kl_model_bayes=kl_bits_from_logprobs(logp, torch.log(p_b.clamp_min(KL_CLIP))),
        tvd=tvd(p_b, logp.exp()),
        correct=(am == targets).float(),
        map_agree=torch.where(unique_argmax(posterior), agree, torch.nan),
    )


def _sparse_stats(logp: torch.Tensor, sp: SparsePosterior,
                  targets: torch.Tensor) -> CalibrationStats:
    """:func:`calibration_stats` from a sparse posterior (closed forms, same conventions)."""
    t = calibration_terms(logp, sp, KL_CLIP, TIE_RTOL)
    am = logp.argmax(-1)
    agree = (am == t["bayes_argmax"]).float()
    return CalibrationStats(
        h_model=entropy_bits_from_logprobs(logp),
        h_bayes=t["h_bayes"].float(),
        kl_bayes_model=t["kl_bayes_model"].float(),
        kl_model_bayes=t["kl_model_bayes"].float(),
        tvd=t["tvd"].float(),
        correct=(am == targets).float(),
        map_agree=torch.where(t["unique"], agree, torch.nan),
    )


@dataclass
class Accumulator:
    """Streams :class:`CalibrationStats` over batches: float64 sums and counts per position.

    Statistics in :data:`PARTIAL` skip their NaN (undefined) entries in both; any other NaN
    stays in its sum, so a broken model reading still shows as NaN."""

    sums: dict[str, np.ndarray] = field(default_factory=dict)
    counts: dict[str, np.ndarray] = field(default_factory=dict)
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
            v = v.double()
            if k in PARTIAL:
                defined = ~torch.isnan(v)
                v = torch.where(defined, v, 0.0)
                cnt = defined.sum(0).cpu().numpy().astype(np.int64)
            else:
                cnt = np.full(v.shape[1:], v.shape[0], dtype=np.int64)
            self.sums[k] = self.sums.get(k, 0) + v.sum(0).cpu().numpy()
            self.counts[k] = self.counts.get(k, 0) + cnt
        self.n += int(s.h_model.shape[0])

    def curves(self) -> dict[str, np.ndarray]:
        """Per-position means [Q] (NaN where a partial statistic has no defined entry)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return {k: v / self.counts[k] for k, v in self.sums.items()}

    def pooled(self, key: str) -> tuple[float, int]:
        """The mean of ``key`` over all its defined (sequence, position) entries, and their
        number (NaN and 0 when there are none)."""
        n = int(self.counts[key].sum())
        return (float(self.sums[key].sum() / n) if n else math.nan), n


@dataclass
class CalibrationReport:
    """Summary scalars plus per-position curves (lists, index = supervised position).

    ``map_agreement`` is NaN when no position has a unique Bayes argmax; ``map_untied`` counts
    the (sequence, position) pairs it averages (None in reports written before ties were left
    out). NaN is written to JSON as null; :meth:`from_dict` reads it back."""

    n_sequences: int
    entropy_mae_bits: float
    entropy_mae_curve_bits: float
    kl_bits: float
    kl_model_bayes_bits: float
    tvd: float
    accuracy: float
    map_agreement: float
    map_untied: int | None
    mean_bayes_entropy_bits: float
    per_position: dict[str, list[float]]
    per_layer: dict[str, list[float]] | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CalibrationReport:
        """Inverse of :meth:`to_dict` after a JSON round trip (extra keys ignored; a null
        scalar metric read as NaN; ``map_untied`` None where the record predates it)."""
        kw = {f.name: d.get(f.name) for f in fields(cls)}
        for f in fields(cls):
            if f.type == "float" and kw[f.name] is None:
                kw[f.name] = math.nan
        return cls(**kw)


def report_from(
    acc: Accumulator, per_layer: dict[str, list[float]] | None = None
) -> CalibrationReport:
    c = acc.curves()
    map_mean, map_n = acc.pooled("map")
    return CalibrationReport(
        n_sequences=acc.n,
        entropy_mae_bits=float(c["abs_err"].mean()),
        entropy_mae_curve_bits=float(np.abs(c["h_model"] - c["h_bayes"]).mean()),
        kl_bits=float(c["kl"].mean()),
        kl_model_bayes_bits=float(c["kl_rev"].mean()),
        tvd=float(c["tvd"].mean()),
        accuracy=float(c["acc"].mean()),
        map_agreement=map_mean,
        map_untied=map_n,
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

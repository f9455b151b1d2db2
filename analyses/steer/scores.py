"""Scoring a steering experiment: the edit conditions and the metrics of one pass.

Metrics (bits): calibration MAE |H_model − H_Bayes| and Pearson corr(H_model, H_Bayes), overall
and per group (SULA: k; wind tunnel: prediction index q); KL(Bayes ‖ model) -- the distance to
the exact posterior; mean H_model; the next-token distribution's ΔH (``dh_next``), KL(clean ‖
edited) (``kl_clean``) and top-1 flip rate (``top1_flip``) -- over the full vocabulary for a text
model, over the hypothesis tokens only (renormalised) for a wind tunnel, whose training never
constrained the other logits; and, at each edited layer, on the edited activations x':
``axis_corr`` = corr(x'·u, H_model) along the edit direction u (a cut cannot move it: NaN after
a full cut) and ``axis_proj_corr`` = corr(axis.project(x'), H_model), Paper III's read-out in
the standardised space the axis was fitted in (:mod:`analyses.steer.nulls`). ``edit_energy``
rows (effect ``"edit"``) give the energy each edit moved per layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ...infotheory import (
    LN2,
    Calibration,
    calibration,
    calibration_by_group,
    entropy_bits_from_probs,
    kl_bits,
)
from ...infotheory.measures import CHUNK_ELEMENTS
from ...interp import edits
from ...interp.finite import all_finite
from ...interp.interventions import DirectionEdit
from ...windtunnel import PosteriorPrompts
from ..kit.posteriors import model_posterior
from .nulls import LayerAxis
from .passes import PassOutput

#: metrics compared against the null as their change from the clean pass (``d_<metric>``) ...
DELTA_METRICS = ("mae", "corr", "kl_bayes", "h_model", "axis_corr", "axis_proj_corr")
#: ... and those already measured relative to it
RELATIVE_METRICS = ("kl_clean", "top1_flip", "dh_next")
#: per-layer metrics (the effects table reads them at the last edited layer)
LAYER_METRICS = ("axis_corr", "axis_proj_corr")


@dataclass(frozen=True)
class Condition:
    """One edit: ``kind`` in {cut, keep_only, shift} with its ``param`` (fraction removed, δ in
    σ, or NaN)."""

    kind: str
    param: float

    @property
    def key(self) -> str:
        return self.kind if np.isnan(self.param) else f"{self.kind}{self.param:+g}"

    def interventions(self, sites: Sequence[str], dirs: Sequence[torch.Tensor],
                      sigmas: Sequence[float], positions: str) -> list[DirectionEdit]:
        """One :class:`interp.DirectionEdit` per edited site (shifts move δ·σ of that layer)."""
        out: list[DirectionEdit] = []
        for s, d, sg in zip(sites, dirs, sigmas, strict=True):
            if self.kind == "cut":
                out.append(DirectionEdit(s, d, edits.project_out, fraction=self.param,
                                         positions=positions))
            elif self.kind == "keep_only":
                out.append(DirectionEdit(s, d, edits.keep_only, positions=positions))
            else:
                out.append(DirectionEdit(s, d, edits.shift, amount=self.param * sg,
                                         positions=positions))
        return out


def conditions(cut_fractions: Sequence[float], keep_only: bool,
               shift_deltas: Sequence[float]) -> list[Condition]:
    out = [Condition("cut", float(f)) for f in cut_fractions]
    if keep_only:
        out.append(Condition("keep_only", float("nan")))
    return out + [Condition("shift", float(d)) for d in shift_deltas]


def scored_logits(logits: torch.Tensor, vocab: np.ndarray | None) -> torch.Tensor:
    """The logits the next-token metrics read, on the CPU in their own dtype (no copy when they
    are there already): all of ``logits`` [N, V], or only the columns ``vocab`` [N, K] of each
    row (a wind tunnel's hypothesis tokens) -> [N, K]. :func:`next_token_stats` widens them to
    float64 a block of rows at a time."""
    z = logits.detach().cpu()
    if vocab is None:
        return z
    return z.gather(1, torch.as_tensor(np.asarray(vocab), dtype=torch.long))


def next_token_stats(z: torch.Tensor, clean: CleanRef | None = None,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per row of finite logits ``z`` [N, K]: next-token entropy (bits), the top-1 column and,
    given the clean pass' :class:`CleanRef` (its probabilities p over the same columns), KL(p ‖
    softmax(z)) = Σ p log p − Σ p log q in bits; each [N], in float64, computed a block of rows
    at a time (at most ``CHUNK_ELEMENTS`` logits per block), so a 262k-vocabulary pass needs no
    float64 copy of its own size. The clean side (p and Σ p log p) is computed once, in
    :meth:`CleanRef.of`, not once per pass."""
    if not all_finite(z):
        raise FloatingPointError("the model produced NaN/inf logits")
    n, width = z.shape
    step = max(1, CHUNK_ELEMENTS // max(int(width), 1))
    h, top1 = np.empty(n), np.empty(n, dtype=np.int64)
    kl = None if clean is None else np.empty(n)
    for i in range(0, n, step):
        zc = z[i:i + step]
        lq = torch.log_softmax(zc.to(torch.float64), -1)
        h[i:i + step] = (-torch.linalg.vecdot(lq.exp(), lq) / LN2).numpy()
        top1[i:i + step] = zc.argmax(-1).numpy()
        if clean is not None and kl is not None:
            p, plogp = clean.block(i, i + step)
            kl[i:i + step] = ((plogp - torch.linalg.vecdot(p, lq)) / LN2).numpy()
    return h, top1, kl


#: a clean pass' probabilities over the scored vocabulary are kept (float64) up to this many
#: (512 MiB: 250 prompts of a 262k vocabulary); beyond it each block is recomputed per pass
CLEAN_CACHE_ELEMENTS = 1 << 26


@dataclass
class CleanRef:
    """What edited passes are compared with: the clean pass's logits over the scored
    vocabulary (:func:`scored_logits`; the pass's own tensor for a text model, not a copy),
    their next-token entropy, top-1 column, Σ p log p per row (nats) and, up to
    :data:`CLEAN_CACHE_ELEMENTS`, their probabilities p (float64 [N, K])."""

    logits: torch.Tensor
    h_next: np.ndarray
    top1: np.ndarray
    plogp: torch.Tensor
    probs: torch.Tensor | None = None

    @classmethod
    def of(cls, out: PassOutput, vocab: np.ndarray | None = None) -> CleanRef:
        """One pass over the clean logits, a block of rows at a time as
        :func:`next_token_stats` reads them (so its entropies are the ones it would give)."""
        z = scored_logits(out.logits, vocab)
        if not all_finite(z):
            raise FloatingPointError("the model produced NaN/inf logits")
        n, width = z.shape
        step = max(1, CHUNK_ELEMENTS // max(int(width), 1))
        keep = n * width <= CLEAN_CACHE_ELEMENTS
        ref = cls(z, np.empty(0), z.argmax(-1).numpy(), torch.zeros(0, dtype=torch.float64))
        probs, plogp = [], []
        for i in range(0, n, step):
            p, lp = ref.log_probs(i, i + step)
            plogp.append(torch.linalg.vecdot(p, lp))
            if keep:
                probs.append(p)
        ref.plogp = torch.cat(plogp) if plogp else ref.plogp
        ref.h_next = (-ref.plogp / LN2).numpy()
        ref.probs = torch.cat(probs) if keep and probs else None
        return ref

    def log_probs(self, i: int, j: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows ``i:j``: probabilities and log-probabilities (float64 [j − i, K])."""
        lp = torch.log_softmax(self.logits[i:j].to(torch.float64), -1)
        return lp.exp(), lp

    def block(self, i: int, j: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows ``i:j``: p [j − i, K] (kept, or recomputed as :meth:`of` computed it) and
        Σ p log p [j − i] (nats)."""
        p = self.probs[i:j] if self.probs is not None else self.log_probs(i, j)[0]
        return p, self.plogp[i:j]


@dataclass
class PassScores:
    """The metrics of one pass (bits; see the module doc); the per-layer read-outs are keyed by
    layer."""

    cal: Calibration
    kl_bayes: float
    per_group: dict[str, Calibration]
    axis_corr: dict[int, float] = field(default_factory=dict)
    axis_proj_corr: dict[int, float] = field(default_factory=dict)
    kl_clean: float = 0.0
    top1_flip: float = 0.0
    dh_next: float = 0.0
    #: KL(Bayes ‖ model) per prompt [N] (bits): the controls' per-prompt effects
    #: (:func:`analyses.steer.stats.effect_numbers`)
    kl_bayes_per_prompt: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def value(self, metric: str) -> float:
        if metric in ("mae", "corr", "h_model"):
            return getattr(self.cal, metric)
        return getattr(self, metric)

    def read_axes(self, acts: dict[int, np.ndarray], h: np.ndarray,
                  reads: dict[int, LayerAxis]) -> None:
        """Fill ``axis_corr`` and ``axis_proj_corr`` from activations [N, F] per layer."""
        for L, la in reads.items():
            if L in acts:
                self.axis_corr[L] = la.coordinate_corr(acts[L], h)
                self.axis_proj_corr[L] = la.projection_corr(acts[L], h)


def score(out: PassOutput, pp: PosteriorPrompts, reads: dict[int, LayerAxis],
          clean: CleanRef | None, vocab: np.ndarray | None = None,
          ) -> tuple[PassScores, np.ndarray]:
    """Metrics of one pass and its model entropies [N] (bits). ``reads``: the axes read on the
    pass's activations; ``vocab``: the columns the next-token metrics read (None: all)."""
    p = model_posterior(out.logits, pp.hyp_ids)
    h = entropy_bits_from_probs(p)
    kl = np.asarray(kl_bits(pp.bayes, p), dtype=np.float64)
    s = PassScores(calibration(h, pp.h_bayes_bits), float(kl.mean()),
                   calibration_by_group(h, pp.h_bayes_bits, pp.group), kl_bayes_per_prompt=kl)
    s.read_axes(out.acts, h, reads)
    if clean is not None:
        h_next, top1, kl = next_token_stats(scored_logits(out.logits, vocab), clean)
        assert kl is not None
        s.kl_clean = float(kl.mean())
        s.top1_flip = float((top1 != clean.top1).mean())
        s.dh_next = float((h_next - clean.h_next).mean())
    return s, h


def tidy(s: PassScores, condition: str, kind: str, param: float, direction: str, effect: str,
         group_name: str) -> list[dict]:
    """Long rows (condition, kind, param, direction, effect, metric, group, layer, value)."""
    base = {"condition": condition, "kind": kind, "param": param, "direction": direction,
            "effect": effect}
    rows = [base | {"metric": k, "group": None, "layer": None, "value": float(s.value(k))}
            for k in ("mae", "corr", "kl_bayes", "h_model", "kl_clean", "top1_flip", "dh_next")]
    for m in LAYER_METRICS:
        rows += [base | {"metric": m, "group": None, "layer": int(L), "value": v}
                 for L, v in getattr(s, m).items()]
    for g, st in s.per_group.items():
        rows += [base | {"metric": f"{m}_by_{group_name}", "group": int(g), "layer": None,
                         "value": float(getattr(st, m))} for m in ("mae", "corr", "h_model")]
    return rows


def per_prompt_rows(s: PassScores, condition: str, direction: str, effect: str,
                    ) -> pd.DataFrame:
    """The pass's KL(Bayes ‖ model) per prompt as long rows (condition, effect, direction,
    prompt, value)."""
    kl = s.kl_bayes_per_prompt
    return pd.DataFrame({"condition": condition, "effect": effect, "direction": direction,
                         "prompt": np.arange(kl.size), "value": kl})


def energy_rows(energies: dict[int, float], condition: Condition, direction: str) -> list[dict]:
    """``edit_energy`` rows (effect ``"edit"``), one per edited layer."""
    return [{"condition": condition.key, "kind": condition.kind, "param": condition.param,
             "direction": direction, "effect": "edit", "metric": "edit_energy", "group": None,
             "layer": int(L), "value": float(e)} for L, e in energies.items()]

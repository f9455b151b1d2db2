"""Scoring a steering experiment: the edit conditions, the metrics of one pass, and each edit's
effect against the null of random directions.

Metrics (bits): calibration MAE |H_model − H_Bayes| and Pearson corr(H_model, H_Bayes), overall
and per group (SULA: k; wind tunnel: prediction index q); KL(Bayes ‖ model) -- the distance to
the exact posterior; mean H_model; ΔH of the full next-token distribution, KL(clean ‖ edited)
over the vocabulary and the top-1 flip rate; and corr(x·u, H_model) at each edited layer
(measured on the edited activations; NaN when a full cut makes x·u constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

import interp
from analyses.posteriors import model_posterior
from analyses.steering_passes import PassOutput
from infotheory import (
    Calibration,
    calibration,
    calibration_by_group,
    entropy_bits_from_logits,
    entropy_bits_from_probs,
    kl_bits,
    kl_bits_from_logprobs,
    pearson,
)
from interp import edits
from interp.interventions import DirectionEdit, Intervention
from probes import null_test
from windtunnel import PosteriorPrompts

#: metrics compared against the null (their change from the clean pass, except those already
#: measured relative to it)
DELTA_METRICS = ("mae", "corr", "kl_bayes", "h_model", "axis_corr")
RELATIVE_METRICS = ("kl_clean", "top1_flip", "dh_next")


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
                      sigmas: Sequence[float], positions: str) -> list[Intervention]:
        """One :class:`interp.DirectionEdit` per edited site (shifts move δ·σ of that layer)."""
        out: list[Intervention] = []
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


def edit_directions(units: dict[int, np.ndarray], n_random: int, seed: int,
                    ) -> list[tuple[str, list[torch.Tensor]]]:
    """[("axis", [u_ℓ per layer]), ("random-i", [r_ℓ,i per layer]), ...]: per layer ``n_random``
    seeded Gaussian directions with u_ℓ's norm, orthogonal to u_ℓ (seed + 1000·ℓ)."""
    layers = sorted(units)
    axis = {L: torch.as_tensor(units[L], dtype=torch.float64) for L in layers}
    controls = {L: interp.random_controls(axis[L], n_random, seed=seed + 1000 * L)
                for L in layers}
    out = [("axis", [axis[L].float() for L in layers])]
    return out + [(f"random-{i}", [controls[L][i].float() for L in layers])
                  for i in range(n_random)]


@dataclass
class CleanRef:
    """What edited passes are compared with: the clean pass's log-probs, next-token entropy
    and top-1 token."""

    logp: torch.Tensor
    h_next: np.ndarray
    top1: np.ndarray

    @classmethod
    def of(cls, out: PassOutput) -> CleanRef:
        return cls(torch.log_softmax(out.logits.double(), -1),
                   entropy_bits_from_logits(out.logits).double().numpy(),
                   out.logits.argmax(-1).numpy())


@dataclass
class PassScores:
    """The metrics of one pass (bits; see the module doc)."""

    cal: Calibration
    kl_bayes: float
    per_group: dict[str, Calibration]
    axis_corr: dict[int, float] = field(default_factory=dict)
    kl_clean: float = 0.0
    top1_flip: float = 0.0
    dh_next: float = 0.0

    def value(self, metric: str) -> float:
        if metric in ("mae", "corr", "h_model"):
            return getattr(self.cal, metric)
        return getattr(self, metric)


def score(out: PassOutput, pp: PosteriorPrompts, axes: dict[int, tuple[np.ndarray, float]],
          clean: CleanRef | None) -> tuple[PassScores, np.ndarray]:
    """Metrics of one pass and its model entropies [N] (bits). ``axes``: layer -> (unit
    direction, clean σ of the projection)."""
    p = model_posterior(out.logits, pp.hyp_ids)
    h = entropy_bits_from_probs(p)
    s = PassScores(calibration(h, pp.h_bayes_bits), float(kl_bits(pp.bayes, p).mean()),
                   calibration_by_group(h, pp.h_bayes_bits, pp.group),
                   {L: axis_corr(out.acts[L] @ u, h, sg) for L, (u, sg) in axes.items()
                    if L in out.acts})
    if clean is not None:
        logp = torch.log_softmax(out.logits.double(), -1)
        h_next = entropy_bits_from_logits(out.logits).double().numpy()
        s.kl_clean = float(kl_bits_from_logprobs(clean.logp, logp).mean())
        s.top1_flip = float((out.logits.argmax(-1).numpy() != clean.top1).mean())
        s.dh_next = float((h_next - clean.h_next).mean())
    return s, h


def axis_corr(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    """Pearson corr(a, b); NaN when ``a`` is constant up to float noise (its std below 1e-4 of
    the clean spread ``sigma``, as after a full cut) or ``b`` is constant."""
    a = np.asarray(a, dtype=np.float64)
    if a.std() <= 1e-4 * sigma:
        return float("nan")
    return float(pearson(a, b))


def tidy(s: PassScores, condition: str, kind: str, param: float, direction: str, effect: str,
         group_name: str) -> list[dict]:
    base = {"condition": condition, "kind": kind, "param": param, "direction": direction,
            "effect": effect}
    rows = [base | {"metric": k, "group": None, "layer": None, "value": float(s.value(k))}
            for k in ("mae", "corr", "kl_bayes", "h_model", "kl_clean", "top1_flip", "dh_next")]
    rows += [base | {"metric": "axis_corr", "group": None, "layer": int(L), "value": v}
             for L, v in s.axis_corr.items()]
    for g, st in s.per_group.items():
        rows += [base | {"metric": f"{m}_by_{group_name}", "group": int(g), "layer": None,
                         "value": float(getattr(st, m))} for m in ("mae", "corr", "h_model")]
    return rows


def effects_table(table: pd.DataFrame, clean: PassScores, head_layer: int) -> pd.DataFrame:
    """Per condition, effect and metric: the axis effect, its random null and p-value.
    Changes are taken from the clean pass (``d_*``); ``kl_clean``, ``top1_flip`` and
    ``dh_next`` already are."""
    recs = []
    overall = table[table["group"].isna() & (table["condition"] != "clean")]
    for (cond, kind, param, eff), g in overall.groupby(
            ["condition", "kind", "param", "effect"], sort=False, dropna=False):
        for metric in (*DELTA_METRICS, *RELATIVE_METRICS):
            sel = g[g["metric"] == metric]
            if metric == "axis_corr":
                sel = sel[sel["layer"] == head_layer]
            if sel.empty:
                continue
            ref = 0.0
            if metric in DELTA_METRICS:
                ref = clean.axis_corr.get(head_layer, np.nan) if metric == "axis_corr" \
                    else clean.value(metric)
            axis = sel[sel["direction"] == "axis"]["value"].to_numpy() - ref
            null = sel[sel["direction"] != "axis"]["value"].to_numpy() - ref
            if axis.size == 0 or null.size == 0 or not np.isfinite(null).any():
                t_p = t_z = nm = ns = float("nan")
            else:
                t = null_test(float(axis[0]), null)
                t_p, t_z, nm, ns = t.p, t.z, t.null_mean, t.null_std
            name = f"d_{metric}" if metric in DELTA_METRICS else metric
            recs.append({"condition": cond, "kind": kind, "param": param, "effect": eff,
                         "metric": name, "axis": float(axis[0]) if axis.size else float("nan"),
                         "null_mean": nm, "null_std": ns, "p": t_p, "z": t_z,
                         "n_null": int(np.isfinite(null).sum())})
    return pd.DataFrame(recs)

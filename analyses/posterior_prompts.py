"""Prompts whose next token has an exact Bayes posterior over a few hypothesis tokens.

The one currency shared by SULA (an in-context task for pretrained LLMs) and wind-tunnel tasks
(bijection, HMM): each prompt comes with the token ids of its hypotheses and the exact posterior
over them, so calibration and steering are the same code for both. The model's posterior is its
next-token distribution restricted to the hypothesis tokens and renormalised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from probes.correlation import pearson
from windtunnel.task import entropy_bits_fp64


@dataclass(frozen=True, eq=False)
class PosteriorPrompts:
    """``prompts`` (texts, or token-id lists for wind tunnels) [N]; ``hyp_ids`` [N, K] token ids
    of the hypotheses; ``bayes`` [N, K] float64 exact posterior over them (rows sum to 1);
    ``group`` [N] int (SULA: k; wind tunnel: prediction index), named ``group_name``;
    ``meta``: per-prompt extra columns (N rows)."""

    name: str
    prompts: Sequence[str] | Sequence[Sequence[int]]
    hyp_ids: np.ndarray
    bayes: np.ndarray
    group: np.ndarray
    group_name: str = "k"
    meta: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self) -> None:
        n = len(self.prompts)
        hyp = np.asarray(self.hyp_ids)
        bayes = np.asarray(self.bayes, dtype=np.float64)
        if hyp.ndim != 2 or hyp.shape[0] != n or hyp.shape[1] < 2:
            raise ValueError(f"hyp_ids must be [N={n}, K>=2], got {list(hyp.shape)}")
        if bayes.shape != hyp.shape:
            raise ValueError(f"bayes must match hyp_ids {list(hyp.shape)}, got {list(bayes.shape)}")
        if not np.isfinite(bayes).all() or (bayes < 0).any():
            raise ValueError("bayes must hold finite non-negative probabilities")
        if not np.allclose(bayes.sum(1), 1.0, atol=1e-9):
            raise ValueError("each row of bayes must sum to 1")
        if np.asarray(self.group).shape != (n,):
            raise ValueError(f"group must have shape [{n}]")
        if len(self.meta) not in (0, n):
            raise ValueError(f"meta must have {n} rows, got {len(self.meta)}")
        object.__setattr__(self, "hyp_ids", hyp.astype(np.int64))
        object.__setattr__(self, "bayes", bayes)
        object.__setattr__(self, "group", np.asarray(self.group).astype(np.int64))

    def __len__(self) -> int:
        return len(self.prompts)

    @property
    def h_bayes_bits(self) -> np.ndarray:
        """Exact posterior entropy [N] (bits, float64)."""
        return entropy_bits_fp64(self.bayes)

    def subset(self, idx: Sequence[int] | np.ndarray) -> PosteriorPrompts:
        i = np.asarray(idx, dtype=np.int64)
        return PosteriorPrompts(
            name=self.name, prompts=[self.prompts[j] for j in i], hyp_ids=self.hyp_ids[i],
            bayes=self.bayes[i], group=self.group[i], group_name=self.group_name,
            meta=self.meta.iloc[i].reset_index(drop=True) if len(self.meta) else self.meta)

    def table(self) -> pd.DataFrame:
        """One row per prompt: prompt index, group, H_Bayes (bits), and the meta columns."""
        df = pd.DataFrame({"prompt": np.arange(len(self)), self.group_name: self.group,
                           "h_bayes_bits": self.h_bayes_bits})
        return pd.concat([df, self.meta.reset_index(drop=True)], axis=1) if len(self.meta) \
            else df


def model_posterior(logits: torch.Tensor, hyp_ids: np.ndarray | torch.Tensor) -> np.ndarray:
    """Next-token distribution restricted to the hypothesis tokens and renormalised:
    ``logits`` [N, V] -> [N, K] float64 (a softmax over the K selected logits)."""
    z = logits.detach().to("cpu", torch.float64)
    idx = torch.as_tensor(np.asarray(hyp_ids), dtype=torch.long)
    if idx.shape[0] != z.shape[0]:
        raise ValueError(f"logits have {z.shape[0]} rows, hyp_ids {idx.shape[0]}")
    if not bool(torch.isfinite(z).all()):
        raise FloatingPointError("the model produced NaN/inf logits")
    return torch.softmax(z.gather(1, idx), dim=1).numpy()


def kl_bits(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p ‖ q) in bits over the last axis [..., K] -> [...] (0·log 0 = 0; q floored at 1e-300)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.maximum(np.asarray(q, dtype=np.float64), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return t.sum(-1) / math.log(2.0)


def calibration(h_model: np.ndarray, h_bayes: np.ndarray,
                group: np.ndarray | None = None) -> dict[str, Any]:
    """Calibration of model entropies against Bayes entropies (bits): ``mae`` = mean
    |H_model − H_Bayes|, ``corr`` = Pearson corr(H_model, H_Bayes) (NaN when either is
    constant), ``n``; with ``group`` also ``per_group`` {g: {mae, corr, n, h_model, h_bayes}}."""
    hm = np.asarray(h_model, dtype=np.float64)
    hb = np.asarray(h_bayes, dtype=np.float64)

    def stats(m: np.ndarray, b: np.ndarray) -> dict[str, float]:
        return {"mae": float(np.abs(m - b).mean()), "corr": _corr(m, b), "n": int(m.size),
                "h_model": float(m.mean()), "h_bayes": float(b.mean())}

    out: dict[str, Any] = stats(hm, hb)
    if group is not None:
        g = np.asarray(group)
        out["per_group"] = {int(k): stats(hm[g == k], hb[g == k]) for k in np.unique(g)}
    return out


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(pearson(a, b))

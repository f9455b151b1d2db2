"""The tidy table and per-length summaries of ``bayesgeom stability``
(:mod:`analyses.stability.run`), from its per-length cells.

A cell is a dict: ``length`` (tokens), ``seq`` (per-sequence outcomes [n]: ``correct``,
``kl_bits``, ``entropy_abs_err_bits``, ``h_bayes_bits``, ``bayes_max``), ``V`` (hypotheses),
``note`` (why something is NaN), and where measured ``attn_trained`` / ``attn_random_init``
(query-row attention entropy, bits, mean over heads and sequences [n_layers]),
``keys_trained`` / ``keys_random_init`` / ``keys_chance`` (key-frame orthogonality [n_layers]).

Table columns: ``length``, ``multiple`` (of the training length), ``metric``, ``layer`` (−1:
the whole model), ``value``, and the controls beside it -- ``bayes`` (the exact posterior's
value: its expected accuracy; 0 for KL and entropy MAE), ``chance`` (accuracy 1/V; the
uniform predictor's KL and entropy MAE; uniform attention's entropy log2 ℓ, 1 normalised;
random directions' orthogonality), ``random_init`` (the random-init twin's) -- and ``note``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .result import LengthSummary

NAN = math.nan


def _layers(cell: dict[str, Any], key: str, n_layers: int) -> np.ndarray:
    v = cell.get(key)
    return np.full(n_layers, NAN) if v is None else np.asarray(v, dtype=np.float64)


def _uniform(cell: dict[str, Any]) -> tuple[float, float]:
    """The uniform predictor's mean KL(p_Bayes ‖ uniform) and entropy MAE (bits)."""
    gap = math.log2(cell["V"]) - cell["seq"]["h_bayes_bits"]
    return float(gap.mean()), float(np.abs(gap).mean())


def tidy_rows(cells: Sequence[dict[str, Any]], train_length: int, n_layers: int,
              metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per length × metric × layer (module doc)."""
    rows: list[dict[str, Any]] = []
    for c in cells:
        ell, s = int(c["length"]), c["seq"]
        base = {"length": ell, "multiple": ell / train_length, "note": c["note"]}

        def add(metric: str, layer: int, value: float, bayes: float = NAN,
                chance: float = NAN, random_init: float = NAN,
                base: dict[str, Any] = base) -> None:
            rows.append({**base, "metric": metric, "layer": layer, "value": float(value),
                         "bayes": float(bayes), "chance": float(chance),
                         "random_init": float(random_init)})

        kl_u, mae_u = _uniform(c)
        if "accuracy" in metrics:
            add("accuracy", -1, s["correct"].mean(), bayes=s["bayes_max"].mean(),
                chance=1.0 / c["V"])
        if "kl_bits" in metrics:
            add("kl_bits", -1, s["kl_bits"].mean(), bayes=0.0, chance=kl_u)
        if "entropy_mae_bits" in metrics:
            add("entropy_mae_bits", -1, s["entropy_abs_err_bits"].mean(), bayes=0.0,
                chance=mae_u)
        if "attention_entropy" in metrics:
            hmax = math.log2(ell)
            tr, ri = _layers(c, "attn_trained", n_layers), _layers(c, "attn_random_init",
                                                                    n_layers)
            for L in range(n_layers):
                add("attention_entropy_bits", L, tr[L], chance=hmax, random_init=ri[L])
                add("attention_entropy_norm", L, tr[L] / hmax, chance=1.0,
                    random_init=ri[L] / hmax)
        if "key_orthogonality" in metrics:
            tr, ri = _layers(c, "keys_trained", n_layers), _layers(c, "keys_random_init",
                                                                    n_layers)
            ch = _layers(c, "keys_chance", n_layers)
            for L in range(n_layers):
                add("key_orthogonality", L, tr[L], chance=ch[L], random_init=ri[L])
    return rows


def _mean(cell: dict[str, Any], key: str) -> float:
    v = cell.get(key)
    return NAN if v is None else float(np.mean(v))


def summarise(cells: Sequence[dict[str, Any]], train_length: int) -> list[LengthSummary]:
    """The headline numbers per length (:class:`LengthSummary`; layer means)."""
    out = []
    for c in cells:
        ell, s = int(c["length"]), c["seq"]
        hmax = math.log2(ell)
        out.append(LengthSummary(
            length=ell, multiple=ell / train_length, accuracy=float(s["correct"].mean()),
            bayes_accuracy=float(s["bayes_max"].mean()), chance=1.0 / c["V"],
            kl_bits=float(s["kl_bits"].mean()),
            entropy_mae_bits=float(s["entropy_abs_err_bits"].mean()),
            attention_entropy_bits=_mean(c, "attn_trained"),
            attention_entropy_norm=_mean(c, "attn_trained") / hmax,
            attention_entropy_norm_random_init=_mean(c, "attn_random_init") / hmax,
            key_orthogonality=_mean(c, "keys_trained"),
            key_orthogonality_random_init=_mean(c, "keys_random_init"),
            key_orthogonality_chance=_mean(c, "keys_chance"), note=c["note"]))
    return out

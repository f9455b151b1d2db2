"""Bijection elimination: infer π(x) for a fresh random permutation π of [V] from revealed pairs.

Layouts (vocabulary 2V: keys are tokens 0..V-1, values are V..2V-1):

* ``sepvocab`` (production): ``[k1, V+π(k1), ..., k_{L-1}, V+π(k_{L-1}), k_L]``, length 2L-1;
  predictions are read at every key position 2t (the next token is that key's value).
* ``paired``: ``[k1, V+π(k1), ..., kL, V+π(kL), q]``, length 2L+1; predictions at every key
  position and at the final query ``q`` (drawn from the context keys unless
  ``query_from_context=False``, then uniformly from [V]).

Without replacement the Bayes entropy at the k-th key is log2(V-k+1); with replacement a repeated
key has a delta posterior (0 bits), giving the saw-tooth curve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from infotheory import entropy_bits_from_probs
from records import option
from windtunnel.task import TaskBatch, TaskConfigError, TokenTask, config_dict, register_task

Layout = Literal["sepvocab", "paired"]


@dataclass(frozen=True)
class BijectionConfig:
    """``V`` hypotheses (values), ``L`` revealed keys (default V-1), ``layout``, key sampling."""

    V: int = option(20, "bijection: number of hypotheses (values; a batch holds dense "
                        "[V-1, V] posteriors per sequence, so V in the thousands needs GiBs)",
                    min=2)
    L: int | None = option(None, "bijection: number of revealed keys (default V - 1)", min=1)
    layout: Layout = option("sepvocab", "bijection: token layout", choices=("sepvocab", "paired"))
    replacement: bool = option(False, "bijection: draw keys with replacement (saw-tooth "
                                      "entropy curve)")
    query_from_context: bool = option(True, "bijection, paired layout: the final query is a "
                                            "revealed key", negate="--query-anywhere")


@register_task(BijectionConfig)
class BijectionTask(TokenTask):
    name = "bijection"
    size_options = ("V", "L")

    def __init__(self, cfg: BijectionConfig):
        V = int(cfg.V)
        L = V - 1 if cfg.L is None else int(cfg.L)
        if V < 2:
            raise TaskConfigError(f"bijection needs V >= 2 hypotheses, got V={V}")
        if L < 1:
            raise TaskConfigError(f"bijection needs L >= 1 keys, got L={L}")
        if not cfg.replacement and L > V:
            raise TaskConfigError(
                f"L={L} keys cannot be drawn without replacement from V={V}; "
                "use L <= V or replacement=True"
            )
        if cfg.layout not in ("sepvocab", "paired"):
            raise TaskConfigError(f"unknown layout {cfg.layout!r}; use 'sepvocab' or 'paired'")
        self.cfg = BijectionConfig(V, L, cfg.layout, bool(cfg.replacement), cfg.query_from_context)
        self.V, self.L = V, L

    @property
    def vocab_size(self) -> int:
        return 2 * self.V

    @property
    def hyp_slice(self) -> slice:
        return slice(self.V, 2 * self.V)

    @property
    def seq_len(self) -> int:
        return 2 * self.L - 1 if self.cfg.layout == "sepvocab" else 2 * self.L + 1

    @property
    def n_queries(self) -> int:
        return self.L if self.cfg.layout == "sepvocab" else self.L + 1

    def config(self) -> dict[str, Any]:
        return config_dict(self.name, self.cfg)

    def describe_tokens(self) -> dict[str, Any]:
        return {
            **super().describe_tokens(),
            "layout": self.cfg.layout,
            "keys": [0, self.V - 1],
            "values": [self.V, 2 * self.V - 1],
        }

    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch:
        V, L = self.V, self.L
        perm = np.argsort(rng.random((n, V)), axis=1)  # π, one fresh permutation per row
        if self.cfg.replacement:
            keys = rng.integers(0, V, size=(n, L))
        else:
            keys = np.argsort(rng.random((n, V)), axis=1)[:, :L]
        vals = np.take_along_axis(perm, keys, axis=1)  # [n, L]

        # Posterior at the k-th key: delta if the key was seen, else uniform over unrevealed values.
        seen_key = np.zeros((n, V), dtype=bool)
        revealed = np.zeros((n, V), dtype=bool)
        post = np.zeros((n, L, V), dtype=np.float64)
        rows = np.arange(n)
        for t in range(L):
            k, v = keys[:, t], vals[:, t]
            repeat = seen_key[rows, k]
            free = ~revealed
            uni = free / np.maximum(free.sum(axis=1, keepdims=True), 1)  # unused when all seen
            delta = np.zeros((n, V))
            delta[rows, v] = 1.0
            post[:, t] = np.where(repeat[:, None], delta, uni)
            seen_key[rows, k] = True
            revealed[rows, v] = True

        inter = np.empty((n, 2 * L), dtype=np.int64)
        inter[:, 0::2] = keys
        inter[:, 1::2] = V + vals
        key_pos = np.arange(0, 2 * L, 2)
        if self.cfg.layout == "sepvocab":
            ids, qpos, targets, posterior = inter[:, :-1], key_pos, vals, post
        else:
            if self.cfg.query_from_context:
                q = keys[rows, rng.integers(0, L, size=n)]
            else:
                q = rng.integers(0, V, size=n)
            qv = perm[rows, q]
            qpost = np.where(
                seen_key[rows, q][:, None],
                np.eye(V)[qv],
                (~revealed) / np.maximum((~revealed).sum(axis=1, keepdims=True), 1),
            )
            ids = np.concatenate([inter, q[:, None]], axis=1)
            qpos = np.concatenate([key_pos, [2 * L]])
            targets = np.concatenate([vals, qv[:, None]], axis=1)
            posterior = np.concatenate([post, qpost[:, None]], axis=1)

        return TaskBatch(
            input_ids=torch.from_numpy(np.ascontiguousarray(ids)),
            query_pos=torch.from_numpy(np.asarray(qpos, dtype=np.int64)),
            targets=torch.from_numpy(np.ascontiguousarray(targets, dtype=np.int64)),
            posterior=torch.from_numpy(posterior),
            entropy_bits=torch.from_numpy(entropy_bits_from_probs(posterior)),
        )

"""Long-context retrieval: find the one record whose key matches the query among many
distractor records spread through filler, at any length, with an exact posterior.

Vocabulary (``2 + key_vocab + value_vocab`` tokens): FILLER 0, QUERY 1, keys
``2 .. 2+K-1``, values ``2+K .. 2+K+V-1``; the hypotheses are the V values, in value order.

Sequence of ``length`` T tokens (all positions linear in T; nothing quadratic is built):

* ``R = (T - 2) // record_every`` records ``[key, value]``, one per block of ``record_every``
  tokens at a uniformly random offset inside it, the rest of each block FILLER; the
  ``T - 2 - R·record_every`` leftover tokens are FILLER at the start;
* then ``QUERY k*``; the prediction is read at ``k*`` (position T - 1; its next token would be
  the answer), the next-token convention of the other tunnels.

Generative process, per sequence: the query key k* is uniform over the K keys; the *needle* is
record N, uniform over the R records (its position is the oracle's, not the model's); its true
key is k* and its true value, the answer, is drawn from the prior; every other record is a
distractor with a true key uniform over the K - 1 other keys and a value from the same prior.
Observation noise ε (``noise``): every record's key and value token is independently replaced,
with probability ε, by a uniformly random key (value); FILLER and the query are never
corrupted.

Exact posterior (fp64), with λ_i = p(shown key_i | record i is the needle) / p(shown key_i |
distractor) -- (1 - ε + ε/K) / (ε/K) when it shows k*, else (ε/K) / ((1-ε)/(K-1) + ε/K) -- and
q(y) = (1-ε)·prior(y) + ε/V the marginal of a shown value:

    p(h | sequence) ∝ prior(h) · [ (ε/V) Σ_i λ_i / q(y_i) + (1 - ε) Σ_{i: y_i = h} λ_i / q(y_i) ]

(sum over every record i: each could be the needle, its key corrupted or not). It is a
:class:`~windtunnel.sparse_posterior.SparsePosterior`: the prior times a background, plus the
distinct shown values -- O(R) per sequence for any V up to 10⁶ and beyond.

**Why it depends on length.** Without noise exactly one record shows k* and the posterior is a
delta on its value (0 bits at every length: the model must retrieve, and accuracy is the
measure). With noise, distractors show k* by corruption (R·ε/K of them in expectation) and the
needle may hide behind a corrupted key, so the evidence for the answer is diluted by every
record: as T grows the posterior spreads over more candidate values, its entropy rises and the
Bayes accuracy falls. Evaluating a model trained at T at 500·T tests both finding the needle and
weighing more spurious matches than it ever saw.

Example:
    >>> task = LongRecallTask(LongRecallConfig(length=32, key_vocab=8, value_vocab=8))
    >>> b = task.sample(2, seed=0)
    >>> b.input_ids.shape, b.query_pos.tolist(), task.n_records
    (torch.Size([2, 32]), [31], 7)
    >>> task.with_length(3200).sample(2, seed=0).input_ids.shape
    torch.Size([2, 3200])
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from .priors import PRIORS, prior_weights, sample_from
from .sparse_posterior import SparsePosterior
from .task import DENSE_MAX_H, TaskBatch, TaskConfigError, TokenTask, config_dict
from .task_configs import LongRecallConfig
from .task_registry import register_task

FILLER, QUERY = 0, 1
KEY_BASE = 2


@register_task(LongRecallConfig)
class LongRecallTask(TokenTask):
    name = "long_recall"
    size_options = ("length", "value_vocab")
    length_option = "length"

    def __init__(self, cfg: LongRecallConfig):
        T, d = int(cfg.length), int(cfg.record_every)
        if d + 2 > T:
            raise TaskConfigError(f"long_recall: length={T} holds no record block of "
                                  f"record_every={d} before QUERY k; use length >= {d + 2}")
        if cfg.key_vocab < 2 or cfg.value_vocab < 2:
            raise TaskConfigError("long_recall needs key_vocab >= 2 and value_vocab >= 2")
        if not 0.0 <= cfg.noise <= 0.5:
            raise TaskConfigError(f"long_recall: noise must be in [0, 0.5], got {cfg.noise}")
        if cfg.prior not in PRIORS:
            raise TaskConfigError(f"long_recall: prior must be one of {', '.join(PRIORS)}, "
                                  f"got {cfg.prior!r}")
        if cfg.prior != "generalised_gaussian" and cfg.prior_shape != 1.0:
            raise TaskConfigError("long_recall: prior_shape applies to "
                                  "prior='generalised_gaussian' only")
        max_len = T if cfg.max_length is None else int(cfg.max_length)
        if max_len < T:
            raise TaskConfigError(f"long_recall: max_length={max_len} < length={T}")
        self.cfg = replace(cfg, length=T, record_every=d, noise=float(cfg.noise),
                           max_length=max_len)
        self.K, self.V, self.noise = int(cfg.key_vocab), int(cfg.value_vocab), float(cfg.noise)
        try:
            pr = prior_weights(cfg.prior, self.V, cfg.prior_scale, cfg.prior_shape)
        except ValueError as e:
            raise TaskConfigError(f"long_recall: {e}") from None
        self.prior: np.ndarray | None = pr
        self._prior_t = None if pr is None else torch.from_numpy(pr)

    # ------------------------------------------------------------------ layout
    @property
    def vocab_size(self) -> int:
        return KEY_BASE + self.K + self.V

    @property
    def value_base(self) -> int:
        return KEY_BASE + self.K

    @property
    def hyp_slice(self) -> slice:
        return slice(self.value_base, self.value_base + self.V)

    @property
    def seq_len(self) -> int:
        return self.cfg.length

    @property
    def max_seq_len(self) -> int:
        return int(self.cfg.max_length or self.cfg.length)

    @property
    def n_queries(self) -> int:
        return 1

    @property
    def n_records(self) -> int:
        """R, the records in a sequence (grows linearly with ``length``)."""
        return (self.cfg.length - 2) // self.cfg.record_every

    @property
    def dense(self) -> bool:
        """Whether batches carry the dense posterior too (V <= DENSE_MAX_H)."""
        return self.V <= DENSE_MAX_H

    def config(self) -> dict[str, Any]:
        return config_dict(self.name, self.cfg)

    def posterior_bytes(self) -> int:
        sparse = 6 * 8 * self.n_records + 8 * self.seq_len
        return sparse + (3 * 8 * self.V if self.dense else 0)

    def with_length(self, length: int) -> LongRecallTask:
        """The same task (vocabulary, hypothesis slice, record density, noise, prior) at
        another sequence length; ``max_length`` grows to it where needed."""
        return LongRecallTask(replace(self.cfg, length=int(length),
                                      max_length=max(self.max_seq_len, int(length))))

    def at_length(self, value: int) -> LongRecallTask:
        return self.with_length(value)

    def sample_at(self, length: int, n: int,
                  seed: int | np.random.Generator | np.random.SeedSequence) -> TaskBatch:
        """``n`` sequences of ``length`` tokens (:meth:`with_length`, then :meth:`sample`):
        memory O(n · length), the posterior O(n · records)."""
        return self.with_length(length).sample(n, seed)

    def describe_tokens(self) -> dict[str, Any]:
        return {**super().describe_tokens(), "specials": {"FILLER": FILLER, "QUERY": QUERY},
                "keys": [KEY_BASE, self.value_base - 1],
                "values": [self.value_base, self.vocab_size - 1],
                "layout": f"FILLER-padded blocks of {self.cfg.record_every} tokens, one "
                          f"[key value] record each (R = {self.n_records}), then QUERY k",
                "read_at": "the query key (last position)"}

    # ---------------------------------------------------------------- sampling
    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch:
        K, V, T, d, R = self.K, self.V, self.cfg.length, self.cfg.record_every, self.n_records
        rows = np.arange(n)
        kstar = rng.integers(0, K, size=n)
        needle = rng.integers(0, R, size=n)
        dk = rng.integers(0, K - 1, size=(n, R))
        true_keys = np.where(np.arange(R) == needle[:, None], kstar[:, None],
                             dk + (dk >= kstar[:, None]))
        true_vals = sample_from(rng, self.prior, V, (n, R))
        offsets = rng.integers(0, d - 1, size=(n, R))
        ck, rk = rng.random((n, R)) < self.noise, rng.integers(0, K, size=(n, R))
        cv, rv = rng.random((n, R)) < self.noise, rng.integers(0, V, size=(n, R))
        keys, vals = np.where(ck, rk, true_keys), np.where(cv, rv, true_vals)

        ids = np.full((n, T), FILLER, dtype=np.int64)
        pos = (T - 2 - R * d) + d * np.arange(R) + offsets
        ids[rows[:, None], pos] = KEY_BASE + keys
        ids[rows[:, None], pos + 1] = self.value_base + vals
        ids[:, T - 2] = QUERY
        ids[:, T - 1] = KEY_BASE + kstar
        sp = recall_posterior(keys, vals, kstar, K, V, self.noise, self._prior_t)
        return TaskBatch(
            input_ids=torch.from_numpy(ids),
            query_pos=torch.tensor([T - 1], dtype=torch.int64),
            targets=torch.from_numpy(true_vals[rows, needle][:, None].astype(np.int64)),
            posterior=sp.to_dense() if self.dense else None,
            entropy_bits=sp.entropy_bits(), sparse=sp)


def recall_posterior(keys: np.ndarray, vals: np.ndarray, kstar: np.ndarray, K: int, V: int,
                     noise: float, prior: torch.Tensor | None = None) -> SparsePosterior:
    """The exact posterior over the answer (module docstring) from the shown record keys and
    values ``keys``, ``vals`` [n, R] (indices, not token ids) and the query keys ``kstar`` [n];
    ``prior`` [V] float64 or None (uniform). One position per sequence: [n, 1, V] in sparse
    form, support = the distinct shown values.

    Example:
        >>> sp = recall_posterior(np.array([[0, 1]]), np.array([[2, 3]]), np.array([0]),
        ...                       K=2, V=4, noise=0.1)
        >>> [round(float(x), 4) for x in sp.to_dense()[0, 0]]
        [0.025, 0.025, 0.9225, 0.0275]
    """
    n, R = vals.shape
    rows = np.arange(n)
    hit = keys == kstar[:, None]
    if noise == 0.0:
        if not (hit.sum(axis=1) == 1).all():
            raise ValueError("without noise exactly one record per sequence shows the query key")
        v = vals[rows, hit.argmax(axis=1)]
        return SparsePosterior(
            base=torch.zeros(n, 1, dtype=torch.float64), support=torch.full((n, 1), -1),
            n_support=torch.zeros(n, 1, dtype=torch.int64), n_hypotheses=V,
            delta=torch.from_numpy(v[:, None].astype(np.int64)), prior=prior)
    e = noise
    lam = np.where(hit, (1 - e + e / K) / (e / K), (e / K) / ((1 - e) / (K - 1) + e / K))
    pr = None if prior is None else prior.numpy()
    pi_y = np.full(vals.shape, 1.0 / V) if pr is None else pr[vals]
    w = lam / ((1 - e) * pi_y + e / V)
    order = np.argsort(vals, axis=1, kind="stable")
    ys, ws, pis = (np.take_along_axis(a, order, axis=1) for a in (vals, w, pi_y))
    start = np.ones((n, R), dtype=bool)
    start[:, 1:] = ys[:, 1:] != ys[:, :-1]
    seg = rows[:, None] * R + np.cumsum(start, axis=1) - 1
    runs = np.bincount(seg.ravel(), weights=ws.ravel(), minlength=n * R)[seg]  # Σ_{y_i = u} w_i
    A = (e / V) * w.sum(axis=1)
    Z = A + (1 - e) * np.where(start, pis * runs, 0.0).sum(axis=1)
    prob = np.where(start, pis * (A[:, None] + (1 - e) * runs) / Z[:, None], 0.0)
    return SparsePosterior(
        base=torch.from_numpy((A / Z)[:, None]),
        support=torch.from_numpy(np.where(start, ys, -1).astype(np.int64)),
        n_support=torch.full((n, 1), R, dtype=torch.int64), n_hypotheses=V,
        support_prob=torch.from_numpy(prob[:, None, :]), prior=prior)

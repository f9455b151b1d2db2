"""Bijection elimination: infer π(x) for a fresh random permutation π of [V] from revealed pairs.

Layouts (vocabulary 2V: keys are tokens 0..V-1, values are V..2V-1):

* ``sepvocab`` (production): ``[k1, V+π(k1), ..., k_{L-1}, V+π(k_{L-1}), k_L]``, length 2L-1;
  predictions are read at every key position 2t (the next token is that key's value).
* ``paired``: ``[k1, V+π(k1), ..., kL, V+π(kL), q]``, length 2L+1; predictions at every key
  position and at the final query ``q`` (drawn from the context keys unless
  ``query_from_context=False``, then uniformly from [V]).

Without replacement the Bayes entropy at the k-th key is log2(V-k+1); with replacement a repeated
key has a delta posterior (0 bits), giving the saw-tooth curve.

**Large V.** Without noise every batch carries the posterior's closed form
(:class:`~windtunnel.sparse_posterior.SparsePosterior`: uniform over the values not yet
revealed, stored as the row's revealed values and a count per position, O(L) per sequence);
the dense [B, L, V] array only for V <= :data:`~windtunnel.task.DENSE_MAX_H`.

**Observation noise** (``noise`` = ε, sepvocab without replacement): each shown value token
is, with probability ε, replaced by a uniformly random value (any of the V, the true one
included); targets stay the true values π(k). With a = ε/V and b = 1 - ε, an observation y of a
key whose value is v has likelihood a + b·[v = y]. Expanding the product over the n pairs shown
before key t and counting the injections of the t + 1 distinct keys into [V] gives, for a value
h shown m_h times,

    p(π(x_t) = h | y) ∝ Σ_s e_s(m without h's group) · a^(n-s) b^s (V-1-s)!

where e_s is the s-th elementary symmetric polynomial of the multiplicities of the distinct
shown values (h unseen: all of them). It depends on h only through m_h, so it is computed once
per multiplicity class by a dynamic programme over the values (O(V) steps of O(n) per class and
position, O(V³) per sequence), in float64 with the sum in log space: V <= :data:`NOISY_MAX_V`.
A prior over the hypotheses is not offered here: they are permutations, whose natural prior is
uniform (see ``long_recall`` for priors over answers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..infotheory import entropy_bits_from_probs
from .sparse_posterior import SparsePosterior
from .task import DENSE_MAX_H, TaskBatch, TaskConfigError, TokenTask, config_dict
from .task_configs import BijectionConfig, Layout  # noqa: F401 (re-exported)
from .task_registry import register_task

#: the exact noisy posterior costs O(V³) per sequence: the largest V it is offered for
NOISY_MAX_V = 128


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
        noise = float(cfg.noise)
        if noise > 0 and (cfg.layout != "sepvocab" or cfg.replacement):
            raise TaskConfigError("bijection noise > 0 is defined for layout='sepvocab' without "
                                  "replacement; drop --noise or those options")
        if noise > 0 and V > NOISY_MAX_V:
            raise TaskConfigError(f"bijection noise > 0 computes its exact posterior in O(V^3) "
                                  f"per sequence; use V <= {NOISY_MAX_V} (got V={V}) or noise=0")
        self.cfg = BijectionConfig(V, L, cfg.layout, bool(cfg.replacement), cfg.query_from_context,
                                   noise)
        self.V, self.L, self.noise = V, L, noise
        #: whether batches carry the dense [B, Q, V] posterior (else only the sparse form)
        self.dense = noise > 0 or V <= DENSE_MAX_H

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
        """The task's parameters; ``noise`` only when it is not 0, so a noiseless task has the
        settings (and run fingerprint) it had before the option existed."""
        d = config_dict(self.name, self.cfg)
        if not self.noise:
            del d["noise"]
        return d

    def posterior_bytes(self) -> int:
        if self.dense:
            return super().posterior_bytes()
        return 8 * 8 * self.n_queries  # base, support, counts, deltas: O(L) per sequence

    def describe_tokens(self) -> dict[str, Any]:
        return {
            **super().describe_tokens(),
            "layout": self.cfg.layout,
            "keys": [0, self.V - 1],
            "values": [self.V, 2 * self.V - 1],
        }

    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch:
        V, L = self.V, self.L
        if not self.dense:
            return self._sample_sparse(rng, n)
        perm = np.argsort(rng.random((n, V)), axis=1)  # π, one fresh permutation per row
        if self.cfg.replacement:
            keys = rng.integers(0, V, size=(n, L))
        else:
            keys = np.argsort(rng.random((n, V)), axis=1)[:, :L]
        vals = np.take_along_axis(perm, keys, axis=1)  # [n, L]
        shown = vals
        if self.noise > 0:
            hit = rng.random((n, L)) < self.noise
            shown = np.where(hit, rng.integers(0, V, size=(n, L)), vals)

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
        if self.noise > 0:
            post = noisy_posterior(shown, V, self.noise)

        inter = np.empty((n, 2 * L), dtype=np.int64)
        inter[:, 0::2] = keys
        inter[:, 1::2] = V + shown
        key_pos = np.arange(0, 2 * L, 2)
        q = qv = None
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
            sparse=None if self.noise > 0 else elimination_sparse(keys, vals, V, q, qv),
        )

    def _sample_sparse(self, rng: np.random.Generator, n: int) -> TaskBatch:
        """V > DENSE_MAX_H: draw only the L keys and their values (O(n·L) memory, no
        permutation of [V]) and return the closed-form posterior alone."""
        V, L = self.V, self.L
        keys = np.empty((n, L), dtype=np.int64)
        vals = np.empty((n, L), dtype=np.int64)
        q = np.empty(n, dtype=np.int64)
        qv = np.empty(n, dtype=np.int64)
        for i in range(n):  # π restricted to the keys shown: a uniform injection into [V]
            keys[i] = (rng.integers(0, V, size=L) if self.cfg.replacement
                       else rng.choice(V, size=L, replace=False))
            q[i] = (keys[i, rng.integers(0, L)] if self.cfg.query_from_context
                    else rng.integers(0, V))
            uk, inv = np.unique(np.append(keys[i], q[i]), return_inverse=True)
            v = rng.choice(V, size=uk.size, replace=False)[inv]
            vals[i], qv[i] = v[:L], v[L]
        inter = np.empty((n, 2 * L), dtype=np.int64)
        inter[:, 0::2] = keys
        inter[:, 1::2] = V + vals
        key_pos = np.arange(0, 2 * L, 2)
        if self.cfg.layout == "sepvocab":
            ids, qpos, targets = inter[:, :-1], key_pos, vals
            sp = elimination_sparse(keys, vals, V)
        else:
            ids = np.concatenate([inter, q[:, None]], axis=1)
            qpos = np.concatenate([key_pos, [2 * L]])
            targets = np.concatenate([vals, qv[:, None]], axis=1)
            sp = elimination_sparse(keys, vals, V, q, qv)
        return TaskBatch(
            input_ids=torch.from_numpy(np.ascontiguousarray(ids)),
            query_pos=torch.from_numpy(np.asarray(qpos, dtype=np.int64)),
            targets=torch.from_numpy(np.ascontiguousarray(targets, dtype=np.int64)),
            posterior=None, entropy_bits=sp.entropy_bits(), sparse=sp)


def elimination_sparse(keys: np.ndarray, vals: np.ndarray, V: int, q: np.ndarray | None = None,
                       qv: np.ndarray | None = None) -> SparsePosterior:
    """The noiseless bijection posterior in closed form: at key t, a delta on its value if the
    key was shown before, else uniform over the V values not yet revealed. ``keys``, ``vals``
    [n, L] int; with the paired layout's final query ``q`` [n] (value ``qv``), one more
    position. Memory O(n·L).

    Example:
        >>> sp = elimination_sparse(np.array([[0, 2, 0]]), np.array([[1, 0, 1]]), V=3)
        >>> sp.to_dense()[0].numpy().round(3).tolist()  # key 0 shown again at t = 2
        [[0.333, 0.333, 0.333], [0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]
    """
    n, L = keys.shape
    order = np.argsort(keys, axis=1, kind="stable")
    sk = np.take_along_axis(keys, order, axis=1)
    rep_sorted = np.zeros((n, L), dtype=bool)
    rep_sorted[:, 1:] = sk[:, 1:] == sk[:, :-1]
    repeat = np.empty_like(rep_sorted)
    np.put_along_axis(repeat, order, rep_sorted, axis=1)
    support = np.where(repeat, -1, vals).astype(np.int64)
    distinct = np.concatenate([np.zeros((n, 1), dtype=np.int64),
                               np.cumsum(~repeat, axis=1)], axis=1)  # [n, L+1]
    n_sup = np.tile(np.arange(L), (n, 1))
    base = V / np.maximum(V - distinct[:, :L], 1)  # 0 left only where a delta overrides
    delta = np.where(repeat, vals, -1)
    if q is not None and qv is not None:
        seen = (keys == q[:, None]).any(axis=1)
        n_sup = np.concatenate([n_sup, np.full((n, 1), L)], axis=1)
        base = np.concatenate([base, (V / np.maximum(V - distinct[:, L:], 1))], axis=1)
        delta = np.concatenate([delta, np.where(seen, qv, -1)[:, None]], axis=1)
    base = np.where(delta >= 0, 0.0, base)
    return SparsePosterior(
        base=torch.from_numpy(np.ascontiguousarray(base, dtype=np.float64)),
        support=torch.from_numpy(support), n_hypotheses=V,
        n_support=torch.from_numpy(np.ascontiguousarray(n_sup, dtype=np.int64)),
        delta=torch.from_numpy(np.ascontiguousarray(delta)) if (delta >= 0).any() else None)


def noisy_posterior(shown: np.ndarray, V: int, noise: float) -> np.ndarray:
    """Exact p(π(x_t) = h | shown values before t) [n, L, V] float64 for keys drawn without
    replacement, each shown value replaced by a uniform one with probability ``noise`` > 0
    (the formula in the module docstring). ``shown`` [n, L] int.

    Example:
        >>> p = noisy_posterior(np.array([[0, 0]]), V=3, noise=0.3)
        >>> [round(float(x), 4) for x in p[0, 1]]   # value 0 shown, likely taken
        [0.1, 0.45, 0.45]
    """
    n, L = shown.shape
    la, lb = math.log(noise / V), math.log1p(-noise)
    post = np.empty((n, L, V))
    counts = np.zeros((n, V), dtype=np.int64)
    rows = np.arange(n)
    for t in range(L):
        kmax = int(counts.max())
        # variant 0: every shown value; variant k: one value shown k times left out
        items = np.repeat(counts[:, None, :], kmax + 1, axis=1)
        for k in range(1, kmax + 1):
            has = counts == k
            ok = has.any(axis=1)
            items[rows[ok], k, has.argmax(axis=1)[ok]] = 0
        e = np.zeros((n, kmax + 1, t + 1))
        e[..., 0] = 1.0
        for u in np.flatnonzero(items.any(axis=(0, 1))):
            e[..., 1:] = e[..., 1:] + items[:, :, u : u + 1] * e[..., :-1]
        s = np.arange(t + 1)
        logc = (t - s) * la + s * lb + np.array([math.lgamma(V - x) for x in s])
        with np.errstate(divide="ignore"):
            logw = np.logaddexp.reduce(np.log(e) + logc, axis=-1)  # [n, kmax + 1]
        lw = np.take_along_axis(logw, counts, axis=1)  # each value's class
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        post[:, t] = w / w.sum(axis=1, keepdims=True)
        counts[rows, shown[:, t]] += 1
    return post


def paper1_token_ids(task: object) -> list[int] | None:
    """Paper I's token set E_tok[0..V−1]: on the bijection its V key tokens 0..V−1
    (``describe_tokens()["keys"]``); None for another task, where tokens 0..V−1 are not a
    hypothesis set.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> paper1_token_ids(make_task("bijection", V=4)), paper1_token_ids(make_task("hmm"))
        ([0, 1, 2, 3], None)
    """
    if not isinstance(task, BijectionTask):
        return None
    lo, hi = task.describe_tokens()["keys"]
    return list(range(lo, hi + 1))

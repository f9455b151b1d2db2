"""Associative recall: bind keys to values in context, then answer a query by random access
(Paper I v3+, task C, "binding"; spec §1.4).

Two variants (``variant``), each a fresh key→value map per sequence; the hypotheses are the
value tokens, in value order, and the posterior at every supervised position is exact (fp64).

``recall`` (default) -- the generator of the authors' ``src/data/associative_recall.py``
(spec §1.4; defaults N = 64, M = 3, F = 32, 256 keys, 256 values, vocabulary 522):

* tokens: PAD 0, STORE 1, FILLER 2, QUERY 3, SEP 4 (5..9 unused); keys ``10 .. 10+n_keys-1``;
  values ``10+n_keys .. 10+n_keys+n_values-1``;
* N keys and N values, each drawn *without replacement* from its own vocabulary, paired in
  draw order;
* sequence: ``[STORE k SEP v] × N``, ``FILLER × F``, then M queries ``[QUERY k PAD]`` with
  ``F // 2`` fillers between consecutive queries (none after the last); length
  ``4N + F + 3M + (M-1)(F//2)`` (329 at the defaults);
* the M query keys are drawn without replacement from the N stored keys (as the authors' code
  does; the spec says only "drawn from the stored keys"), so every answer is bound in context
  and the posterior is a delta on the stored value (0 bits; the metric is recall accuracy).

  Choice where the spec is silent (it flags the read-out position as an inference): the
  prediction is read at the **query key** (the token after QUERY), whose next token is the PAD
  answer slot -- the next-token convention of the bijection tunnel (labels at key positions).
  The PAD placeholder stays in the sequence, as in the authors' generator; a causal model
  reading at the key never sees it.

``binding`` -- the simpler variant of the authors' ``train_substrate_pilots.py`` (spec §1.4,
"keys with replacement over V = 20, plus a random key→value map (values may repeat)"), in its
layout (the bijection sepvocab stream):

* tokens: keys ``0 .. n_keys-1``, values ``n_keys .. n_keys+n_values-1`` (vocabulary 40 at the
  defaults n_keys = n_values = 20);
* a map m: keys → values drawn uniformly (each key's value independent, so values may repeat);
  N keys drawn *with replacement*; sequence ``[k1, m(k1), k2, m(k2), ..., k_N]`` (length 2N-1,
  default N = 19, the authors' L);
* the prediction is read at every key position (the next token is its value): the posterior
  is a delta on m(k) if k appeared earlier in the sequence (every occurrence of a key shows
  the same value, so repeats agree), else uniform over all n_values values, because the map's
  other values say nothing about an unseen key's. H_Bayes is therefore exactly 0 or
  log2(n_values) bits.

Options that apply to one variant only (``M``, ``F``) are refused for the other.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..infotheory import entropy_bits_from_probs
from .task import TaskBatch, TaskConfigError, TokenTask, config_dict
from .task_configs import VARIANTS, AssocRecallConfig, Variant  # noqa: F401 (re-exported)
from .task_registry import register_task

#: recall-variant special tokens (the authors' tokenizer)
PAD, STORE, FILLER, QUERY, SEP = 0, 1, 2, 3, 4
KEY_OFFSET = 10

#: per-variant defaults of the options left unset (None)
DEFAULTS: dict[str, dict[str, int | None]] = {
    "recall": {"N": 64, "M": 3, "F": 32, "n_keys": 256, "n_values": 256},
    "binding": {"N": 19, "M": None, "F": None, "n_keys": 20, "n_values": 20},
}


def _resolve(cfg: AssocRecallConfig) -> AssocRecallConfig:
    """The config with the variant's defaults filled in, or a one-line TaskConfigError for a
    combination that cannot be sampled."""
    if cfg.variant not in VARIANTS:
        raise TaskConfigError(f"assoc_recall: variant must be one of {', '.join(VARIANTS)}, "
                              f"got {cfg.variant!r}")
    d = DEFAULTS[cfg.variant]
    given = {k: getattr(cfg, k) for k in d}
    if cfg.variant == "binding":
        extra = [k for k in ("M", "F") if given[k] is not None]
        if extra:
            raise TaskConfigError(
                f"assoc_recall: {' and '.join(extra)} appl{'y' if len(extra) > 1 else 'ies'} "
                "to variant='recall' only (the binding variant queries every key of its "
                "k v k v ... stream)")
    v = {k: d[k] if given[k] is None else int(given[k]) for k in d}
    if cfg.variant == "recall":
        N, M = int(v["N"] or 0), int(v["M"] or 0)
        for what, vocab in (("keys", "n_keys"), ("values", "n_values")):
            size = int(v[vocab] or 0)
            if size < N:
                raise TaskConfigError(
                    f"assoc_recall: N={N} pairs cannot draw distinct {what} from "
                    f"{vocab}={v[vocab]}; use N <= {vocab} (or variant='binding', keys with "
                    "replacement)")
        if M > N:
            raise TaskConfigError(f"assoc_recall: M={M} queries cannot be distinct stored keys "
                                  f"of N={N} pairs; use M <= N")
    return AssocRecallConfig(cfg.variant, **v)


@register_task(AssocRecallConfig)
class AssocRecallTask(TokenTask):
    name = "assoc_recall"

    def __init__(self, cfg: AssocRecallConfig):
        self.cfg = _resolve(cfg)
        c = self.cfg
        self.variant: str = c.variant
        assert c.N is not None and c.n_keys is not None and c.n_values is not None
        self.N, self.n_keys, self.n_values = c.N, c.n_keys, c.n_values
        #: queries and fillers (recall); 0 for the binding variant, which has neither
        self.M, self.F = c.M or 0, c.F or 0

    # ------------------------------------------------------------------ layout
    @property
    def size_options(self) -> tuple[str, ...]:  # type: ignore[override]
        """The options that size a batch (named when one would not fit)."""
        if self.variant == "recall":
            return ("N", "M", "F", "n_keys", "n_values")
        return ("N", "n_keys", "n_values")

    @property
    def key_base(self) -> int:
        return KEY_OFFSET if self.variant == "recall" else 0

    @property
    def value_base(self) -> int:
        return self.key_base + self.n_keys

    @property
    def vocab_size(self) -> int:
        return self.value_base + self.n_values

    @property
    def hyp_slice(self) -> slice:
        return slice(self.value_base, self.value_base + self.n_values)

    @property
    def seq_len(self) -> int:
        if self.variant == "binding":
            return 2 * self.N - 1
        M, F = self.M, self.F
        return 4 * self.N + F + 3 * M + (M - 1) * (F // 2)

    @property
    def n_queries(self) -> int:
        return self.M if self.variant == "recall" else self.N

    def query_positions(self) -> np.ndarray:
        """Where predictions are read: the query keys (recall) or every key (binding)."""
        if self.variant == "binding":
            return 2 * np.arange(self.N, dtype=np.int64)
        M, F = self.M, self.F
        return 4 * self.N + F + (3 + F // 2) * np.arange(M, dtype=np.int64) + 1

    def config(self) -> dict[str, Any]:
        return config_dict(self.name, self.cfg)

    def describe_tokens(self) -> dict[str, Any]:
        out = {**super().describe_tokens(), "variant": self.variant,
               "keys": [self.key_base, self.value_base - 1],
               "values": [self.value_base, self.vocab_size - 1]}
        if self.variant == "recall":
            out["specials"] = {"PAD": PAD, "STORE": STORE, "FILLER": FILLER, "QUERY": QUERY,
                               "SEP": SEP}
            out["layout"] = "[STORE k SEP v]xN FILLERxF ([QUERY k PAD] FILLERx(F//2))xM"
            out["read_at"] = "the query key (its next token is the PAD answer slot)"
        else:
            out["layout"] = "k1 v1 k2 v2 ... kN (keys with replacement)"
            out["read_at"] = "every key (its next token is its value)"
        return out

    # ---------------------------------------------------------------- sampling
    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch:
        if self.variant == "recall":
            ids, targets, post = self._sample_recall(rng, n)
        else:
            ids, targets, post = self._sample_binding(rng, n)
        return TaskBatch(
            input_ids=torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)),
            query_pos=torch.from_numpy(self.query_positions()),
            targets=torch.from_numpy(np.ascontiguousarray(targets, dtype=np.int64)),
            posterior=torch.from_numpy(post),
            # + 0.0: a delta's entropy is -0.0 from the sum; show it as 0
            entropy_bits=torch.from_numpy(entropy_bits_from_probs(post) + 0.0),
        )

    def _sample_recall(self, rng: np.random.Generator, n: int):
        N, M = self.N, self.M
        rows = np.arange(n)[:, None]
        keys = np.argsort(rng.random((n, self.n_keys)), axis=1)[:, :N]  # distinct per row
        vals = np.argsort(rng.random((n, self.n_values)), axis=1)[:, :N]
        pick = np.argsort(rng.random((n, N)), axis=1)[:, :M]  # distinct stored pairs
        qkeys, qvals = keys[rows, pick], vals[rows, pick]  # [n, M]

        ids = np.full((n, self.seq_len), FILLER, dtype=np.int64)
        ids[:, 0 : 4 * N : 4] = STORE
        ids[:, 1 : 4 * N : 4] = KEY_OFFSET + keys
        ids[:, 2 : 4 * N : 4] = SEP
        ids[:, 3 : 4 * N : 4] = self.value_base + vals
        qpos = self.query_positions()
        ids[:, qpos - 1] = QUERY
        ids[:, qpos] = KEY_OFFSET + qkeys
        ids[:, qpos + 1] = PAD

        return ids, qvals, stored_value_posterior(keys, vals, qkeys, self.n_values)

    def _sample_binding(self, rng: np.random.Generator, n: int):
        N, V = self.N, self.n_values
        rows = np.arange(n)[:, None]
        keymap = rng.integers(0, V, size=(n, self.n_keys))  # values may repeat
        keys = rng.integers(0, self.n_keys, size=(n, N))  # with replacement
        vals = keymap[rows, keys]  # [n, N]

        ids = np.empty((n, 2 * N), dtype=np.int64)
        ids[:, 0::2] = keys
        ids[:, 1::2] = self.value_base + vals
        ids = ids[:, :-1]

        return ids, vals, binding_posterior(keys, vals, self.n_keys, V)


def stored_value_posterior(keys: np.ndarray, vals: np.ndarray, qkeys: np.ndarray,
                           n_values: int) -> np.ndarray:
    """The recall variant's exact posterior [n, M, n_values] float64: at each query, a delta on
    the value stored with its key. ``keys``, ``vals`` [n, N] the stored pairs (key and value
    indices), ``qkeys`` [n, M] the queried keys, each stored once (a query of a key not stored,
    or stored twice, raises :class:`TaskConfigError`).

    Example:
        >>> stored_value_posterior(np.array([[3, 1]]), np.array([[0, 2]]), np.array([[1]]),
        ...                        3).tolist()
        [[[0.0, 0.0, 1.0]]]
    """
    hit = keys[:, None, :] == qkeys[:, :, None]  # [n, M, N]
    if (hit.sum(-1) != 1).any():
        raise TaskConfigError("assoc_recall: every queried key must be stored exactly once")
    qvals = np.take_along_axis(vals, hit.argmax(-1), axis=1)
    post = np.zeros((*qkeys.shape, n_values), dtype=np.float64)
    np.put_along_axis(post, qvals[..., None], 1.0, axis=-1)
    return post


def binding_posterior(keys: np.ndarray, vals: np.ndarray, n_keys: int, n_values: int,
                      ) -> np.ndarray:
    """The binding variant's exact posterior [n, N, n_values] float64 at every key: a delta on
    the value shown with the key's first occurrence where it appeared before, else uniform.
    ``keys`` [n, N]; ``vals`` [n, N] the value shown after each key (the last is never read:
    the stream ends on a key).

    Example:
        >>> binding_posterior(np.array([[0, 0]]), np.array([[1, -1]]), 2, 2).tolist()
        [[[0.5, 0.5], [0.0, 1.0]]]
    """
    n, N = keys.shape
    r = np.arange(n)
    post = np.full((n, N, n_values), 1.0 / n_values, dtype=np.float64)
    first = np.full((n, n_keys), -1, dtype=np.int64)  # the value a key was first shown with
    for t in range(N):
        k = keys[:, t]
        known = first[r, k]
        seen = known >= 0
        post[seen, t] = 0.0
        post[r[seen], t, known[seen]] = 1.0
        first[r[~seen], k[~seen]] = vals[~seen, t]
    return post

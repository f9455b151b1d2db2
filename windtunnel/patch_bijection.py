"""Patch pairs of the bijection tunnel (:mod:`windtunnel.patch_pairs`): the edits, and the exact
posterior of any sequence of its layout from :mod:`windtunnel.bijection`'s own closed forms.

* **evidence** -- one shown value replaced by a value shown nowhere in the sequence (the key's
  other occurrences show no value, so the sequence still states a bijection, π(k) = the new
  value). The set of revealed values changes from that pair on: every later key read not yet
  revealed moves its mass from the new value to the old one (a support change: the exact KL is
  infinite, since each posterior rules out a value the other allows; with ``noise`` it is
  finite). Reads at or before the edit are unchanged.
* **bayes_null** -- one shown key replaced by a key that occurs nowhere in the sequence, where
  the key occurs only there (it is never read again, and is not the paired query). Exactly null:
  without noise the posterior at a key read is a delta if that key was shown before, else
  uniform over the values not yet revealed; with noise (keys drawn without replacement) it
  depends on the shown values only. Neither reads which fresh key a pair names. Values cannot
  be edited nully: the revealed set after every pair is read at the next key, so any change to
  the values (swapping two pairs' order or values included) changes some read between them.
"""

from __future__ import annotations

import numpy as np

from .bijection import BijectionTask, elimination_sparse, noisy_posterior
from .names import TaskConfigError
from .patch_kinds import Edit, Editor, pick


def decode(task: BijectionTask, ids: np.ndarray,
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Keys [n, L], shown values [n, L] (value indices; -1 where the layout shows none:
    sepvocab's last key) and the paired layout's query key [n] (None for sepvocab) of ``ids``
    [n, T]. Tokens outside their range raise :class:`TaskConfigError`."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2 or ids.shape[1] != task.seq_len:
        raise TaskConfigError(f"bijection sequences are [n, {task.seq_len}] token ids, got "
                              f"shape {list(ids.shape)}")
    V, L = task.V, task.L
    keys, vals = ids[:, 0 : 2 * L : 2], ids[:, 1 : 2 * L : 2] - V
    shown = np.full(keys.shape, -1, dtype=np.int64)
    shown[:, : vals.shape[1]] = vals
    q = ids[:, 2 * L] if task.cfg.layout == "paired" else None
    ks = keys if q is None else np.concatenate([keys, q[:, None]], axis=1)
    if (ks < 0).any() or (ks >= V).any() or (vals < 0).any() or (vals >= V).any():
        raise TaskConfigError("not a bijection sequence: a key position holds no key token or "
                              "a value position no value token")
    return keys, shown, q


def bound_values(keys: np.ndarray, shown: np.ndarray, q: np.ndarray | None, V: int,
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Each key position's value as a noiseless sequence states it -- shown there, or else by
    an earlier occurrence of the key (-1 if none) -- and the paired query's (-1 where its key
    shows none). ``keys``, ``shown`` [n, L] (-1 = not shown), ``q`` [n] or None. A key shown
    with two values, or a value for two keys, is no bijection: :class:`TaskConfigError`.

    Example:
        >>> bound_values(np.array([[0, 1, 0]]), np.array([[2, 0, -1]]), None, 3)[0].tolist()
        [[2, 0, 2]]
    """
    n, L = keys.shape
    rows = np.arange(n)
    value_of = np.full((n, V), -1, dtype=np.int64)  # key -> value
    key_of = np.full((n, V), -1, dtype=np.int64)  # value -> key
    vals = np.empty_like(keys)
    for t in range(L):
        k, s = keys[:, t], shown[:, t]
        known = value_of[rows, k]
        owner = np.where(s >= 0, key_of[rows, np.maximum(s, 0)], -1)
        if ((known >= 0) & (s >= 0) & (known != s)).any() or ((owner >= 0) & (owner != k)).any():
            raise TaskConfigError("not a bijection sequence: a key is shown with two values or "
                                  "a value for two keys")
        v = np.where(known >= 0, known, s)
        vals[:, t] = v
        hit = v >= 0
        value_of[rows[hit], k[hit]] = v[hit]
        key_of[rows[hit], v[hit]] = k[hit]
    return vals, (None if q is None else value_of[rows, q])


def posterior(task: BijectionTask, ids: np.ndarray) -> np.ndarray:
    """The exact posterior [n, Q, V] float64 of bijection ``ids`` [n, T]: the sampler's closed
    form :func:`~windtunnel.bijection.elimination_sparse` (noiseless) or
    :func:`~windtunnel.bijection.noisy_posterior`.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> posterior(make_task("bijection", V=3), np.array([[0, 4, 2]]))[0].round(3).tolist()
        [[0.333, 0.333, 0.333], [0.5, 0.0, 0.5]]
    """
    keys, shown, q = decode(task, ids)
    if task.noise > 0:  # sepvocab, keys without replacement: the shown values alone
        return noisy_posterior(np.where(shown < 0, 0, shown), task.V, task.noise)
    vals, qv = bound_values(keys, shown, q, task.V)
    return elimination_sparse(keys, vals, task.V, q, qv).to_dense().numpy()


def problem(task: BijectionTask, kind: str) -> str | None:
    if task.cfg.layout == "sepvocab" and task.L < 2:
        return "the sepvocab layout with L = 1 key shows no pair to edit; use L >= 2"
    paired_full = task.cfg.layout == "paired" and not task.cfg.replacement and task.L == task.V
    if paired_full:
        return (f"the paired layout with L = V = {task.V} keys without replacement shows every "
                f"key and value, leaving none to {'rebind' if kind == 'evidence' else 'rename'}"
                "; use L < V")
    return None


def edit(task: BijectionTask, kind: str, ids: np.ndarray, rng: np.random.Generator) -> Edit:
    ids = np.asarray(ids, dtype=np.int64)
    keys, shown, q = decode(task, ids)
    n, V = ids.shape[0], task.V
    rows = np.arange(n)
    n_shown = task.L - 1 if q is None else task.L  # shown pairs: the first n_shown keys
    sk = keys[:, :n_shown]
    if kind == "evidence":  # a pair whose key shows its value only there -> an unshown value
        once = (sk[:, :, None] == sk[:, None, :]).sum(-1) == 1
        seen_v = np.zeros((n, V), dtype=bool)
        seen_v[rows[:, None], shown[:, :n_shown]] = True
        j, ok_j = pick(rng, once)
        u, ok_u = pick(rng, ~seen_v)
        corrupt = ids.copy()
        corrupt[rows, 2 * j + 1] = V + u
        return Edit(corrupt, 2 * j + 1, ok_j & ok_u)
    # bayes_null: a shown key occurring nowhere else (its read included) -> an unused key
    every = keys if q is None else np.concatenate([keys, q[:, None]], axis=1)
    count = np.zeros((n, V), dtype=np.int64)
    np.add.at(count, (np.repeat(rows, every.shape[1]), every.ravel()), 1)
    j, ok_j = pick(rng, np.take_along_axis(count, sk, axis=1) == 1)
    k_new, ok_k = pick(rng, count == 0)
    corrupt = ids.copy()
    corrupt[rows, 2 * j] = k_new
    return Edit(corrupt, 2 * j, ok_j & ok_k)


EDITOR = Editor(problem, edit, posterior,
                rarity="bijection edits need a shown pair whose key occurs once and an unshown "
                       "value (evidence) or an unused key (bayes_null); keys drawn with "
                       "replacement from a small V may leave none")

"""Patch pairs of the associative-recall tunnel (:mod:`windtunnel.patch_pairs`): the edits, and
the exact posterior of any sequence of its layout by :mod:`windtunnel.assoc_recall`'s own
functions (:func:`~windtunnel.assoc_recall.stored_value_posterior`,
:func:`~windtunnel.assoc_recall.binding_posterior`), which its sampler calls.

``recall`` variant (reads at the M query keys, all after the stored pairs):

* **evidence** -- the value bound to one queried key (a query drawn uniformly) replaced by a
  value stored nowhere (values stay distinct): that query's delta moves to the new value (an
  infinite exact KL: the two deltas have disjoint supports), the other queries do not change;
* **bayes_null** -- the value of a stored pair whose key is not queried replaced by a value
  stored nowhere: every read is a delta on a queried key's value, none of which changed.

``binding`` variant (reads at every key; a key's later occurrences show the same value):

* **evidence** -- the value shown with the *final* key's one earlier occurrence replaced by
  another value: the final read's delta moves (only sequences whose final key was shown exactly
  once before qualify -- about 4 in 10 at the defaults -- since changing a value shown twice
  would break the map or change two tokens); earlier reads do not change;
* **bayes_null** -- the value shown with a key that occurs nowhere else in the sequence (never
  read again) replaced by another: an unseen key's read is uniform whatever the map's other
  values, a seen key's is a delta on its own value.
"""

from __future__ import annotations

import numpy as np

from .assoc_recall import KEY_OFFSET, AssocRecallTask, binding_posterior, stored_value_posterior
from .names import TaskConfigError
from .patch_kinds import Edit, Editor, pick


def decode(task: AssocRecallTask, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, vals, queries)`` of ``ids`` [n, T]: recall -- stored keys and values [n, N]
    and the queried keys [n, M]; binding -- keys [n, N], the value shown after each [n, N]
    (-1 after the last) and the read keys (= keys). Indices into the key / value vocabularies;
    tokens outside them raise :class:`TaskConfigError`."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2 or ids.shape[1] != task.seq_len:
        raise TaskConfigError(f"assoc_recall sequences are [n, {task.seq_len}] token ids, got "
                              f"shape {list(ids.shape)}")
    N, vb = task.N, task.value_base
    if task.variant == "recall":
        keys = ids[:, 1 : 4 * N : 4] - KEY_OFFSET
        vals = ids[:, 3 : 4 * N : 4] - vb
        queries = ids[:, task.query_positions()] - KEY_OFFSET
    else:
        keys = ids[:, 0::2]
        vals = np.full(keys.shape, -1, dtype=np.int64)
        vals[:, : N - 1] = ids[:, 1::2] - vb
        queries = keys
    shown = vals[:, : N - 1] if task.variant == "binding" else vals
    if ((keys < 0) | (keys >= task.n_keys)).any() or ((queries < 0)
                                                     | (queries >= task.n_keys)).any() \
            or ((shown < 0) | (shown >= task.n_values)).any():
        raise TaskConfigError("not an assoc_recall sequence: a key position holds no key token "
                              "or a value position no value token")
    return keys, vals, queries


def posterior(task: AssocRecallTask, ids: np.ndarray) -> np.ndarray:
    """The exact posterior [n, Q, n_values] float64 of assoc_recall ``ids`` [n, T]. A binding
    stream that shows one key with two values is no map: :class:`TaskConfigError`.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> task = make_task("assoc_recall", variant="binding", N=3, n_keys=2, n_values=2)
        >>> posterior(task, np.array([[0, 3, 1, 2, 0]]))[0].tolist()  # key 0 -> value 1
        [[0.5, 0.5], [0.5, 0.5], [0.0, 1.0]]
    """
    keys, vals, queries = decode(task, ids)
    if task.variant == "recall":
        return stored_value_posterior(keys, vals, queries, task.n_values)
    sk, sv = keys[:, :-1], vals[:, :-1]
    if ((sk[:, :, None] == sk[:, None, :]) & (sv[:, :, None] != sv[:, None, :])).any():
        raise TaskConfigError("not a binding sequence: a key is shown with two values")
    return binding_posterior(keys, vals, task.n_keys, task.n_values)


def problem(task: AssocRecallTask, kind: str) -> str | None:
    if task.variant == "binding":
        return ("the binding variant with N = 1 key shows no pair to edit; use N >= 2"
                if task.N < 2 else None)
    if task.n_values <= task.N:
        return (f"all n_values = {task.n_values} values are stored (N = {task.N}), leaving none "
                "to rebind a key to; use n_values > N")
    if kind == "bayes_null" and task.M >= task.N:
        return (f"every stored pair is queried (M = N = {task.N}); a Bayes-null edit needs an "
                "unqueried pair: use M < N")
    return None


def edit(task: AssocRecallTask, kind: str, ids: np.ndarray, rng: np.random.Generator) -> Edit:
    ids = np.asarray(ids, dtype=np.int64)
    keys, vals, queries = decode(task, ids)
    n, N, V, vb = ids.shape[0], task.N, task.n_values, task.value_base
    rows = np.arange(n)
    corrupt = ids.copy()
    if task.variant == "recall":
        queried = (keys[:, :, None] == queries[:, None, :]).any(-1)  # [n, N]
        if kind == "evidence":  # the pair of one query, drawn uniformly
            m = rng.integers(0, task.M, size=n)
            i = (keys == queries[rows, m][:, None]).argmax(1)
            ok_i = np.ones(n, dtype=bool)
        else:
            i, ok_i = pick(rng, ~queried)
        stored = np.zeros((n, V), dtype=bool)
        stored[rows[:, None], vals] = True
        u, ok_u = pick(rng, ~stored)
        pos = 4 * i + 3
        corrupt[rows, pos] = vb + u
        return Edit(corrupt, pos, ok_i & ok_u)
    sk = keys[:, : N - 1]
    if kind == "evidence":  # the final key's one earlier occurrence
        hit = sk == keys[:, N - 1 :]
        j, ok = hit.argmax(1), hit.sum(1) == 1
    else:  # a shown key occurring nowhere else
        j, ok = pick(rng, (keys[:, :, None] == sk[:, None, :]).sum(1) == 1)
    new = (vals[rows, j] + rng.integers(1, V, size=n)) % V
    pos = 2 * j + 1
    corrupt[rows, pos] = vb + new
    return Edit(corrupt, pos, ok)


EDITOR = Editor(problem, edit, posterior,
                rarity="binding edits need the final key shown exactly once before (evidence) "
                       "or a shown key that never recurs (bayes_null); raise n_keys or lower N")

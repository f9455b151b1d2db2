"""Patch pairs of the HMM tunnel (:mod:`windtunnel.patch_pairs`): the edits, and the exact
posterior of any sequence of its layout by :meth:`windtunnel.hmm.HMMTask.target_posterior`, the
sampler's own filter (the exact one, or the windowed one under ``target_window``).

* **evidence** -- one emission o_j replaced by another symbol (uniform among the other O − 1),
  at the read position of step j: reads at or after j change, earlier reads do not.
* **bayes_null** -- no edit of an *observation* is exactly null here: the filter's update at
  step t is α_t ∝ E[:, o_t] ⊙ (α_{t−1} T), the predictive α_{t−1} T has full support (every
  transition entry is at least 0.05), so swapping o_t for o' leaves p(s_t | ·) unchanged only if
  the emission columns E[:, o_t] and E[:, o'] are proportional -- on the 0.01 grid that never
  happened in 100,000 sampled HMMs (2026-11-28). Nor is an edit of the transition header (T
  enters every step from t = 1). What *is* exactly null is the emission probability of a
  symbol the sequence never shows: the filter reads only the columns of observed symbols. The
  null edit moves d cents (1 ≤ d, keeping every entry ≥ 0.05) between the emission entries of
  two never-observed symbols in one state's row: a valid HMM (rows still sum to 1), two header
  tokens changed, before every read. It needs two symbols the sequence never shows, so null
  pairs are drawn from the sequences that have them -- about 0.6% of sampled sequences at
  K = 20 (64% at K = 5, 12% at K = 10, none in 20,000 at K = 50): their clean sequences are the
  sampler's conditioned on that, and long K is refused when the pool runs dry.
"""

from __future__ import annotations

import numpy as np

from .hmm import EMIT, FLOOR_CENTS, OBS, OBS_BASE, SEP, TRANS, HMMTask
from .names import TaskConfigError
from .patch_kinds import Edit, Editor, pick


def _emission_cents(task: HMMTask, ids: np.ndarray) -> tuple[int, np.ndarray]:
    """Where the emission block starts in a sequence, and its entries [n, S, O] in cents."""
    start = 2 + task.S * task.S
    block = ids[:, start : start + task.S * task.O]
    return start, block.reshape(-1, task.S, task.O) + FLOOR_CENTS


def posterior(task: HMMTask, ids: np.ndarray) -> np.ndarray:
    """The exact posterior [n, K, S] float64 of HMM ``ids`` [n, T] (the task's layout; its
    header a valid HMM, else :class:`TaskConfigError`), by the task's own filter.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> task = make_task("hmm", K=3)
        >>> b = task.sample(2, seed=0)
        >>> bool(np.array_equal(posterior(task, b.input_ids.numpy()), b.posterior.numpy()))
        True
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2 or ids.shape[1] != task.seq_len:
        raise TaskConfigError(f"hmm sequences are [n, {task.seq_len}] token ids, got shape "
                              f"{list(ids.shape)}")
    S, O, hl = task.S, task.O, task.header_len  # noqa: E741
    marks = ids[:, [0, 1 + S * S, hl - 1]] == [TRANS, EMIT, SEP]
    t_rows = ids[:, 1 : 1 + S * S].reshape(-1, S, S) + FLOOR_CENTS
    e_rows = _emission_cents(task, ids)[1]
    cents = np.concatenate([t_rows.reshape(len(ids), -1), e_rows.reshape(len(ids), -1)], 1)
    symbols = ids[:, hl + 1 :: 2]
    if (not marks.all() or (cents < FLOOR_CENTS).any() or (cents > 100).any()
            or (t_rows.sum(-1) != 100).any() or (e_rows.sum(-1) != 100).any()
            or (ids[:, hl::2] != OBS).any() or (symbols < OBS_BASE).any()
            or (symbols >= OBS_BASE + O).any()):
        raise TaskConfigError("not an HMM sequence of this task: its header is no valid HMM "
                              "(rows of 0.01 cents summing to 1) or an observation slot holds "
                              "no symbol")
    T, E, obs = task.decode(ids)
    return task.target_posterior(T, E, obs)


def problem(task: HMMTask, kind: str) -> str | None:
    if kind == "bayes_null" and task.O < 2:
        return "an exactly-null HMM edit needs two emission symbols"
    return None


def edit(task: HMMTask, kind: str, ids: np.ndarray, rng: np.random.Generator) -> Edit:
    ids = np.asarray(ids, dtype=np.int64)
    n, S, O, K, hl = ids.shape[0], task.S, task.O, task.K, task.header_len  # noqa: E741
    rows = np.arange(n)
    obs = ids[:, hl + 1 :: 2] - OBS_BASE
    corrupt = ids.copy()
    if kind == "evidence":
        j = rng.integers(0, K, size=n)
        new = (obs[rows, j] + rng.integers(1, O, size=n)) % O
        pos = np.asarray(hl + 1 + 2 * j, dtype=np.int64)
        corrupt[rows, pos] = OBS_BASE + new
        return Edit(corrupt, pos, np.ones(n, dtype=bool))
    # bayes_null: move cents between two never-observed symbols a -> b in one state's row s
    unseen = np.ones((n, O), dtype=bool)
    unseen[rows[:, None], obs] = False
    start, cents = _emission_cents(task, ids)
    a_ok = unseen[:, None, :] & (cents > FLOOR_CENTS)  # [n, S, O]
    triples = (a_ok[:, :, :, None] & unseen[:, None, None, :]
               & ~np.eye(O, dtype=bool)[None, None])  # [n, S, O (a), O (b)]
    flat, ok = pick(rng, triples.reshape(n, -1))
    s, a, b = np.unravel_index(flat, (S, O, O))
    room = cents[rows, s, a] - FLOOR_CENTS  # d in 1..room
    d = 1 + np.floor(rng.random(n) * np.maximum(room, 1)).astype(np.int64)
    corrupt[rows, start + s * O + a] -= np.where(ok, d, 0)
    corrupt[rows, start + s * O + b] += np.where(ok, d, 0)
    return Edit(corrupt, np.full(n, -1, dtype=np.int64), ok)


EDITOR = Editor(problem, edit, posterior,
                rarity="an exactly-null HMM edit needs two emission symbols the sequence never "
                       "shows (about 0.6% of sequences at K = 20, none in practice beyond "
                       "K = 40); lower K")

"""The kinds of clean/corrupt patch pairs, the tasks that generate them, and the one-line check
of a request: what a command line reads before any task, model or torch is loaded
(:mod:`windtunnel.patch_pairs` builds the pairs; this module imports numpy only).

Kinds (what the corrupt sequence is):

* ``evidence`` -- one observation of the clean sequence changed; the exact posterior says how
  much it matters at every later read position;
* ``bayes_null`` -- tokens changed where the exact posterior changes nothing at any read
  position (checked to :data:`NULL_ATOL`), the control a patch must score ~0 bits on;
* ``unrelated`` -- an independent sequence of the same task;
* ``shuffled`` (SULA only) -- the same examples with labels drawn independently of the latent
  label (:mod:`windtunnel.sula`'s ``shuffled`` condition: a flat posterior).

Example:
    >>> pairs_problem("hmm", "evidence", 8) is None
    True
    >>> pairs_problem("long_recall", "evidence", 8).split(";")[0]
    "task 'long_recall' has no patch-pair generator"
    >>> pairs_problem("hmm", "shuffled", 8)
    "kind 'shuffled' is not offered for hmm; choose evidence, bayes_null or unrelated"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .names import TaskConfigError

#: pair kinds of the token tasks, and of SULA (which adds ``shuffled``)
KINDS: tuple[str, ...] = ("evidence", "bayes_null", "unrelated")
TEXT_KINDS: tuple[str, ...] = (*KINDS, "shuffled")
#: every kind, in the order that numbers their edit streams
ALL_KINDS = TEXT_KINDS
#: the tasks with a pair generator (:data:`windtunnel.patch_pairs.EDITORS`, and SULA's
#: :func:`windtunnel.patch_sula.sula_patch_pairs`)
PAIR_TASKS: tuple[str, ...] = ("assoc_recall", "bijection", "hmm", "sula")
#: SULA pairs' example counts by default (k >= 2: every kind, Bayes-null included;
#: :func:`windtunnel.patch_sula.sula_patch_pairs`)
PAIR_KS: tuple[int, ...] = (2, 4, 8)
#: the largest |p*_clean − p*_corrupt| a Bayes-null pair may show at any read position
NULL_ATOL = 1e-12


def pairs_problem(task: str, kind: str, n: int, seed: int = 0) -> str | None:
    """The first problem with a request for ``n`` pairs of ``kind`` on task ``task`` (a name)
    drawn with ``seed``, as one line, or None. Torch-free: a command line checks it before
    any work."""
    if task not in PAIR_TASKS:
        return (f"task {task!r} has no patch-pair generator; pairs exist for "
                f"{', '.join(PAIR_TASKS)}")
    kinds = TEXT_KINDS if task == "sula" else KINDS
    if kind not in kinds:
        return (f"kind {kind!r} is not offered for {task}; choose "
                f"{', '.join(kinds[:-1])} or {kinds[-1]}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        return f"the number of pairs must be a positive integer, got {n!r}"
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) \
            or not 0 <= seed < 2**128:
        return f"the seed must be an integer in [0, 2**128), got {seed!r}"
    return None


def check_pairs(task: str, kind: str, n: int, seed: int = 0) -> None:
    """:func:`pairs_problem` as a :class:`TaskConfigError` (a usage error, exit status 2)."""
    problem = pairs_problem(task, kind, n, seed)
    if problem is not None:
        raise TaskConfigError(problem)


def edit_stream_index(chunk: int, kind: str) -> int:
    """The index of the :data:`windtunnel.seeds.Purpose.PATCH_EDITS` stream that edits pool
    chunk ``chunk`` into pairs of ``kind``."""
    return chunk * len(ALL_KINDS) + ALL_KINDS.index(kind)


@dataclass(frozen=True)
class Edit:
    """Corrupt sequences made from a chunk of clean ones: ``corrupt`` [n, T] int64,
    ``edit_pos`` [n] int64 (the one changed position; -1 where several change), ``ok`` [n]
    bool (False where a sequence admits no such edit; its row is then not used)."""

    corrupt: np.ndarray
    edit_pos: np.ndarray
    ok: np.ndarray


@dataclass(frozen=True)
class Editor:
    """One task family's pair generator: ``problem(task, kind)`` says in one line why the
    task's settings admit no ``kind`` edit at all (None if they may); ``edit(task, kind, ids,
    rng)`` edits clean ids [n, T] into an :class:`Edit` (``evidence`` and ``bayes_null``);
    ``posterior(task, ids)`` is the exact posterior [n, Q, H] float64 of any ids of the task's
    layout, by the functions its sampler uses; ``rarity`` says, for the error raised when a
    pool holds too few editable sequences, which sequences admit an edit."""

    problem: Callable[[Any, str], str | None]
    edit: Callable[[Any, str, np.ndarray, np.random.Generator], Edit]
    posterior: Callable[[Any, np.ndarray], np.ndarray]
    rarity: str = ""


def pick(rng: np.random.Generator, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One index per row of ``mask`` [n, m] bool, uniformly among its True entries: ``(index
    [n], ok [n])``; where a row has none, ok is False (and the index meaningless). Draws
    ``rng.random((n, m))`` whatever the mask, so later draws do not depend on it.

    Example:
        >>> idx, ok = pick(np.random.default_rng(0), np.array([[False, True], [False, False]]))
        >>> int(idx[0]), ok.tolist()
        (1, [True, False])
    """
    u = rng.random(mask.shape)
    return np.where(mask, u, -1.0).argmax(axis=1), np.asarray(mask.any(axis=1))

"""The pairs a patching run reads, as token lists with what each is scored against.

* **A wind tunnel** (:func:`tunnel_pairs`): its own task's pairs
  (:func:`windtunnel.patch_pairs.patch_pairs`), aligned so that positions mean the same in every
  pair. Evidence pairs are kept whose edit reaches read ``edit_at`` first (its edit lies after
  read ``edit_at − 1`` and at or before read ``edit_at``: the HMM's edited emission is read
  ``edit_at`` itself, bijection's edited value the token before key read ``edit_at``), so the
  edit sits at one position E in every pair; Bayes-null pairs are kept whose first changed
  token lies at or before read ``edit_at``. Reads ``edit_at`` .. ``edit_at + n_reads − 1`` are
  scored and every sequence is cut after the last (a causal model's later tokens cannot change
  them, and the exact posterior at a read depends only on the tokens before it). The grid's
  positions (``positions``): ``reads`` the edit and each scored read after it, ``all`` every
  position from the edit on, ``last`` the last scored read.
* **A text model** (:func:`sula_pairs`): SULA prompts (clean = the shown examples, corrupt = one
  label flipped; Bayes null = two examples' labels swapped; :mod:`windtunnel.patch_sula`), the
  exact posterior over the two label words at the last token; pairs whose prompts tokenise to
  different lengths are dropped and counted. Positions: the last ``tail`` tokens.
* **Free pairs** (:func:`file_pairs`): a ``--pairs`` file, logit difference only.

The unrelated-source control (:func:`unrelated_sources`) gives each pair the clean sequence of
another pair of the same token length (a seeded derangement): patching from it asks whether the
cell moves the model toward the pair's own posterior because of the evidence or because any
foreign activation does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ... import interp
from ...windtunnel import TaskConfigError
from ...windtunnel.patch_pairs import PatchPairs, patch_pairs
from ...windtunnel.patch_sula import PAIR_KS, sula_patch_pairs
from ...windtunnel.sula_config import SulaError
from ..kit.errors import ExperimentError
from ..prompts.sula import pick_labels
from .pairs_file import TextPair, read_pairs_file, single_token, token_problem

#: how a pool grows while too few of its pairs align, and its cap
POOL_FACTOR, MAX_POOL_PAIRS = 8, 20_000


@dataclass(frozen=True, eq=False)
class PairSet:
    """N pairs of one kind. ``clean``, ``corrupt``: token lists (pair i of equal length);
    ``reads``: the scored read positions (indices over real tokens; None: the last token);
    ``p_clean``, ``p_corrupt`` [N, R, H] float64 exact posteriors over the hypothesis tokens
    ``hyp`` (None for free pairs); ``good``, ``bad`` [N, R] int64 token ids whose logit
    difference is read (the hypothesis the clean posterior favours over the corrupt one and
    vice versa; a free pair's answer and foil); ``strata`` [N] (SULA's k; zeros elsewhere)."""

    kind: str
    clean: list[list[int]]
    corrupt: list[list[int]]
    reads: tuple[int, ...] | None
    p_clean: torch.Tensor | None
    p_corrupt: torch.Tensor | None
    hyp: slice | list[int] | None
    good: torch.Tensor
    bad: torch.Tensor
    strata: np.ndarray

    def __len__(self) -> int:
        return len(self.clean)

    def subset(self, idx: np.ndarray) -> PairSet:
        """The pairs ``idx``, in that order."""
        i = torch.as_tensor(np.asarray(idx, dtype=np.int64))

        def rows(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t[i]

        return PairSet(self.kind, [self.clean[int(j)] for j in i],
                       [self.corrupt[int(j)] for j in i], self.reads, rows(self.p_clean),
                       rows(self.p_corrupt), self.hyp, self.good[i], self.bad[i],
                       self.strata[np.asarray(idx, dtype=np.int64)])

    @property
    def length(self) -> int:
        """The shortest prompt's token count."""
        return min(len(t) for t in self.clean)


@dataclass(frozen=True, eq=False)
class Pairs:
    """What a run patches: ``evidence`` and (where an exact null exists) ``null`` pairs, the
    grid's ``positions``, the evidence edit's position ``edit_position`` (a wind tunnel's; None
    elsewhere), ``source`` ("wind tunnel", "sula" or "file"), ``dropped`` (pairs left out for
    unequal token lengths, by kind) and ``labels`` (SULA's label words)."""

    evidence: PairSet
    null: PairSet | None
    positions: list[int]
    source: str
    edit_position: int | None = None
    dropped: dict[str, int] | None = None
    labels: tuple[str, str] | None = None


def favoured(p_clean: torch.Tensor, p_corrupt: torch.Tensor, hyp: slice | list[int],
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """([N, R], [N, R]) token ids: the hypothesis with the largest p*_clean − p*_corrupt, and
    the one with the largest p*_corrupt − p*_clean (both the first hypothesis where the two
    posteriors agree, so their logit difference is 0 there).

    Example:
        >>> pc, pk = torch.tensor([[[0.9, 0.1]]]), torch.tensor([[[0.2, 0.8]]])
        >>> [t.tolist() for t in favoured(pc, pk, [7, 9])]
        [[[7]], [[9]]]
    """
    ids = torch.arange(hyp.start, hyp.stop) if isinstance(hyp, slice) else torch.tensor(hyp)
    d = p_clean - p_corrupt
    return ids[d.argmax(-1)], ids[(-d).argmax(-1)]


# ---------------------------------------------------------------- wind tunnels
def _aligned(task: object, n: int, kind: str, seed: int, keep: Callable[[PatchPairs], np.ndarray],
             hint: str) -> PatchPairs:
    """The first ``n`` pairs of ``kind`` that ``keep`` accepts, from pools of growing size
    (the first pairs of a pool do not depend on its size: :func:`patch_pairs`)."""
    got, size = 0, n
    while True:
        size = min(size, MAX_POOL_PAIRS)
        try:
            pool = patch_pairs(task, size, kind, seed)  # type: ignore[arg-type]
        except TaskConfigError as e:
            raise ExperimentError(str(e)) from None
        idx = np.flatnonzero(keep(pool))[:n]
        got = idx.size
        if got == n:
            return pool.subset(idx)
        if size >= MAX_POOL_PAIRS:
            raise ExperimentError(f"only {got} of {size:,} {kind} pairs {hint}; lower "
                                  "--n-pairs or choose another --edit-at")
        size *= POOL_FACTOR


def tunnel_pairs(task: object, n: int, edit_at: int, n_reads: int, positions: str,
                 seed: int) -> Pairs:
    """Aligned evidence and Bayes-null pairs of wind tunnel ``task`` (module doc)."""
    q = [int(x) for x in task.sample(1, seed=0).query_pos]  # type: ignore[attr-defined]
    if edit_at + n_reads > len(q):
        raise ExperimentError(f"--edit-at {edit_at} with --n-reads {n_reads} needs "
                              f"{edit_at + n_reads} reads; {task.name} has {len(q)}")  # type: ignore[attr-defined]
    lo = q[edit_at - 1] if edit_at > 0 else -1
    at = q[edit_at]
    scored = q[edit_at:edit_at + n_reads]
    cut = scored[-1] + 1
    ev = _aligned(task, n, "evidence", seed,
                  lambda pp: (_first_change(pp) > lo) & (_first_change(pp) <= at),
                  f"have their edit just before read {edit_at} (position {at})")
    edit = int(_first_change(ev)[0])
    if not (_first_change(ev) == edit).all():
        raise ExperimentError(f"the evidence edits before read {edit_at} lie at several "
                              "positions; positions would not align")
    null = _aligned(task, n, "bayes_null", seed, lambda pp: _first_change(pp) <= at,
                    f"change a token at or before read {edit_at} (position {at})")
    cols = list(range(edit_at, edit_at + n_reads))
    grid = {"reads": [edit] + [r for r in scored if r > edit], "all": list(range(edit, cut)),
            "last": [scored[-1]]}[positions]
    return Pairs(_tunnel_set("evidence", ev, cols, cut), _tunnel_set("bayes_null", null, cols, cut),
                 grid, "wind tunnel", edit_position=edit)


def _first_change(pp: PatchPairs) -> np.ndarray:
    ch = pp.changed.numpy()
    return np.where(ch.any(1), ch.argmax(1), ch.shape[1])


def _tunnel_set(kind: str, pp: PatchPairs, cols: list[int], cut: int) -> PairSet:
    pc, pk = pp.posterior_clean[:, cols], pp.posterior_corrupt[:, cols]
    good, bad = favoured(pc, pk, pp.hyp_slice)
    reads = tuple(int(pp.query_pos[c]) for c in cols)
    return PairSet(kind, pp.clean_ids[:, :cut].tolist(), pp.corrupt_ids[:, :cut].tolist(), reads,
                   pc.contiguous(), pk.contiguous(), pp.hyp_slice, good, bad,
                   np.zeros(len(pp), dtype=np.int64))


# ---------------------------------------------------------------- text models
def _equal_lengths(m: interp.InterpModel, clean: list[str], corrupt: list[str],
                   ) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
    a, _ = m.encode(clean)
    b, _ = m.encode(corrupt)
    keep = np.array([len(x) == len(y) for x, y in zip(a, b, strict=True)])
    return a, b, keep


def _sula_set(m: interp.InterpModel, kind: str, n: int, seed: int, labels: tuple[str, str],
              hyp: list[int]) -> tuple[PairSet, int]:
    try:
        tp = sula_patch_pairs(n, kind, seed=seed, ks=PAIR_KS, labels=labels)
    except SulaError as e:
        raise ExperimentError(str(e)) from None
    a, b, keep = _equal_lengths(m, tp.clean_texts, tp.corrupt_texts)
    idx = np.flatnonzero(keep)
    if idx.size < 2:
        raise ExperimentError(f"only {idx.size} of {len(tp)} SULA {kind} pairs tokenise to "
                              "equal lengths for this tokenizer; choose other --labels")
    pc, pk = tp.posterior_clean[idx], tp.posterior_corrupt[idx]
    good, bad = favoured(pc, pk, hyp)
    return PairSet(kind, [a[i] for i in idx], [b[i] for i in idx], None, pc, pk, hyp, good, bad,
                   tp.k.numpy()[idx]), int(len(tp) - idx.size)


def sula_pairs(m: interp.InterpModel, n: int, tail: int, seed: int,
               labels: tuple[str, str] | None) -> Pairs:
    """SULA evidence and Bayes-null pairs for text model ``m`` (module doc)."""
    try:
        lab, _, ids = pick_labels(m.tokenizer, labels)
    except SulaError as e:
        raise ExperimentError(str(e)) from None
    hyp = [ids[lab[0]], ids[lab[1]]]
    ev, d_ev = _sula_set(m, "evidence", n, seed, lab, hyp)
    null, d_null = _sula_set(m, "bayes_null", n, seed, lab, hyp)
    short = min(ev.length, null.length)
    if tail > short:
        raise ExperimentError(f"--tail {tail}: the shortest prompt has {short} tokens")
    return Pairs(ev, null, list(range(-tail, 0)), "sula",
                 dropped={"evidence": d_ev, "bayes_null": d_null}, labels=lab)


def file_pairs(m: interp.InterpModel, path: object, tail: int) -> Pairs:
    """Free pairs from a ``--pairs`` file for text model ``m`` (checked again with its own
    tokenizer: equal lengths, one-token answers)."""
    try:
        rows: list[TextPair] = read_pairs_file(path)  # type: ignore[arg-type]
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    problem = token_problem(m.tokenizer, rows)
    if problem is not None:
        raise ExperimentError(f"--pairs {path}: {problem}")
    a, _ = m.encode([r.clean for r in rows])
    b, _ = m.encode([r.corrupt for r in rows])
    good = torch.tensor([[single_token(m.tokenizer, r.answer)] for r in rows])
    bad = torch.tensor([[single_token(m.tokenizer, r.foil)] for r in rows])
    ev = PairSet("evidence", a, b, None, None, None, None, good, bad,
                 np.zeros(len(rows), dtype=np.int64))
    if tail > ev.length:
        raise ExperimentError(f"--tail {tail}: the shortest prompt has {ev.length} tokens")
    return Pairs(ev, None, list(range(-tail, 0)), "file")


# ---------------------------------------------------------------- the unrelated source
def unrelated_sources(ps: PairSet, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, partner) index arrays: each pair that has one gets the clean sequence of another
    pair of the same token length (a seeded derangement within each length; a length held by
    one pair only leaves that pair out).

    Example:
        >>> ps = PairSet("evidence", [[1, 2], [3, 4], [5]], [[1, 9], [3, 9], [6]], None, None,
        ...              None, None, torch.zeros(3, 1), torch.zeros(3, 1), np.zeros(3))
        >>> [a.tolist() for a in unrelated_sources(ps, 0)]
        [[0, 1], [1, 0]]
    """
    rng = np.random.default_rng([seed, 37])
    lengths = np.array([len(t) for t in ps.clean])
    rows, partners = [], []
    for n in np.unique(lengths):
        idx = np.flatnonzero(lengths == n)
        if idx.size < 2:
            continue
        order = rng.permutation(idx)
        rows.append(order)
        partners.append(np.roll(order, 1))  # a cycle: nobody is its own partner
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    r, p = np.concatenate(rows), np.concatenate(partners)
    order = np.argsort(r)
    return r[order], p[order]

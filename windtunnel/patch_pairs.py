"""Clean/corrupt sequence pairs of a wind tunnel with the exact posterior of both, for activation
patching scored in bits against the truth (issue 37).

:func:`patch_pairs` draws clean sequences from the task's sampler and makes each a corrupt twin
of the same length (positions are patched index for index) by one of the kinds of
:mod:`windtunnel.patch_kinds`: ``evidence`` (one observation changed), ``bayes_null`` (tokens
changed where the exact posterior changes nothing, checked at every read position) or
``unrelated`` (an independent sequence). Both posteriors come from the task's own exact
machinery (the functions its sampler calls), so they are the training targets by construction.
What each task edits, and why its null is exactly null, is in its module:
:mod:`~windtunnel.patch_bijection`, :mod:`~windtunnel.patch_hmm`,
:mod:`~windtunnel.patch_recall`; SULA's text pairs are :mod:`~windtunnel.patch_sula`.

**Read positions** are the task's own (``query_pos``: every key of bijection and binding, every
observation of the HMM, each query of recall), shared by all pairs; a read at or before a pair's
first changed token sees the same tokens in both sequences and has the same posterior
(:attr:`PatchPairs.reads_after_edit` marks the others).

**Seeds.** Clean sequences come from pool chunks, chunk c of ``max(n, 64) · 2^min(c, 6)``
sequences (:func:`chunk_size`: larger chunks where few sequences qualify) on stream ``(seed,
PATCH_PAIRS, c)``; the edits of chunk c for a kind on ``(seed, PATCH_EDITS,
edit_stream_index(c, kind))`` (an unrelated pair's sequences too). A kind keeps the first n
sequences of the pool it can edit, so where every sequence qualifies (bijection sepvocab, HMM
evidence, recall) all kinds share the same clean sequences, and the first n pairs do not depend
on n (n <= 64).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..infotheory import entropy_bits_from_probs, kl_bits, tvd
from .memory import format_bytes, memory_limit
from .names import TaskConfigError
from .patch_bijection import EDITOR as BIJECTION
from .patch_hmm import EDITOR as HMM
from .patch_kinds import KINDS, NULL_ATOL, Editor, check_pairs, edit_stream_index
from .patch_recall import EDITOR as RECALL
from .seeds import Purpose, stream
from .task import TokenTask

#: the token tasks' pair generators, by task name
EDITORS: dict[str, Editor] = {"assoc_recall": RECALL, "bijection": BIJECTION, "hmm": HMM}
#: the smallest pool chunk, and the most sequences drawn looking for editable ones
POOL_CHUNK = 64
MAX_POOL = 50_000


def chunk_size(n: int, c: int) -> int:
    """Sequences in pool chunk ``c`` for ``n`` pairs: ``max(n, 64)``, doubling per chunk up
    to 64 times that."""
    return max(n, POOL_CHUNK) << min(c, 6)


def attach_measures(pairs: object, clean: torch.Tensor, corrupt: torch.Tensor) -> None:
    """Set ``entropy_clean_bits``, ``entropy_corrupt_bits``, ``kl_bits`` and ``tvd`` ([N, Q]
    float64 tensors) on a frozen pair set from its posteriors ``clean``, ``corrupt`` [N, Q, H]."""
    a, b = clean.detach().cpu().numpy(), corrupt.detach().cpu().numpy()
    for name, value in (("entropy_clean_bits", entropy_bits_from_probs(a)),
                        ("entropy_corrupt_bits", entropy_bits_from_probs(b)),
                        ("kl_bits", pair_kl_bits(a, b)), ("tvd", np.asarray(tvd(a, b)))):
        object.__setattr__(pairs, name, torch.from_numpy(value))


def pair_kl_bits(p_clean: np.ndarray, p_corrupt: np.ndarray) -> np.ndarray:
    """The exact KL(p_clean ‖ p_corrupt) in bits over the last axis, ``inf`` where the corrupt
    posterior rules out a hypothesis the clean one allows (no floor).

    Example:
        >>> pair_kl_bits(np.array([[0.5, 0.5], [1.0, 0.0]]), np.array([[1.0, 0.0], [0.5, 0.5]]))
        array([inf,  1.])
    """
    with np.errstate(divide="ignore"):
        log_q = np.log(np.asarray(p_corrupt, dtype=np.float64))
    return np.asarray(kl_bits(p_clean, log_q=log_q))


@dataclass(frozen=True, eq=False)
class PatchPairs:
    """N clean/corrupt pairs of one token task. ``clean_ids``, ``corrupt_ids`` [N, T] int64
    (the same T: patched index for index); ``query_pos`` [Q] int64, the read positions, shared;
    ``posterior_clean``, ``posterior_corrupt`` [N, Q, H] float64, the exact posteriors over the
    H hypotheses (vocabulary ids ``hyp_slice``, in order); ``edit_pos`` [N] int64, the changed
    position (-1 where several change or, unrelated, all may); ``kind``, one of
    :data:`~windtunnel.patch_kinds.KINDS`. Computed on construction: ``entropy_clean_bits``,
    ``entropy_corrupt_bits`` and ``kl_bits`` (exact KL(p*_clean ‖ p*_corrupt), inf where the
    supports differ) [N, Q] float64, in bits, and ``tvd`` [N, Q], the total variation between
    the two (finite where the KL is not). Bad shapes raise :class:`TaskConfigError`."""

    task: str
    kind: str
    clean_ids: torch.Tensor
    corrupt_ids: torch.Tensor
    query_pos: torch.Tensor
    posterior_clean: torch.Tensor
    posterior_corrupt: torch.Tensor
    edit_pos: torch.Tensor
    hyp_slice: slice
    entropy_clean_bits: torch.Tensor = field(init=False)
    entropy_corrupt_bits: torch.Tensor = field(init=False)
    kl_bits: torch.Tensor = field(init=False)
    tvd: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        c, k, pc, pk = self.clean_ids, self.corrupt_ids, self.posterior_clean, \
            self.posterior_corrupt
        H = self.hyp_slice.stop - self.hyp_slice.start
        if self.kind not in KINDS:
            raise TaskConfigError(f"unknown pair kind {self.kind!r}; choose {', '.join(KINDS)}")
        if c.ndim != 2 or c.shape[0] < 1:
            raise TaskConfigError(f"clean_ids must be [N >= 1, T], got {list(c.shape)}")
        if k.shape != c.shape:
            raise TaskConfigError(f"corrupt_ids {list(k.shape)} must match clean_ids "
                                  f"{list(c.shape)}: positions are patched index for index")
        N, T = c.shape
        Q = int(self.query_pos.numel())
        if self.query_pos.ndim != 1 or Q < 1 or int(self.query_pos.min()) < 0 \
                or int(self.query_pos.max()) >= T:
            raise TaskConfigError(f"query_pos must be [Q >= 1] positions in [0, {T})")
        for name, p in (("posterior_clean", pc), ("posterior_corrupt", pk)):
            if tuple(p.shape) != (N, Q, H) or p.dtype != torch.float64:
                raise TaskConfigError(f"{name} must be float64 [N={N}, Q={Q}, H={H}], got "
                                      f"{p.dtype} {list(p.shape)}")
        if tuple(self.edit_pos.shape) != (N,):
            raise TaskConfigError(f"edit_pos must be [N={N}], got {list(self.edit_pos.shape)}")
        attach_measures(self, pc, pk)

    def __len__(self) -> int:
        return int(self.clean_ids.shape[0])

    @property
    def changed(self) -> torch.Tensor:
        """[N, T] bool: the positions whose token the corrupt sequence changed."""
        return self.clean_ids != self.corrupt_ids

    @property
    def reads_after_edit(self) -> torch.Tensor:
        """[N, Q] bool: read positions at or after the pair's first changed token (the only
        reads whose posterior the edit can change)."""
        ch = self.changed
        first = torch.where(ch.any(1), ch.int().argmax(1), ch.shape[1])
        return self.query_pos[None, :] >= first[:, None]

    def subset(self, idx: np.ndarray | list[int] | torch.Tensor) -> PatchPairs:
        """The pairs ``idx`` (an index array), in that order."""
        i = torch.as_tensor(np.asarray(idx), dtype=torch.long)
        return PatchPairs(self.task, self.kind, self.clean_ids[i], self.corrupt_ids[i],
                          self.query_pos, self.posterior_clean[i], self.posterior_corrupt[i],
                          self.edit_pos[i], self.hyp_slice)


def patch_pairs(task: TokenTask, n: int, kind: str = "evidence", seed: int = 0) -> PatchPairs:
    """``n`` clean/corrupt pairs of ``kind`` on wind tunnel ``task``, deterministic in
    ``seed`` (module docstring). A bad request -- n < 1, an unknown kind, a task without a
    generator, settings that admit no such edit -- is one :class:`TaskConfigError` line before
    any sequence is drawn; a pool that runs dry (``MAX_POOL`` sequences, too few editable) is
    one line too, given early where the rate seen so far projects too few. The exact
    posteriors decide what is kept: a Bayes-null pair whose posteriors differ by more than
    :data:`~windtunnel.patch_kinds.NULL_ATOL` at any read position is refused, and so is an
    evidence pair whose edit changes no read (a null by accident: bijection with replacement
    or the paired layout's last pair, an HMM emission rarely).

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> pp = patch_pairs(make_task("bijection", V=5), 3, "bayes_null", seed=0)
        >>> pp.clean_ids.shape, pp.posterior_clean.shape, int(pp.changed.sum())
        (torch.Size([3, 7]), torch.Size([3, 4, 5]), 3)
        >>> bool((pp.posterior_clean == pp.posterior_corrupt).all()), float(pp.kl_bits.max())
        (True, 0.0)
    """
    check_pairs(task.name, kind, n, seed)
    editor = EDITORS.get(task.name)
    if editor is None or not isinstance(task, TokenTask):
        raise TaskConfigError(f"task {task.name!r} has no token patch-pair generator (pairs "
                              f"exist for {', '.join(EDITORS)}; SULA's are sula_patch_pairs)")
    problem = editor.problem(task, kind)
    if problem is not None:
        raise TaskConfigError(f"{task.name} {kind} pairs: {problem}")
    Q, H = task.n_queries, task.n_hypotheses
    need = 4 * 8 * n * Q * H  # two posteriors, the KL's temporaries
    if need > memory_limit() // 4:
        raise TaskConfigError(f"{n} pairs of {task.name} hold dense posteriors [{n}, {Q}, {H}] "
                              f"twice, about {format_bytes(need)}; lower the number of pairs")
    parts: list[tuple[np.ndarray, ...]] = []
    got, c, drawn, query_pos = 0, 0, 0, None
    while got < n:
        # dry: the pool is spent, or at the rate seen so far (one more, to be generous) the
        # rest of it would not give the pairs still missing
        if drawn >= MAX_POOL or (drawn >= 8192
                                 and got + (got + 1) * (MAX_POOL - drawn) / drawn < n):
            raise TaskConfigError(
                f"{task.name} {kind} pairs: only {got} of {drawn:,} sampled sequences admit "
                f"such an edit, too few for {n} pairs within {MAX_POOL:,}; {editor.rarity}")
        chunk = min(chunk_size(n, c), max(MAX_POOL - drawn, n))
        drawn += chunk
        batch = task.sample(chunk, stream(seed, Purpose.PATCH_PAIRS, c))
        query_pos = batch.query_pos
        ids = batch.input_ids.numpy()
        rng = stream(seed, Purpose.PATCH_EDITS, edit_stream_index(c, kind))
        if kind == "unrelated":
            corrupt = task.sample(chunk, rng).input_ids.numpy()
            pos, ok = np.full(chunk, -1, dtype=np.int64), np.ones(chunk, dtype=bool)
        else:
            e = editor.edit(task, kind, ids, rng)
            corrupt, pos, ok = e.corrupt, e.edit_pos, e.ok
        # the rows whose posteriors are computed: those still needed (unrelated), else a few
        # more, since the check below may refuse some (bounds memory in a large chunk)
        idx = np.flatnonzero(ok)[: n - got if kind == "unrelated" else 4 * (n - got) + POOL_CHUNK]
        if idx.size:
            pc = editor.posterior(task, ids[idx])
            pk = editor.posterior(task, corrupt[idx])
            if kind != "unrelated":  # verified, not assumed
                null = np.abs(pc - pk).max(axis=(1, 2)) <= NULL_ATOL
                keep = np.flatnonzero(null if kind == "bayes_null" else ~null)[: n - got]
                idx, pc, pk = idx[keep], pc[keep], pk[keep]
            parts.append((ids[idx], corrupt[idx], pos[idx], pc, pk))
        got, c = got + len(idx), c + 1
    clean, corrupt, pos, pc, pk = (np.concatenate([p[i] for p in parts]) for i in range(5))
    assert query_pos is not None

    def ints(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))

    return PatchPairs(task.name, kind, ints(clean), ints(corrupt), query_pos.clone(),
                      torch.from_numpy(pc), torch.from_numpy(pk), ints(pos), task.hyp_slice)


"""Scores of a patched run: functions of the logits at the read positions, per pair.

A score maps logits ``[B, Q, V]`` (``B`` pairs of one batch, ``Q`` read positions, ``V``
vocabulary; float32, or float64 for a float64 model) to ``[B]`` or ``[B, m]`` (``m`` named
metrics). Patching runs pairs in batches, so a score that needs data per pair (token ids, the
clean run's logits, an exact posterior) is a :class:`PairScore`: it carries that data for every
pair and is handed each batch's pair indices. Every ready score is differentiable (torch ops
only), so attribution patching can take its gradient:

* :func:`logit_diff_score` logits[good] − logits[bad] (the anchors' metric);
* :func:`kl_score` KL(p_ref ‖ q) in bits to a reference run's distribution (the clean run);
* :func:`posterior_kl_score` KL(p* ‖ q_H) in bits to an exact posterior p* over the hypothesis
  tokens, q_H the model's distribution restricted to them and renormalised, with H(q_H) and
  |H(q_H) − H(p*)| in bits (entropy MAE, averaged over pairs downstream);
* :func:`combine_scores` several scores' columns side by side.

Each averages over the ``Q`` read positions. Entropies and KL come from :mod:`infotheory`.

Example:
    >>> import torch
    >>> logits = torch.tensor([[[2.0, 0.0, 1.0]], [[0.0, 3.0, 0.0]]])  # [B=2, Q=1, V=3]
    >>> logit_diff_score(0, 1)(logits)
    tensor([ 2., -3.])
    >>> s = posterior_kl_score(torch.tensor([[[0.5, 0.5]], [[1.0, 0.0]]]), [0, 2])
    >>> s.names, tuple(s(logits).shape)
    (('kl_bits', 'entropy_bits', 'entropy_abs_err_bits'), (2, 3))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..infotheory import entropy_bits_from_logprobs, entropy_bits_from_probs, kl_bits
from ..infotheory import kl_bits_from_logprobs as kl_from_logprobs
from .errors import InterpError

ScoreFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class PairScore:
    """A score with per-pair data: ``fn(logits, *rows)`` where ``rows`` are ``per_pair``'s
    tensors (leading axis: the pair) at the batch's pairs; ``names``: its metric columns
    (None: ``score`` for a ``[B]`` result, ``score_0``... for ``[B, m]``)."""

    fn: Callable[..., torch.Tensor]
    per_pair: tuple[torch.Tensor, ...] = ()
    names: tuple[str, ...] | None = None

    def __call__(self, logits: torch.Tensor, pairs: torch.Tensor | None = None) -> torch.Tensor:
        """The score of ``logits`` [B, Q, V]; ``pairs`` [B]: which pairs they are (None: all,
        in order)."""
        rows = [t.to(logits.device) if pairs is None else t[pairs.to(t.device)].to(logits.device)
                for t in self.per_pair]
        return self.fn(logits, *rows)


def as_pair_score(score: PairScore | ScoreFn) -> PairScore:
    """``score`` as a :class:`PairScore` (a plain ``f(logits)`` carries no per-pair data)."""
    if isinstance(score, PairScore):
        return score
    if not callable(score):
        raise InterpError(f"score must be a callable of the logits, got {type(score).__name__}")
    return PairScore(lambda logits: score(logits))


def evaluate(score: PairScore, logits: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """``score`` on one batch as [B, m] float64 (checked: [B] or [B, m], finite shape)."""
    out = torch.as_tensor(score(logits, pairs))
    b = int(pairs.numel())
    if out.ndim not in (1, 2) or out.shape[0] != b:
        raise InterpError(f"a patching score must return [B] or [B, m] for B = {b} pairs, got "
                          f"shape {tuple(out.shape)}")
    return (out[:, None] if out.ndim == 1 else out).double()


def metric_names(score: PairScore, m: int) -> tuple[str, ...]:
    """The column names of a score with ``m`` columns."""
    if score.names is not None:
        if len(score.names) != m:
            raise InterpError(f"the score names {len(score.names)} metrics but returned {m}")
        return score.names
    return ("score",) if m == 1 else tuple(f"score_{j}" for j in range(m))


def _per_pair(x: int | Sequence[int] | torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.long)
    if t.ndim > 2:
        raise InterpError(f"token ids must be an int, [B] or [B, Q], got {tuple(t.shape)}")
    return t


def logit_diff_score(good: int | Sequence[int] | torch.Tensor,
                     bad: int | Sequence[int] | torch.Tensor) -> PairScore:
    """logits[good] − logits[bad], averaged over read positions: ``good``/``bad`` one token id
    for every pair, one per pair [B], or one per pair and read position [B, Q]."""
    g, b = _per_pair(good), _per_pair(bad)

    def diff(logits: torch.Tensor, gi: torch.Tensor, bi: torch.Tensor) -> torch.Tensor:
        return (_pick(logits, gi) - _pick(logits, bi)).mean(-1)

    if g.ndim == 0 and b.ndim == 0:
        return PairScore(lambda z: diff(z, g, b), (), ("logit_diff",))
    g, b = torch.broadcast_tensors(g, b)
    return PairScore(diff, (g, b), ("logit_diff",))


def _pick(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """[B, Q] logits of token ``ids`` (scalar, [B] or [B, Q])."""
    B, Q, _ = logits.shape
    idx = ids.to(logits.device).reshape(*ids.shape, *([1] * (2 - ids.ndim))).expand(B, Q)
    return logits.gather(-1, idx[..., None])[..., 0]


def kl_score(reference_logits: torch.Tensor, name: str = "kl_bits") -> PairScore:
    """KL(p_ref ‖ q) in bits, averaged over read positions: p_ref = softmax of
    ``reference_logits`` [N, Q, V] (a reference run at the same read positions, e.g. the clean
    prompts' logits from :func:`interp.read_logits`), q the patched run's."""
    ref = torch.log_softmax(reference_logits.detach().double(), dim=-1)

    def kl(logits: torch.Tensor, log_p: torch.Tensor) -> torch.Tensor:
        if log_p.shape != logits.shape:
            raise InterpError(f"reference logits {tuple(log_p.shape)} do not match the read "
                              f"logits {tuple(logits.shape)}")
        log_q = torch.log_softmax(logits.double(), dim=-1)
        return kl_from_logprobs(log_p, log_q).mean(-1)

    return PairScore(kl, (ref,), (name,))


def posterior_kl_score(p_star: torch.Tensor, hyp_ids: Sequence[int] | slice | torch.Tensor,
                       ) -> PairScore:
    """KL(p* ‖ q_H) in bits, H(q_H) in bits and |H(q_H) − H(p*)| in bits, each averaged over
    read positions: ``p_star`` [N, Q, H] exact posteriors (rows summing to 1), ``hyp_ids`` the H
    hypothesis token ids (or a wind tunnel's ``hyp_slice``), q_H = softmax of the logits at
    those ids (the model's distribution restricted to the hypotheses and renormalised)."""
    p = torch.as_tensor(p_star).detach().double()
    ids = hyp_ids if isinstance(hyp_ids, slice) else torch.as_tensor(hyp_ids, dtype=torch.long)
    if p.ndim != 3:
        raise InterpError(f"p_star must be [N, Q, H], got {tuple(p.shape)}")
    h_star = entropy_bits_from_probs(p)

    def post(logits: torch.Tensor, p_rows: torch.Tensor, h_rows: torch.Tensor) -> torch.Tensor:
        z = logits[..., ids].double()
        if z.shape != p_rows.shape:
            raise InterpError(f"p_star rows {tuple(p_rows.shape)} do not match the hypothesis "
                              f"logits {tuple(z.shape)} (pairs, read positions, hypotheses)")
        log_q = torch.log_softmax(z, dim=-1)
        h_q = entropy_bits_from_logprobs(log_q)
        kl = kl_bits(p_rows, log_q=log_q)
        return torch.stack([kl.mean(-1), h_q.mean(-1), (h_q - h_rows).abs().mean(-1)], -1)

    return PairScore(post, (p, h_star), ("kl_bits", "entropy_bits", "entropy_abs_err_bits"))


def combine_scores(*scores: PairScore | ScoreFn) -> PairScore:
    """Several scores' columns side by side, in order ([B, m1 + m2 + ...])."""
    parts = [as_pair_score(s) for s in scores]
    if not parts:
        raise InterpError("combine_scores needs at least one score")
    sizes = [len(s.per_pair) for s in parts]
    names = [s.names for s in parts]

    def both(logits: torch.Tensor, *rows: torch.Tensor) -> torch.Tensor:
        outs, i = [], 0
        for s, n in zip(parts, sizes, strict=True):
            out = s.fn(logits, *rows[i:i + n])
            outs.append(out[:, None] if out.ndim == 1 else out)
            i += n
        return torch.cat([o.double() for o in outs], -1)

    joined = None if any(n is None for n in names) else \
        tuple(x for n in names for x in n)  # type: ignore[union-attr]
    if joined is not None and len(set(joined)) != len(joined):
        raise InterpError(f"combined scores repeat a metric name: {joined}")
    return PairScore(both, tuple(t for s in parts for t in s.per_pair), joined)

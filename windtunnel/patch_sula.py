"""Clean/corrupt SULA prompt pairs for pretrained LLMs, with the exact posterior of both from
:mod:`windtunnel.sula`'s own :func:`~windtunnel.sula.render` (issue 37).

A clean prompt is SULA's ``main`` condition, ``"w1: L, w2: L', …, query:"``; its read
position is the final token (the colon after the query word), whose next token is a label; the
posterior over the two labels depends only on the number m of examples labelled L1. Kinds
(:data:`~windtunnel.patch_kinds.TEXT_KINDS`):

* ``evidence`` -- one example's label flipped to the other label (m moves by one; the
  posterior always changes);
* ``bayes_null`` -- the labels of two examples with different labels swapped, every carrier
  word in place: m is unchanged, so the posterior is identical (it reads counts, not order).
  Needs both labels among the examples (1 <= m <= k − 1), so k >= 2; the clean prompts are
  the sampler's conditioned on that. Reordering whole examples is exactly null too, but it
  moves carrier words of different token lengths, so positions would no longer align;
* ``shuffled`` -- the same prompt with every label drawn independently of the latent label
  (SULA's ``shuffled`` condition): the labels carry no evidence, the posterior is flat (1 bit)
  -- the posterior of that generative process, not of the same tokens read as ``main``; rows
  whose shuffled labels happen to equal the clean ones are dropped;
* ``unrelated`` -- an independent SULA prompt with the same k.

**Token lengths.** Every edit but ``unrelated`` changes only label words, and both labels are
one word, so a tokenizer that makes each label one token after ``": "`` (what
:mod:`analyses.prompts.sula` picks labels for) keeps clean and corrupt the same length, and
positions can be patched index for index. Nothing here tokenises: the analyses layer tokenises
both texts and checks the lengths (a label may still merge with the following comma in some
tokenizer). Unrelated prompts have other carrier and query words, so their lengths generally
differ: patch those at the final position only, or keep the pairs of equal length.

**Seeds.** Pool chunk 0 is ``sula.draw(ks, max(n / len(ks), 16), alpha, seed)`` -- where every
prompt qualifies, the first clean prompts of each k are those of ``SulaTask.posterior_prompts``
with the same ``seed`` and per-k count -- and chunk c > 0 draws with a seed taken from stream
``(seed, PATCH_PAIRS, c)``; edits come from ``(seed, PATCH_EDITS, edit_stream_index(c, kind))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from .patch_kinds import NULL_ATOL, PAIR_KS, TEXT_KINDS, check_pairs, edit_stream_index, pick
from .patch_pairs import MAX_POOL, attach_measures
from .seeds import Purpose, stream
from .sula import _check_alpha, draw, render
from .sula_config import ALPHA, LABEL_CANDIDATES, SulaError

#: the smallest number of prompts per k a pool chunk draws
SULA_CHUNK = 16


@dataclass(frozen=True, eq=False)
class TextPatchPairs:
    """N SULA prompt pairs, k-major. ``clean_texts``, ``corrupt_texts`` [N]; ``label_words``
    (L1, L2), the hypotheses in order; ``k`` [N] int64 examples per prompt; ``edit_example``
    [N] int64, the flipped example's index (-1 where not one example); ``posterior_clean``,
    ``posterior_corrupt`` [N, 1, 2] float64 exact p(L1), p(L2) at the one read position, each
    prompt's final token (Q = 1, the layout of :class:`~windtunnel.patch_pairs.PatchPairs`).
    Computed: ``entropy_clean_bits``, ``entropy_corrupt_bits`` and ``kl_bits`` (exact
    KL(p*_clean ‖ p*_corrupt)) [N, 1] float64, in bits, and ``tvd`` [N, 1]."""

    kind: str
    clean_texts: list[str]
    corrupt_texts: list[str]
    label_words: tuple[str, str]
    k: torch.Tensor
    edit_example: torch.Tensor
    posterior_clean: torch.Tensor
    posterior_corrupt: torch.Tensor
    entropy_clean_bits: torch.Tensor = field(init=False)
    entropy_corrupt_bits: torch.Tensor = field(init=False)
    kl_bits: torch.Tensor = field(init=False)
    tvd: torch.Tensor = field(init=False)

    def __post_init__(self) -> None:
        N = len(self.clean_texts)
        if self.kind not in TEXT_KINDS:
            raise SulaError(f"unknown pair kind {self.kind!r}; choose {', '.join(TEXT_KINDS)}")
        if N < 1 or len(self.corrupt_texts) != N:
            raise SulaError(f"need N >= 1 clean texts and as many corrupt ones, got {N} and "
                            f"{len(self.corrupt_texts)}")
        for name, p in (("posterior_clean", self.posterior_clean),
                        ("posterior_corrupt", self.posterior_corrupt)):
            if tuple(p.shape) != (N, 1, 2) or p.dtype != torch.float64:
                raise SulaError(f"{name} must be float64 [N={N}, 1, 2], got {p.dtype} "
                                f"{list(p.shape)}")
        attach_measures(self, self.posterior_clean, self.posterior_corrupt)

    def __len__(self) -> int:
        return len(self.clean_texts)


def _check(n: int, kind: str, seed: int, ks: Sequence[int], alpha: float,
           labels: Sequence[str]) -> None:
    check_pairs("sula", kind, n, seed)
    low = 2 if kind == "bayes_null" else 1
    if not ks or len(set(ks)) != len(ks) or min(ks) < low:
        why = "a Bayes-null swap needs two examples" if low == 2 else "a pair edits an example"
        raise SulaError(f"ks must be distinct example counts >= {low} for {kind} pairs ({why}), "
                        f"got {list(ks)}")
    if n % len(ks):
        raise SulaError(f"SULA pairs come in equal numbers for each of the {len(ks)} values of "
                        f"k; n = {n} is not a multiple of {len(ks)}")
    _check_alpha(alpha)
    if len(labels) != 2 or len(set(labels)) != 2 or any(
            not w or any(ch.isspace() for ch in w) for w in labels):
        raise SulaError(f"labels must be two different single words, got {list(labels)}")


def sula_patch_pairs(n: int, kind: str = "evidence", seed: int = 0,
                     ks: Sequence[int] = PAIR_KS, alpha: float = ALPHA,
                     labels: Sequence[str] = LABEL_CANDIDATES[:2]) -> TextPatchPairs:
    """``n`` SULA prompt pairs of ``kind`` (n / len(ks) per k, k-major), deterministic in
    ``seed`` (module docstring). Bad input is one :class:`~windtunnel.sula_config.SulaError`
    line before any draw; Bayes-null pairs are verified (posteriors equal to
    :data:`~windtunnel.patch_kinds.NULL_ATOL`), not assumed.

    Example:
        >>> pp = sula_patch_pairs(3, "evidence", ks=(1, 2, 4))
        >>> pp.clean_texts[0], pp.corrupt_texts[0]
        ('rude: lug, peaceful:', 'rude: dax, peaceful:')
        >>> [p[0, 0].round(decimals=2).tolist() for p in (pp.posterior_clean, pp.posterior_corrupt)]
        [[0.1, 0.9], [0.9, 0.1]]
    """
    ks = tuple(int(k) for k in ks)
    labels = tuple(str(w) for w in labels)
    _check(n, kind, seed, ks, alpha, labels)
    words = (labels[0], labels[1])
    per_k = n // len(ks)
    chunk_k = max(per_k, SULA_CHUNK)
    got: dict[int, list[tuple[str, str, int, np.ndarray, np.ndarray]]] = {k: [] for k in ks}
    c = 0
    while any(len(v) < per_k for v in got.values()):
        if c * chunk_k * len(ks) >= MAX_POOL:
            short = [k for k, v in got.items() if len(v) < per_k]
            raise SulaError(f"sula {kind} pairs: too few of {c * chunk_k:,} prompts per k admit "
                            f"such an edit at k = {short}; use other ks or a smaller n")
        d_seed = seed if c == 0 else int(stream(seed, Purpose.PATCH_PAIRS, c).integers(2**63))
        d = draw(ks, chunk_k, alpha, d_seed)
        rng = stream(seed, Purpose.PATCH_EDITS, edit_stream_index(c, kind))
        N, rows = len(d), np.arange(len(d))
        inside = np.arange(d.labels.shape[1])[None, :] < d.k[:, None]
        where = np.full(N, -1, dtype=np.int64)
        ok = np.ones(N, dtype=bool)
        condition = "main"
        if kind == "evidence":
            where = np.floor(rng.random(N) * d.k).astype(np.int64)
            lab = d.labels.copy()
            lab[rows, where] = 1 - lab[rows, where]
            d2 = replace(d, labels=lab)
        elif kind == "bayes_null":
            i, ok_i = pick(rng, inside & (d.labels == 0))
            j, ok_j = pick(rng, inside & (d.labels == 1))
            ok = ok_i & ok_j
            lab = d.labels.copy()
            lab[rows[ok], i[ok]], lab[rows[ok], j[ok]] = 1, 0
            d2 = replace(d, labels=lab)
        elif kind == "shuffled":
            d2, condition = d, "shuffled"
            ok = (inside & (d.shuffled != d.labels)).any(1)
        else:
            d2 = draw(ks, chunk_k, alpha, int(rng.integers(2**63)))
        clean, corrupt = render(d, "main", words), render(d2, condition, words)
        ok &= np.array([a != b for a, b in zip(clean.texts, corrupt.texts, strict=True)])
        same = np.abs(clean.posterior - corrupt.posterior).max(1) <= NULL_ATOL
        if kind == "bayes_null":
            ok &= same
        elif kind == "evidence":
            ok &= ~same
        for r in np.flatnonzero(ok):
            kr = int(d.k[r])
            if len(got[kr]) < per_k:
                got[kr].append((clean.texts[r], corrupt.texts[r], int(where[r]),
                                clean.posterior[r], corrupt.posterior[r]))
        c += 1
    rows_out = [row for k in ks for row in got[k]]
    kk = torch.tensor([k for k in ks for _ in range(per_k)], dtype=torch.int64)
    return TextPatchPairs(kind, [r[0] for r in rows_out], [r[1] for r in rows_out], words, kk,
                          torch.tensor([r[2] for r in rows_out], dtype=torch.int64),
                          torch.from_numpy(np.stack([r[3] for r in rows_out])[:, None, :]),
                          torch.from_numpy(np.stack([r[4] for r in rows_out])[:, None, :]))

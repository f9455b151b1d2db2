"""Paper III's prompt sampler: score a pool by the model's next-token entropy, then take the
same number of prompts from each entropy quintile.

Scoring runs the prompts sorted by token length (little padding), ``batch_size`` at a time, and
keeps only the last position's logits. The entropy is in bits over the whole vocabulary, or over
``vocab_slice`` (a wind tunnel's hypothesis tokens) when given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from ...infotheory import entropy_bits_from_logits
from ...interp import InterpModel


def token_lengths(model: InterpModel, prompts: Sequence[str] | Sequence[Sequence[int]],
                  ) -> np.ndarray:
    """Tokens per prompt [n] (after the model's tokenizer, special tokens included)."""
    tokens, _ = model.encode(prompts)
    return np.array([len(t) for t in tokens], dtype=np.int64)


def next_token_entropy(
    model: InterpModel,
    prompts: Sequence[str] | Sequence[Sequence[int]],
    batch_size: int = 32,
    vocab_slice: slice | None = None,
    progress: bool = True,
    paced: Callable[[float], None] | None = None,
) -> np.ndarray:
    """Entropy (bits) of the next-token distribution after each prompt. [n] float64.
    ``paced(seconds)``: called once, after the first batch, with the seconds one prompt took
    (the shortest prompts come first, so the time of the rest is at least that many times),
    so that a caller can refuse a pool that would not end (:func:`records.budget.check_time`)."""
    tokens, _ = model.encode(prompts)
    order = np.argsort([len(t) for t in tokens], kind="stable")
    out = np.empty(len(tokens))
    bar = tqdm(total=len(tokens), unit="prompt", desc="entropy", disable=not progress)
    t0 = time.perf_counter()
    try:
        for i in range(0, len(order), batch_size):
            idx = order[i: i + batch_size]
            logits = model.forward(model.batch([tokens[j] for j in idx]), logits_to_keep=1)
            last = logits[:, -1].float()
            if vocab_slice is not None:
                last = last[:, vocab_slice]
            out[idx] = entropy_bits_from_logits(last).to(torch.float64).cpu().numpy()
            del logits, last  # not alive through the next forward
            bar.update(len(idx))
            if i == 0 and paced is not None:
                paced((time.perf_counter() - t0) / len(idx))
    finally:
        bar.close()
    return out


def quantile_bins(values: object, n_bins: int = 5) -> np.ndarray:
    """Bin index [n] (0 = lowest) splitting ``values`` by rank into ``n_bins`` near-equal groups
    (ties broken by position, so every bin has ⌊n/k⌋ or ⌈n/k⌉ members)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if n_bins < 1 or v.size < n_bins:
        raise ValueError(f"need at least {n_bins} values for {n_bins} bins, got {v.size}")
    order = np.argsort(v, kind="stable")
    bins = np.empty(v.size, dtype=np.int64)
    for b, chunk in enumerate(np.array_split(order, n_bins)):
        bins[chunk] = b
    return bins


def stratified_sample(
    entropy: object, n_per_bin: int = 15, n_bins: int = 5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(indices [n_bins·n_per_bin], their bin) drawn without replacement, ``n_per_bin`` from
    each entropy quantile bin; indices are sorted within each bin, bins in increasing entropy."""
    bins = quantile_bins(entropy, n_bins)
    rng = np.random.default_rng(seed)
    picked, labels = [], []
    for b in range(n_bins):
        members = np.flatnonzero(bins == b)
        if members.size < n_per_bin:
            raise ValueError(f"entropy bin {b} has {members.size} prompts, fewer than the "
                             f"{n_per_bin} asked for; enlarge the pool or take fewer per bin")
        picked.append(np.sort(rng.choice(members, size=n_per_bin, replace=False)))
        labels.append(np.full(n_per_bin, b))
    return np.concatenate(picked), np.concatenate(labels)

"""Toy prompts with an exact posterior, shared by the probe tests and the verify tests."""

from __future__ import annotations

import numpy as np


def sula_like(n=120, t=16, seed=0, alpha=0.9):
    """Prompts showing k ∈ {0..8} labels (tokens 0 / 1; filler 9) with SULA's posterior over
    the two labels (each example shows the true label with probability ``alpha``)."""
    rng = np.random.default_rng(seed)
    tok = np.full((n, t), 9)
    bayes = np.empty((n, 2))
    group = rng.integers(0, 9, size=n)
    for i, k in enumerate(group):
        lab = rng.integers(0, 2, size=k)
        tok[i, rng.choice(t, size=k, replace=False)] = lab
        a, b = int((lab == 0).sum()), int((lab == 1).sum())
        log = np.array([a * np.log(alpha) + b * np.log(1 - alpha),
                        b * np.log(alpha) + a * np.log(1 - alpha)])
        bayes[i] = np.exp(log - log.max()) / np.exp(log - log.max()).sum()
    return rng, tok, np.broadcast_to(np.arange(2), (n, 2)).copy(), bayes, group


def exact_pattern(tok, bayes, floor=1e-3):
    """[N, T]: attention whose mass on each shown hypothesis is its posterior (spread evenly
    over its occurrences), a little on everything else."""
    pat = np.full(tok.shape, floor)
    for i in range(len(tok)):
        for k in range(bayes.shape[1]):
            pos = np.flatnonzero(tok[i] == k)
            if pos.size:
                pat[i, pos] = bayes[i, k] / pos.size
    return pat / pat.sum(1, keepdims=True)

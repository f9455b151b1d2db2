"""Selection-aware controls for a best-of-heads score.

A headline that reports the *best* of H heads is the maximum of H noisy numbers: even heads that
know nothing about the posterior have a best that beats their mean, and the more heads, the
further. A control for such a headline must make the same selection. Inputs: the per-prompt
score of each head as a TV ``tv`` [N, H] (NaN where a prompt is undefined, as
:func:`probes.posterior_consistency.attention_posterior_tv` returns it), a head's score being
1 − mean TV over the prompts where it is defined.

* **cross-fitted selection** (:func:`cross_fit`): the prompts that count are split in two
  halves (seeded, balanced within each ``strata`` value, e.g. SULA's k); the best head is
  chosen on one half and scored on the other, and vice versa, so every prompt is scored by a
  head chosen without it. Repeated over ``n_repeats`` seeded splits; the **held-out score** of
  a split is 1 − mean over all prompts of their held-out TV, and the run's is the mean over
  splits. A selection artefact falls to the level of an ordinary head here; a head that is
  better on every prompt keeps its score.
* **the maximum over H random heads** (:func:`random_heads_max`): heads that read the shown
  hypothesis occurrences with weights drawn from a flat Dirichlet (concentration 1 per
  occurrence, so their mean is uniform attention, q ∝ count); by the Dirichlet's aggregation
  property a random head's mass over the shown hypotheses is Dirichlet(count). Scored on the
  same prompts as the heads, H at a time, their best over ``n_draws`` draws gives the
  distribution of a best-of-H score under "no head knows the posterior".
* **the maximum over the model's own heads, re-dealt** (:func:`shuffled_heads_max`): each
  head keeps its own attention weights on the prompt's hypothesis occurrences, but which
  occurrence (and so which hypothesis) receives which weight is permuted at random, per prompt
  and head. The null keeps every head's concentration (a head that stares at one occurrence
  stays that peaked), which the Dirichlet fixes at one value, and breaks only the link between
  where a head looks and what the posterior favours; a head that reads every occurrence alike
  (counting) is unchanged by it, so a best head that only counts cannot beat it.

The observed best is compared with each maximum's distribution by the one-sided p
(1 + #{max ≥ observed}) / (1 + n_draws) (:func:`max_null`).

Example:
    >>> rng = np.random.default_rng(0)
    >>> tv = rng.random((200, 30))  # 30 heads that know nothing: their best is luck
    >>> s = head_posterior_scores(tv)
    >>> cf = cross_fit(tv, n_repeats=5, seed=0)
    >>> print(f"best {s.max():.2f}, mean {s.mean():.2f}, held out {cf.held_out.mean():.2f}")
    best 0.55, mean 0.50, held out 0.52
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .posterior_consistency import attention_posterior_tv, defined_prompts

#: the random heads' Dirichlet concentration per hypothesis occurrence (flat: uniform on the
#: simplex of the occurrences' weights; its mean is uniform attention)
CONCENTRATION = 1.0


def head_posterior_scores(tv: np.ndarray) -> np.ndarray:
    """[H]: 1 − mean TV over the prompts where each head is defined (NaN: none); ``tv``
    [N, H]."""
    t = np.asarray(tv, dtype=np.float64)
    ok = np.isfinite(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - np.where(ok, t, 0.0).sum(0) / np.where(ok.any(0), ok.sum(0), np.nan)


def _pick(tv: np.ndarray) -> int:
    s = head_posterior_scores(tv)
    return int(np.nanargmax(s)) if np.isfinite(s).any() else -1


@dataclass(frozen=True)
class CrossFit:
    """Cross-fitted selection (module doc). ``held_out_tv`` [R, N]: each prompt's TV under the
    head chosen on the other half in split r (NaN: the prompt is undefined, or that head is
    on it); ``folds`` [R, N]: the half (0 / 1) of each prompt, −1 where it is undefined;
    ``picks`` [R, 2]: the head chosen on half 0 (which scores half 1) and on half 1."""

    held_out_tv: np.ndarray
    folds: np.ndarray
    picks: np.ndarray

    @property
    def held_out(self) -> np.ndarray:
        """[R]: the held-out score of each split (1 − mean held-out TV)."""
        with np.errstate(invalid="ignore"):
            return 1.0 - np.nanmean(np.where(np.isfinite(self.held_out_tv), self.held_out_tv,
                                             np.nan), axis=1)

    def fold_gaps(self, control_tv: np.ndarray) -> np.ndarray:
        """[R, 2]: per split and half, the held-out score minus a control's score on the same
        prompts (``control_tv`` [N], e.g. uniform attention's TV)."""
        c = np.asarray(control_tv, dtype=np.float64)
        out = np.full((*self.folds.shape[:1], 2), np.nan)
        for r in range(self.folds.shape[0]):
            for f in (0, 1):
                sel = (self.folds[r] == f) & np.isfinite(self.held_out_tv[r]) & np.isfinite(c)
                if sel.any():
                    out[r, f] = c[sel].mean() - self.held_out_tv[r, sel].mean()
        return out


def split_halves(ok: np.ndarray, strata: np.ndarray | None, rng: np.random.Generator,
                 ) -> np.ndarray:
    """[N]: 0 / 1 for the prompts where ``ok``, −1 elsewhere: each stratum's prompts in a random
    order, dealt alternately to the two halves with the alternation carried across strata (so
    the halves differ by at most one prompt and each stratum by at most one)."""
    ok = np.asarray(ok, dtype=bool)
    g = np.zeros(ok.size, dtype=np.int64) if strata is None else np.asarray(strata)
    fold = np.full(ok.size, -1, dtype=np.int64)
    turn = int(rng.integers(2))
    for v in np.unique(g[ok]):
        idx = rng.permutation(np.flatnonzero(ok & (g == v)))
        fold[idx] = (turn + np.arange(idx.size)) % 2
        turn = (turn + idx.size) % 2
    return fold


def cross_fit(tv: np.ndarray, strata: np.ndarray | None = None, n_repeats: int = 20,
              seed: int = 0) -> CrossFit:
    """Cross-fitted best-head selection over ``n_repeats`` seeded two-half splits of the
    prompts where some head is defined (module doc); ``tv`` [N, H]. The same ``seed`` and
    prompts give the same splits, so two head sets (a model and its twin) are cross-fitted
    alike."""
    t = np.asarray(tv, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError(f"tv must be [N, H], got {t.shape}")
    ok = np.asarray(np.isfinite(t).any(1))
    rng = np.random.default_rng(seed)
    held = np.full((n_repeats, t.shape[0]), np.nan)
    folds = np.full((n_repeats, t.shape[0]), -1, dtype=np.int64)
    picks = np.full((n_repeats, 2), -1, dtype=np.int64)
    for r in range(n_repeats):
        fold = split_halves(ok, strata, rng)
        folds[r] = fold
        for f in (0, 1):
            h = _pick(t[fold == f])
            picks[r, f] = h
            if h >= 0:
                other = fold == 1 - f
                held[r, other] = t[other, h]
    return CrossFit(held, folds, picks)


@dataclass(frozen=True)
class MaxNull:
    """The distribution of a best-of-``n_heads`` score under a null (``name``), from
    ``n_draws`` draws, against the ``observed`` best: its mean and sd, its (1 − ``alpha``)
    quantile and the one-sided p of the observed best (module doc)."""

    name: str
    n_heads: int
    n_draws: int
    observed: float
    mean: float
    sd: float
    quantile: float
    alpha: float
    p: float

    @property
    def beaten(self) -> bool:
        """The observed best lies above the null's maximum at level ``alpha`` (p < alpha)."""
        return bool(self.p < self.alpha)


def max_null(name: str, maxima: np.ndarray, observed: float, n_heads: int,
             alpha: float = 0.05) -> MaxNull:
    """:class:`MaxNull` from the null's maxima [n_draws] (NaN draws dropped)."""
    m = np.asarray(maxima, dtype=np.float64)
    m = m[np.isfinite(m)]
    if not m.size or observed != observed:
        return MaxNull(name, n_heads, int(m.size), float(observed), float("nan"), float("nan"),
                       float("nan"), alpha, float("nan"))
    # ties within rounding count as reaching the observed best
    hits = int((m >= observed - 1e-12).sum())
    return MaxNull(name, n_heads, int(m.size), float(observed), float(m.mean()),
                   float(m.std(ddof=1)) if m.size > 1 else 0.0,
                   float(np.quantile(m, 1 - alpha)), alpha, (1 + hits) / (1 + m.size))


def _best_of(mass: np.ndarray, count: np.ndarray, bayes: np.ndarray) -> float:
    """The best head's score of ``mass`` [N, H, K] on the prompts (module doc)."""
    s = head_posterior_scores(attention_posterior_tv(mass, count, bayes))
    return float(np.nanmax(s)) if np.isfinite(s).any() else float("nan")


def random_heads_max(count: np.ndarray, bayes: np.ndarray, n_heads: int, n_draws: int = 1000,
                     seed: int = 0, concentration: float = CONCENTRATION,
                     chunk_elems: int = 4_000_000) -> np.ndarray:
    """[n_draws]: the best score among ``n_heads`` random Dirichlet heads (module doc) on the
    prompts ``count`` and ``bayes`` [N, K] (only the defined ones are drawn: the others do not
    count); NaN where no prompt is defined."""
    c = np.asarray(count, dtype=np.float64)
    b = np.asarray(bayes, dtype=np.float64)
    ok = defined_prompts(c, b)
    if not ok.any():
        return np.full(n_draws, np.nan)
    c, b = c[ok], b[ok]
    shown = c > 0
    shape = np.where(shown, concentration * c, 1.0)
    rng = np.random.default_rng(seed)
    out = np.empty(n_draws)
    per = max(1, chunk_elems // (n_heads * c.size))
    for i in range(0, n_draws, per):
        d = min(per, n_draws - i)
        g = rng.gamma(np.broadcast_to(shape, (d, n_heads, *c.shape))) * shown  # [d, H, N, K]
        for j in range(d):
            out[i + j] = _best_of(g[j].transpose(1, 0, 2), c, b)
    return out


def occurrence_weights(pattern: np.ndarray, tokens: np.ndarray, hyp_ids: np.ndarray,
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(weights [N, H, O], hypothesis [N, O]): each head's attention on each position holding
    a hypothesis token, packed to the front (O: the most such positions in a prompt), and the
    index in 0..K−1 of the hypothesis there (−1: padding, weight 0). ``pattern`` [N, H, T],
    ``tokens`` [N, T], ``hyp_ids`` [N, K] as :func:`probes.posterior_consistency.hypothesis_mass`
    takes them; Σ_o weights[n, h, o]·[hypothesis[n, o] = k] is that function's mass."""
    a = np.asarray(pattern, dtype=np.float64)
    t = np.asarray(tokens)
    ids = np.asarray(hyp_ids)
    match = t[:, :, None] == ids[:, None, :]  # [N, T, K]
    hit = match.any(-1)
    which = np.where(hit, match.argmax(-1), -1)  # [N, T]
    n_occ = hit.sum(1)
    width = max(int(n_occ.max()) if n_occ.size else 0, 1)
    w = np.zeros((a.shape[0], a.shape[1], width))
    hyp = np.full((a.shape[0], width), -1, dtype=np.int64)
    for n in range(a.shape[0]):
        pos = np.flatnonzero(hit[n])
        w[n, :, : pos.size] = a[n][:, pos]
        hyp[n, : pos.size] = which[n, pos]
    return w, hyp


def shuffled_heads_max(weights: np.ndarray, hyp: np.ndarray, count: np.ndarray,
                       bayes: np.ndarray, n_draws: int = 1000, seed: int = 0,
                       chunk_elems: int = 4_000_000) -> np.ndarray:
    """[n_draws]: the best score among the heads of ``weights`` [N, H, O] (with ``hyp`` [N, O]
    from :func:`occurrence_weights`) when each head's weights are re-dealt among its prompt's
    hypothesis occurrences at random, per prompt and head (module doc); ``count`` and
    ``bayes`` [N, K]. Only the defined prompts are drawn; NaN where none is."""
    c = np.asarray(count, dtype=np.float64)
    b = np.asarray(bayes, dtype=np.float64)
    ok = defined_prompts(c, b)
    if not ok.any():
        return np.full(n_draws, np.nan)
    w = np.asarray(weights, dtype=np.float64)[ok]  # [N, H, O]
    lab = np.asarray(hyp)[ok]  # [N, O]
    c, b = c[ok], b[ok]
    n, h, o = w.shape
    k = c.shape[1]
    pad = lab < 0
    onehot = (lab[:, :, None] == np.arange(k)).astype(np.float64)  # [N, O, K]
    rng = np.random.default_rng(seed)
    out = np.empty(n_draws)
    per = max(1, chunk_elems // (n * h * o * max(k, 1)))
    for i in range(0, n_draws, per):
        d = min(per, n_draws - i)
        keys = rng.random((d, n, h, o))
        keys[:, pad[:, None, :].repeat(h, 1)] = np.inf  # padding sorts last, stays padding
        perm = np.argsort(keys, axis=-1)  # [d, N, H, O]: a permutation of each prompt's slots
        for j in range(d):
            # slot o of head h reads the hypothesis of occurrence perm[n, h, o]
            oh = onehot[np.arange(n)[:, None, None], perm[j]]  # [N, H, O, K]
            mass = np.einsum("nho,nhok->nhk", w, oh)
            out[i + j] = _best_of(mass, c, b)
    return out

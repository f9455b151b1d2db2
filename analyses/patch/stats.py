"""The statistics of a patching run: per cell, means over pairs with BCa intervals; per cell, the
paired test of the evidence against the unrelated-source control, Holm-adjusted over the grid,
with the effective number of tests; the held-out (cross-fitted) choice of the best cell; and the
rank agreement of attribution with exact patching. Everything here is numpy on
:class:`~analyses.patch.scores.Measured` arrays; the intervals, Holm, the effective number, the
half splits and Spearman are :mod:`probes`' own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import ttest_1samp

from ...infotheory import recovered_fraction
from ...probes import bca_interval, effect_effective_number, holm, spearman
from ...probes.bootstrap import jackknife_indices, resample_indices
from ...probes.selection_control import split_halves
from .scores import Measured

#: cells per chunk of the vectorised bootstrap (bounds its [cells, resamples, pairs] temporary)
CHUNK = 32
#: family-wise level of every verdict
ALPHA = 0.05


def _interval_columns(est: np.ndarray, reps: np.ndarray, jack: np.ndarray | None,
                      name: str) -> dict[str, np.ndarray]:
    lo, hi, ok = (np.full(est.shape, np.nan) for _ in range(3))
    for i in range(est.size):
        iv = bca_interval(float(est[i]), reps[i], None if jack is None else jack[i])
        lo[i], hi[i], ok[i] = iv.low, iv.high, iv.contains_estimate
    return {f"{name}_low": lo, f"{name}_high": hi, f"{name}_contains_estimate": ok == 1.0}


def cell_table(ms: Measured, n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per cell [C]: ``n_pairs``; the mean ``effect`` with its BCa interval (the jackknife
    over pairs gives the acceleration) and whether the interval contains it; the
    ``recovered_fraction`` (ratio of means) with its BCa interval; the means of the other
    measurements; ``abs_effect`` and the normalised logit difference."""
    C, N = ms.effect.shape
    idx = resample_indices(N, n_resamples, seed)
    jk = jackknife_indices(N) if N > 1 else None
    out: dict[str, np.ndarray] = {"n_pairs": np.full(C, N)}
    eff = ms.effect.mean(1)
    rf = np.asarray(recovered_fraction(ms.kl_patched.mean(1), np.full(C, ms.kl_target.mean())))
    reps_e, reps_r = np.empty((C, n_resamples)), np.empty((C, n_resamples))
    jack_e = np.empty((C, N)) if jk is not None else None
    jack_r = np.empty((C, N)) if jk is not None else None
    for lo in range(0, C, CHUNK):
        sl = slice(lo, lo + CHUNK)
        reps_e[sl] = ms.effect[sl][:, idx].mean(-1)
        den = ms.kl_target[idx].mean(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            reps_r[sl] = recovered_fraction(ms.kl_patched[sl][:, idx].mean(-1), den[None, :])
        if jk is not None and jack_e is not None and jack_r is not None:
            jack_e[sl] = ms.effect[sl][:, jk].mean(-1)
            jack_r[sl] = recovered_fraction(ms.kl_patched[sl][:, jk].mean(-1),
                                            ms.kl_target[jk].mean(-1)[None, :])
    out["effect"] = eff
    out |= _interval_columns(eff, reps_e, jack_e, "effect")
    out["recovered_fraction"] = rf
    out |= _interval_columns(rf, reps_r, jack_r, "recovered_fraction")
    out["abs_effect"] = np.abs(ms.effect).mean(1)
    out["kl_source_bits"] = ms.kl_patched.mean(1)
    out["kl_target_bits"] = np.full(C, ms.kl_target.mean())
    out["kl_clean_bits"] = ms.kl_clean.mean(1)
    out["entropy_mae_bits"] = ms.entropy_err.mean(1)
    out["logit_diff"] = ms.ld.mean(1)
    gap = float((ms.ld_source - ms.ld_target).mean())
    with np.errstate(invalid="ignore", divide="ignore"):
        out["logit_diff_recovered"] = (ms.ld - ms.ld_target[None, :]).mean(1) / gap \
            if gap != 0 else np.full(C, np.nan)
    out["kl_clean_run_bits"] = ms.kl_clean_run.mean(1)
    return out


@dataclass(frozen=True)
class Tests:
    """The per-cell test of one direction: ``p`` [C] of "the evidence effect is above 0 *and*
    above the same patch from an unrelated source" (an intersection-union test: the larger of
    two one-sided t-tests over pairs, one of the effect, one of its paired difference from the
    control's on the same targets and scores), ``p_holm`` [C] over the grid, ``n_tests`` cells
    tested and ``n_effective`` (the effective number of the cells' per-pair differences:
    :func:`probes.effect_effective_number`)."""

    p: np.ndarray
    p_holm: np.ndarray
    n_tests: int
    n_effective: float


def paired_tests(evidence: Measured, control: Measured) -> Tests:
    """:class:`Tests` of ``evidence`` against ``control`` (``control.pairs`` index the evidence
    pairs it shares)."""
    pos = {int(p): i for i, p in enumerate(evidence.pairs)}
    rows = np.array([pos[int(p)] for p in control.pairs], dtype=np.int64)
    d = evidence.effect[:, rows] - control.effect
    with np.errstate(invalid="ignore", divide="ignore"):
        p_ctl = np.asarray(ttest_1samp(d, 0.0, axis=1, alternative="greater").pvalue)
        p_zero = np.asarray(ttest_1samp(evidence.effect, 0.0, axis=1,
                                        alternative="greater").pvalue)
    p = np.fmax(p_ctl.astype(float), p_zero.astype(float))  # NaN only where both are
    p = np.where(np.isfinite(p_ctl) & np.isfinite(p_zero), p, np.nan)
    return Tests(p, holm(p), int(np.isfinite(p).sum()), effect_effective_number(d).value)


@dataclass(frozen=True)
class HeldOut:
    """The best cell chosen on one half of the pairs and scored on the other, both ways, over
    ``n_splits`` seeded splits: ``effect`` and ``recovered_fraction`` (means over splits and
    halves), ``pick`` the cell chosen most often and ``pick_share`` how often."""

    effect: float
    recovered_fraction: float
    pick: int
    pick_share: float


def held_out_best(ms: Measured, cells: np.ndarray, strata: np.ndarray, n_splits: int,
                  seed: int) -> HeldOut:
    """:class:`HeldOut` over the cells ``cells`` (indices into ``ms``' rows), choosing by mean
    effect; ``strata`` [N] balances the halves (SULA's k)."""
    e, kp, kt = ms.effect[cells], ms.kl_patched[cells], ms.kl_target
    N = e.shape[1]
    rng = np.random.default_rng([seed, 11])
    effs, rfs, picks = [], [], []
    for _ in range(n_splits):
        fold = split_halves(np.ones(N, dtype=bool), strata, rng)
        for f in (0, 1):
            a, b = fold == f, fold == 1 - f
            if not a.any() or not b.any():
                continue
            best = int(np.argmax(e[:, a].mean(1)))
            picks.append(best)
            effs.append(float(e[best, b].mean()))
            with np.errstate(invalid="ignore", divide="ignore"):
                rfs.append(float(recovered_fraction(kp[best, b].mean(), kt[b].mean())))
    if not picks:
        return HeldOut(float("nan"), float("nan"), -1, float("nan"))
    counts = np.bincount(picks, minlength=len(cells))
    top = int(np.argmax(counts))
    return HeldOut(float(np.mean(effs)), float(np.nanmean(rfs)) if np.isfinite(rfs).any()
                   else float("nan"), int(cells[top]), float(counts[top] / len(picks)))


@dataclass(frozen=True)
class RankAgreement:
    """Attribution against exact patching over ``n`` cells of one site kind: Spearman ``rho``
    of their mean effects and ``worst``: the cells (indices) where they disagree most, by
    |rank difference| then |effect difference|."""

    n: int
    rho: float
    worst: list[int]


def rank_agreement(exact: np.ndarray, approx: np.ndarray, cells: np.ndarray,
                   n_worst: int = 5) -> RankAgreement:
    """:class:`RankAgreement` of mean effects ``exact`` and ``approx`` [C] over ``cells``.

    Example:
        >>> r = rank_agreement(np.array([1.0, 2, 3, 4]), np.array([1.0, 2, 4, 3]),
        ...                    np.arange(4), n_worst=2)
        >>> round(r.rho, 2), r.worst
        (0.8, [2, 3])
    """
    x, y = exact[cells], approx[cells]
    rho = float(spearman(x, y)) if len(cells) >= 3 else float("nan")
    from ...probes.correlation import average_ranks

    gap = np.abs(average_ranks(x) - average_ranks(y))
    order = np.lexsort((-np.abs(x - y), -gap))
    return RankAgreement(len(cells), rho, [int(cells[i]) for i in order[:n_worst]])

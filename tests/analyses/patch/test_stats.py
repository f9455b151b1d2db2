"""The statistics of bayesgeom patch on synthetic measurements: intervals, the ratio-of-means
recovered fraction, the per-cell test against the unrelated source, the held-out choice of the
best cell (which a best-of-many in-sample pick fails) and the unrelated sources' derangement."""

from __future__ import annotations

import numpy as np
import torch

from bayesgeom.analyses.patch.pairs import PairSet, unrelated_sources
from bayesgeom.analyses.patch.scores import Measured
from bayesgeom.analyses.patch.stats import cell_table, held_out_best, paired_tests


def _measured(effect: np.ndarray, kl_target: np.ndarray, pairs: np.ndarray | None = None,
              ) -> Measured:
    C, N = effect.shape
    nan = np.full((C, N), np.nan)
    kl_p = kl_target[None, :] - effect
    return Measured(effect, kl_p, kl_target, kl_target * 0.5, nan, nan, nan, nan,
                    np.zeros(N), np.ones(N), np.arange(N) if pairs is None else pairs)


def test_cell_table_means_intervals_and_recovered_fraction() -> None:
    rng = np.random.default_rng(0)
    kl_t = rng.uniform(1.0, 2.0, 40)
    eff = np.stack([0.5 * kl_t + rng.normal(0, 0.05, 40), rng.normal(0, 0.05, 40)])
    t = cell_table(_measured(eff, kl_t), 500, seed=1)
    assert np.allclose(t["effect"], eff.mean(1))
    assert np.allclose(t["recovered_fraction"], 1 - (kl_t[None] - eff).mean(1) / kl_t.mean())
    assert t["recovered_fraction"][0] > 0.45 and abs(t["recovered_fraction"][1]) < 0.05
    for name in ("effect", "recovered_fraction"):
        assert (t[f"{name}_low"] <= t[name]).all() and (t[name] <= t[f"{name}_high"]).all()
        assert t[f"{name}_contains_estimate"].all()
    assert t["effect_low"][0] > 0 > t["effect_low"][1]


def test_the_cell_test_needs_the_effect_above_zero_and_above_the_control() -> None:
    rng = np.random.default_rng(1)
    N = 30
    kl_t = np.ones(N)
    evidence = np.stack([0.4 + rng.normal(0, 0.1, N),      # carries the evidence
                         rng.normal(0, 0.1, N),            # nothing, but the control is worse
                         0.4 + rng.normal(0, 0.1, N)])     # as large as the control's
    control = np.stack([rng.normal(0, 0.1, N), -1.0 + rng.normal(0, 0.1, N),
                        0.4 + rng.normal(0, 0.1, N)])
    t = paired_tests(_measured(evidence, kl_t), _measured(control, kl_t))
    assert t.p_holm[0] < 1e-6
    assert t.p_holm[1] > 0.05 and t.p_holm[2] > 0.05
    assert t.n_tests == 3 and 1 <= t.n_effective <= 3


def test_the_held_out_best_falls_to_chance_where_the_in_sample_best_does_not() -> None:
    """200 cells of pure noise: the in-sample best is a selection artefact, far above 0; chosen
    on one half and scored on the other it is 0 within noise. A real cell keeps its effect."""
    rng = np.random.default_rng(2)
    N, C = 40, 200
    noise = rng.normal(0, 1.0, (C, N))
    ms = _measured(noise, np.ones(N))
    in_sample = noise.mean(1).max()
    held = held_out_best(ms, np.arange(C), np.zeros(N), n_splits=20, seed=0)
    assert in_sample > 0.4 and abs(held.effect) < 0.25
    real = noise.copy()
    real[7] += 2.0
    held = held_out_best(_measured(real, np.ones(N)), np.arange(C), np.zeros(N), 20, 0)
    assert held.pick == 7 and held.pick_share == 1.0 and held.effect > 1.5


def test_unrelated_sources_pair_equal_lengths_and_never_a_pair_with_itself() -> None:
    lengths = [3, 5, 3, 3, 5, 4]
    toks = [[1] * n for n in lengths]
    ps = PairSet("evidence", toks, toks, None, None, None, None, torch.zeros(6, 1),
                 torch.zeros(6, 1), np.zeros(6))
    rows, partner = unrelated_sources(ps, seed=0)
    assert rows.tolist() == [0, 1, 2, 3, 4]  # pair 5 is the only one of length 4
    assert all(r != p and lengths[r] == lengths[p] for r, p in zip(rows, partner, strict=True))
    again = unrelated_sources(ps, seed=0)
    assert [a.tolist() for a in again] == [rows.tolist(), partner.tolist()]

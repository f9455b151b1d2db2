"""Selection-aware controls of a best-of-heads score (probes.selection_control): heads that are
the best of many random heads fall to an ordinary head's level held out and do not beat the
best of as many random heads; a head whose attention is the exact posterior keeps its score held
out and lies above both nulls."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import posterior_consistency as pc
from bayesgeom.probes import selection_control as sc

from .conftest import exact_pattern, sula_like


def test_split_halves_is_seeded_and_balanced_within_groups():
    ok = np.arange(50) % 5 != 0
    g = np.arange(50) % 7
    a = sc.split_halves(ok, g, np.random.default_rng(3))
    assert (a[~ok] == -1).all() and set(a[ok]) == {0, 1}
    assert abs((a == 0).sum() - (a == 1).sum()) <= 1
    for v in range(7):
        sel = ok & (g == v)
        assert abs((a[sel] == 0).sum() - (a[sel] == 1).sum()) <= 1
    assert (sc.split_halves(ok, g, np.random.default_rng(3)) == a).all()


def test_cross_fitting_deflates_a_selected_best_of_random_heads_and_keeps_a_real_one():
    rng = np.random.default_rng(0)
    tv = rng.random((40, 50))  # 50 heads that know nothing: their best is luck
    cf = sc.cross_fit(tv, n_repeats=10, seed=1)
    best = sc.head_posterior_scores(tv).max()
    assert cf.held_out.shape == (10,) and (cf.folds >= 0).all()
    assert cf.held_out.mean() < best - 0.05
    assert cf.held_out.mean() == pytest.approx(sc.head_posterior_scores(tv).mean(), abs=0.05)
    tv[:, 7] = 0.01  # head 7 is right on every prompt
    cf = sc.cross_fit(tv, n_repeats=10, seed=1)
    assert (cf.picks == 7).all() and cf.held_out == pytest.approx(0.99)
    gaps = cf.fold_gaps(np.full(40, 0.5))  # a control at 0.5 on every prompt
    assert gaps == pytest.approx(0.49)


def test_undefined_prompts_are_left_out_of_both_halves():
    tv = np.random.default_rng(1).random((12, 4))
    tv[:3] = np.nan
    cf = sc.cross_fit(tv, n_repeats=3, seed=0)
    assert (cf.folds[:, :3] == -1).all() and np.isnan(cf.held_out_tv[:, :3]).all()
    assert np.isfinite(cf.held_out_tv[:, 3:]).all()


def test_max_null_p_and_quantile():
    m = np.arange(100) / 100.0
    r = sc.max_null("x", m, 0.955, n_heads=3, alpha=0.05)
    assert r.p == pytest.approx(5 / 101) and r.beaten
    assert r.quantile == pytest.approx(np.quantile(m, 0.95))
    assert sc.max_null("x", m, 0.99, 3).p == pytest.approx(2 / 101)  # a tie reaches the observed
    assert not sc.max_null("x", m, 0.5, 3).beaten
    assert np.isnan(sc.max_null("x", np.full(5, np.nan), 0.5, 3).p)


def test_occurrence_weights_sum_to_the_hypothesis_mass():
    rng, tok, hyp, _, _ = sula_like(30)
    pat = rng.dirichlet(np.ones(tok.shape[1]), size=(30, 3))
    w, h = sc.occurrence_weights(pat, tok, hyp)
    mass, count = pc.hypothesis_mass(pat, tok, hyp)
    assert np.allclose(np.einsum("nho,nok->nhk", w, (h[:, :, None] == np.arange(2))), mass)
    assert ((h >= 0).sum(1) == count.sum(1)).all()


def test_random_heads_are_dirichlet_over_the_occurrences():
    # the aggregation shortcut (mass ~ Dirichlet(count)) against heads drawn per occurrence
    rng, tok, hyp, bayes, _ = sula_like(60, seed=2)
    count = pc.hypothesis_mass(np.ones((60, 1, tok.shape[1])), tok, hyp)[1]
    fast = sc.random_heads_max(count, bayes, n_heads=5, n_draws=400, seed=0)
    slow = []
    for _ in range(400):
        pat = np.where(tok[:, None] < 2, rng.gamma(1.0, size=(60, 5, tok.shape[1])), 0.0)
        tv = pc.attention_posterior_tv(pc.hypothesis_mass(pat, tok, hyp)[0], count, bayes)
        slow.append(np.nanmax(sc.head_posterior_scores(tv)))
    assert fast.mean() == pytest.approx(np.mean(slow), abs=0.01)
    assert fast.std() == pytest.approx(np.std(slow), rel=0.25)
    # centred on uniform attention: one random head scores below it (TV is convex)
    one = sc.random_heads_max(count, bayes, n_heads=1, n_draws=400, seed=0)
    assert one.mean() < 1 - np.nanmean(pc.uniform_attention_tv(count, bayes))


def test_re_dealing_leaves_a_counting_head_as_it_is_and_breaks_an_exact_one():
    _, tok, hyp, bayes, _ = sula_like(80, seed=4)
    uniform = np.where(tok < 2, 1.0, 0.5)  # every occurrence alike
    pat = np.stack([uniform / uniform.sum(1, keepdims=True), exact_pattern(tok, bayes)], 1)
    mass, count = pc.hypothesis_mass(pat, tok, hyp)
    score = sc.head_posterior_scores(pc.attention_posterior_tv(mass, count, bayes))
    w, h = sc.occurrence_weights(pat, tok, hyp)
    only_uniform = sc.shuffled_heads_max(w[:, :1], h, count, bayes, n_draws=50, seed=0)
    assert only_uniform == pytest.approx(score[0])  # counting is unchanged by re-dealing
    both = sc.shuffled_heads_max(w, h, count, bayes, n_draws=200, seed=0)
    assert score[1] == pytest.approx(1.0, abs=0.01) and both.max() < score[1] - 0.02


def _planted(n_heads=40, seed=0, exact=False):
    """(score, held-out, uniform, Dirichlet null, re-dealt null) of ``n_heads`` heads with
    random Dirichlet attention over the prompt; with ``exact`` one of them is the posterior."""
    rng, tok, hyp, bayes, group = sula_like(150, seed=seed)
    pat = rng.dirichlet(np.ones(tok.shape[1]), size=(len(tok), n_heads))
    if exact:
        pat[:, n_heads // 2] = exact_pattern(tok, bayes)
    mass, count = pc.hypothesis_mass(pat, tok, hyp)
    tv = pc.attention_posterior_tv(mass, count, bayes)
    best = float(np.nanmax(sc.head_posterior_scores(tv)))
    held = sc.cross_fit(tv, group, n_repeats=10, seed=seed).held_out.mean()
    uni = 1 - np.nanmean(pc.uniform_attention_tv(count, bayes))
    w, h = sc.occurrence_weights(pat, tok, hyp)
    maxima = sc.random_heads_max(count, bayes, n_heads, 200, seed)
    dirichlet = sc.max_null("d", maxima, best, n_heads)
    dealt = sc.max_null("s", sc.shuffled_heads_max(w, h, count, bayes, 200, seed), best, n_heads)
    return best, held, uni, dirichlet, dealt


@pytest.mark.parametrize("seed", [0, 1])
def test_planted_best_of_many_random_heads_beats_no_selection_aware_control(seed):
    best, held, uni, dirichlet, dealt = _planted(seed=seed)
    assert held < best and held < uni  # the selection does not survive held out
    assert not dirichlet.beaten and not dealt.beaten


def test_planted_exact_posterior_head_beats_every_selection_aware_control():
    best, held, uni, dirichlet, dealt = _planted(exact=True)
    assert best > 0.99 and held == pytest.approx(best) and held > uni
    assert dirichlet.beaten and dealt.beaten and dirichlet.p == pytest.approx(1 / 201)

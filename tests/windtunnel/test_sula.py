"""SULA generator: the exact posterior (against brute-force Bayes), the expected entropies per k
the spec lists, the controls' posteriors, pairing and determinism, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bayesgeom.windtunnel.sula import (
    CARRIER_WORDS,
    CONDITIONS,
    KS,
    MASK,
    SulaError,
    cvc_words,
    draw,
    expected_entropy_bits,
    posterior_first,
    render,
)

LABELS, REMAP = ("dax", "lug"), ("mip", "wug")


def test_expected_entropies_match_the_spec():
    got = [round(expected_entropy_bits(k), 4) for k in KS]
    assert [round(g, 3) for g in got[:4]] == [1.000, 0.469, 0.258, 0.078]
    assert round(got[4], 4) == 0.0081


def test_posterior_is_bayes_rule_over_example_labels():
    a = 0.9
    for k in range(0, 6):
        for labs in itertools.product([0, 1], repeat=k):
            lik = [np.prod([a if lab == y else 1 - a for lab in labs]) for y in (0, 1)]
            brute = lik[0] / sum(lik)
            assert posterior_first(k, labs.count(0), a) == pytest.approx(brute, rel=1e-12)


def test_sampled_entropies_converge_to_the_expectation():
    d = draw(n_per_k=6000, seed=3)
    h = render(d, "main", LABELS).entropy_bits
    for k in KS:
        assert h[d.k == k].mean() == pytest.approx(expected_entropy_bits(k), abs=0.01)


def test_controls():
    d = draw(n_per_k=20, seed=42)
    main, remap, shuf, abl = (render(d, c, LABELS, REMAP) for c in CONDITIONS)
    np.testing.assert_array_equal(main.posterior, remap.posterior)
    assert [t.replace("mip", "dax").replace("wug", "lug") for t in remap.texts] == main.texts
    for flat in (shuf, abl):
        np.testing.assert_array_equal(flat.entropy_bits, np.ones(len(d)))
    assert not any(w in t.split() for t in abl.texts for w in ("dax,", "lug,"))
    assert all(t.count(MASK) == k for t, k in zip(abl.texts, d.k, strict=True))
    # shuffled labels are independent of the latent label; main's mostly agree with it
    agree_main = (d.labels == d.y[:, None])[d.labels >= 0].mean()
    assert agree_main > 0.8
    m = d.k > 0
    assert (main.k == d.k).all() and (main.texts[0].endswith(":"))
    assert all(t.split(", ")[-1].removesuffix(":") in CARRIER_WORDS for t in main.texts)
    assert m.sum() == 4 * 20


def test_draws_are_deterministic_and_seeded():
    a, b, c = draw(n_per_k=5, seed=1), draw(n_per_k=5, seed=1), draw(n_per_k=5, seed=2)
    assert render(a, "main", LABELS).texts == render(b, "main", LABELS).texts
    assert render(a, "main", LABELS).texts != render(c, "main", LABELS).texts


def test_bad_input():
    with pytest.raises(SulaError, match="alpha"):
        draw(alpha=1.0)
    with pytest.raises(SulaError, match="condition"):
        render(draw(n_per_k=1), "nope", LABELS)
    with pytest.raises(SulaError, match="remap_labels"):
        render(draw(n_per_k=1), "remap", LABELS)
    with pytest.raises(SulaError, match="differ"):
        render(draw(n_per_k=1), "remap", LABELS, ("dax", "kep"))
    with pytest.raises(SulaError, match="distinct"):
        draw(ks=(1, 1))
    assert len(set(cvc_words(50))) == 50


def test_sula_is_a_registered_task_with_the_same_prompts():
    """SULA through the task registry gives exactly the draws and posteriors of draw/render."""
    from bayesgeom.windtunnel import TASKS, SulaTask, TaskConfigError, make_task, make_token_task
    from bayesgeom.windtunnel.sula import draw, render

    assert TASKS["sula"].cls is SulaTask
    task = make_task("sula", condition="shuffled", labels=("a", "b"), remap_labels=("c", "d"))
    pp = task.posterior_prompts(10, 7)
    ref = render(draw(KS, 2, 0.9, 7), "shuffled", ("a", "b"), ("c", "d"))
    assert list(pp.prompts) == ref.texts and pp.hyp_words == ("a", "b")
    np.testing.assert_array_equal(pp.bayes, ref.posterior)
    assert pp.group_name == "k" and list(pp.group) == list(ref.k)
    assert pp.with_token_ids([5, 9]).hyp_ids.tolist() == [[5, 9]] * 10
    with pytest.raises(TaskConfigError, match="multiple of 5"):
        task.posterior_prompts(7, 0)
    with pytest.raises(TaskConfigError, match="text task"):
        make_token_task("sula")
    with pytest.raises(TaskConfigError, match="condition must be one of"):
        make_task("sula", condition="nope")

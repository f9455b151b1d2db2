"""Clean/corrupt patch pairs with exact posteriors (windtunnel.patch_pairs, patch_sula): shapes,
seeds, the null is exactly null with other tokens, an evidence edit changes one observation and
the posterior only from there on, both posteriors are the sampler's own, unrelated pairs come
from their own stream, and bad requests are one line before any draw."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from bayesgeom.infotheory import entropy_bits_from_probs, kl_bits
from bayesgeom.windtunnel import (
    PatchPairs,
    SulaError,
    TaskConfigError,
    make_task,
    make_token_task,
    pairs_problem,
    patch_pairs,
    sula_patch_pairs,
)
from bayesgeom.windtunnel.patch_kinds import KINDS, PAIR_TASKS, edit_stream_index
from bayesgeom.windtunnel.patch_pairs import EDITORS
from bayesgeom.windtunnel.seeds import Purpose, stream
from bayesgeom.windtunnel.sula import SulaTask
from bayesgeom.windtunnel.sula_config import SulaTaskConfig
from bayesgeom.windtunnel.task import TokenTask

#: the module (the package's attribute of that name is the function)
pp_module = importlib.import_module("bayesgeom.windtunnel.patch_pairs")

CASES = [
    ("bijection", {"V": 8}),
    ("bijection", {"V": 8, "layout": "paired", "L": 6}),
    ("bijection", {"V": 8, "replacement": True}),
    ("bijection", {"V": 8, "noise": 0.2}),
    ("hmm", {"K": 6}),
    ("hmm", {"K": 6, "target_window": 2}),
    ("assoc_recall", {"N": 6, "M": 2, "F": 2, "n_keys": 10, "n_values": 10}),
    ("assoc_recall", {"variant": "binding", "N": 7, "n_keys": 5, "n_values": 4}),
]
IDS = [f"{name}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for name, p in CASES]
N = 12


@pytest.fixture(scope="module")
def pairs() -> dict[tuple[int, str], PatchPairs]:
    return {(i, kind): patch_pairs(make_token_task(name, **params), N, kind, seed=3)
            for i, (name, params) in enumerate(CASES) for kind in KINDS}


def _task(i: int) -> TokenTask:
    name, params = CASES[i]
    task = make_task(name, **params)
    assert isinstance(task, TokenTask)
    return task


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_the_posterior_of_tokens_is_the_samplers_own(i):
    task = _task(i)
    b = task.sample(40, stream(0, Purpose.EVAL, 0))
    post = EDITORS[task.name].posterior(task, b.input_ids.numpy())
    assert post.dtype == np.float64
    np.testing.assert_allclose(post, b.dense_posterior().numpy(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_shapes_and_the_clean_side_is_the_samplers_batch(pairs, i, kind):
    task, p = _task(i), pairs[(i, kind)]
    Q, H, T = task.n_queries, task.n_hypotheses, task.seq_len
    assert len(p) == N and p.kind == kind and p.task == task.name
    assert p.clean_ids.shape == p.corrupt_ids.shape == (N, T)
    assert p.clean_ids.dtype == p.corrupt_ids.dtype == torch.int64
    assert p.posterior_clean.shape == p.posterior_corrupt.shape == (N, Q, H)
    assert p.posterior_clean.dtype == torch.float64
    assert p.entropy_clean_bits.shape == p.kl_bits.shape == (N, Q)
    assert p.hyp_slice == task.hyp_slice and p.edit_pos.shape == (N,)
    # the clean sequences are the pool's, with the posterior its batch carries
    pool = task.sample(pp_module.chunk_size(N, 0), stream(3, Purpose.PATCH_PAIRS, 0))
    assert torch.equal(p.query_pos, pool.query_pos)
    rows = {tuple(r): j for j, r in enumerate(pool.input_ids.tolist())}
    first = [rows[tuple(r)] for r in p.clean_ids.tolist() if tuple(r) in rows]
    assert first, "no clean sequence from the first pool chunk"
    dense = pool.dense_posterior()[first]
    mine = p.posterior_clean[[j for j, r in enumerate(p.clean_ids.tolist()) if tuple(r) in rows]]
    assert (mine - dense).abs().max() <= 1e-15
    # entropy is the batch's own, KL infotheory's on the same posteriors
    keep = [j for j, r in enumerate(p.clean_ids.tolist()) if tuple(r) in rows]
    assert torch.allclose(p.entropy_clean_bits[keep], pool.entropy_bits[first], atol=1e-12)
    assert torch.equal(p.entropy_corrupt_bits,
                       torch.from_numpy(entropy_bits_from_probs(p.posterior_corrupt.numpy())))
    fin = p.kl_bits.isfinite()
    ref = kl_bits(p.posterior_clean.numpy(), p.posterior_corrupt.numpy())
    np.testing.assert_allclose(p.kl_bits.numpy()[fin.numpy()], ref[fin.numpy()], atol=1e-12)
    half_l1 = 0.5 * (p.posterior_clean - p.posterior_corrupt).abs().sum(-1)
    assert torch.allclose(p.tvd, half_l1, atol=1e-15) and p.tvd.isfinite().all()


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_pairs_other_seed_other_pairs(pairs, i, kind):
    again = patch_pairs(_task(i), N, kind, seed=3)
    other = patch_pairs(_task(i), N, kind, seed=4)
    p = pairs[(i, kind)]
    for name in ("clean_ids", "corrupt_ids", "posterior_clean", "posterior_corrupt", "edit_pos"):
        assert torch.equal(getattr(p, name), getattr(again, name)), name
    assert not torch.equal(p.clean_ids, other.clean_ids)


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_bayes_null_pairs_keep_the_posterior_and_change_tokens(pairs, i):
    p = pairs[(i, "bayes_null")]
    assert torch.equal(p.posterior_clean, p.posterior_corrupt)
    assert (p.kl_bits == 0).all()
    changed = p.changed
    assert changed.any(1).all(), "a null pair with no token changed"
    # every change is read: before the last read position, not a causal-mask trick
    last_change = torch.where(changed, torch.arange(changed.shape[1]), -1).max(1).values
    assert (last_change < p.query_pos.max()).all()
    assert p.reads_after_edit.any(1).all()


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_evidence_changes_one_observation_and_the_posterior_from_there_on(pairs, i):
    p = pairs[(i, "evidence")]
    changed = p.changed
    assert (changed.sum(1) == 1).all()
    assert torch.equal(changed.int().argmax(1), p.edit_pos)
    diff = (p.posterior_clean - p.posterior_corrupt).abs().amax(-1)  # [N, Q]
    after = p.reads_after_edit
    assert torch.equal(after, p.query_pos[None, :] >= p.edit_pos[:, None])
    assert (diff[~after] == 0).all(), "a read before the edit changed"
    assert (diff.amax(1) > 1e-12).all(), "an evidence pair the posterior ignores"


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_unrelated_pairs_come_from_their_own_stream(pairs, i):
    task, p, ev = _task(i), pairs[(i, "unrelated")], pairs[(i, "evidence")]
    chunk = pp_module.chunk_size(N, 0)
    own = task.sample(chunk, stream(3, Purpose.PATCH_EDITS, edit_stream_index(0, "unrelated")))
    assert torch.equal(p.corrupt_ids, own.input_ids[:N])
    assert (p.posterior_corrupt - own.dense_posterior()[:N]).abs().max() <= 1e-15
    assert (p.edit_pos == -1).all()
    # the clean side is shared with the other kinds where every sequence qualifies
    if task.name == "hmm" or (task.name == "bijection" and task.cfg.layout == "sepvocab"
                              and not task.cfg.replacement):
        assert torch.equal(p.clean_ids, ev.clean_ids)
    assert not any(torch.equal(a, b) for a in p.corrupt_ids for b in p.clean_ids)


def test_hmm_null_moves_cents_between_unseen_symbols_of_a_valid_hmm(pairs):
    task = _task(4)
    p = pairs[(4, "bayes_null")]
    assert (p.changed.sum(1) == 2).all() and (p.edit_pos == -1).all()
    assert (p.changed.int().argmax(1) < task.header_len).all()
    _, Ec, obs = task.decode(p.clean_ids.numpy())
    _, Ek, _ = task.decode(p.corrupt_ids.numpy())
    for r in range(N):
        cols = np.flatnonzero((np.abs(Ec[r] - Ek[r]) > 0).any(0))
        assert len(cols) == 2 and not np.isin(cols, obs[r]).any()
        assert np.allclose(Ek[r].sum(1), 1.0) and (Ek[r] >= 0.05 - 1e-12).all()


def test_docs_tunnels_give_every_kind():
    for name, params in (("bijection", {"V": 20}), ("hmm", {"K": 20})):
        task = make_token_task(name, **params)
        for kind in KINDS:
            assert len(patch_pairs(task, 8, kind, seed=0)) == 8


def test_bad_requests_are_one_line_before_any_draw(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a sequence was drawn")

    monkeypatch.setattr(TokenTask, "sample", boom)
    bij = make_task("bijection", V=6)
    cases = [
        (bij, 0, "evidence", "positive integer"),
        (bij, -3, "evidence", "positive integer"),
        (bij, 4, "shuffled", "not offered for bijection"),
        (bij, 4, "nope", "not offered"),
        (bij, 4, "evidence", "seed must be an integer", -1),
        (make_task("long_recall"), 4, "evidence", "no patch-pair generator"),
        (make_task("bijection", V=5, L=5, layout="paired"), 4, "evidence", "use L < V"),
        (make_task("bijection", V=5, L=1), 4, "bayes_null", "L >= 2"),
        (make_task("assoc_recall", N=4, M=4, F=2, n_keys=8, n_values=8), 4, "bayes_null",
         "use M < N"),
        (make_task("assoc_recall", N=4, M=2, F=2, n_keys=8, n_values=4), 4, "evidence",
         "n_values > N"),
    ]
    for task, n, kind, match, *seed in cases:
        with pytest.raises(TaskConfigError, match=match) as e:
            patch_pairs(task, n, kind, *seed)
        assert "\n" not in str(e.value)
    with pytest.raises(TaskConfigError, match="sula_patch_pairs"):
        patch_pairs(make_task("sula"), 3)
    assert pairs_problem("sula", "shuffled", 3) is None
    assert set(EDITORS) | {"sula"} == set(PAIR_TASKS)


def test_a_dry_pool_is_one_line(monkeypatch):
    monkeypatch.setattr(pp_module, "MAX_POOL", 128)
    with pytest.raises(TaskConfigError, match="two emission symbols the sequence never shows"):
        patch_pairs(make_token_task("hmm", K=50), 4, "bayes_null")


def test_patchpairs_refuses_mismatched_lengths_and_empty_sets(pairs):
    p = pairs[(0, "evidence")]
    args = dict(task=p.task, kind=p.kind, query_pos=p.query_pos, hyp_slice=p.hyp_slice)
    with pytest.raises(TaskConfigError, match="index for index"):
        PatchPairs(clean_ids=p.clean_ids, corrupt_ids=p.corrupt_ids[:, :-1],
                   posterior_clean=p.posterior_clean, posterior_corrupt=p.posterior_corrupt,
                   edit_pos=p.edit_pos, **args)
    with pytest.raises(TaskConfigError, match="N >= 1"):
        PatchPairs(clean_ids=p.clean_ids[:0], corrupt_ids=p.corrupt_ids[:0],
                   posterior_clean=p.posterior_clean[:0], posterior_corrupt=p.posterior_corrupt[:0],
                   edit_pos=p.edit_pos[:0], **args)
    sub = p.subset([2, 0])
    assert torch.equal(sub.clean_ids, p.clean_ids[[2, 0]])


def test_the_posterior_refuses_sequences_that_state_no_bijection():
    task = make_task("bijection", V=4, L=4)
    ids = np.array([[0, 5, 1, 5, 2, 6, 3]])  # value 1 shown for keys 0 and 1
    with pytest.raises(TaskConfigError, match="two keys"):
        EDITORS["bijection"].posterior(task, ids)


def test_kl_is_infinite_where_the_supports_differ():
    p = patch_pairs(make_token_task("assoc_recall", N=6, M=2, F=2, n_keys=10, n_values=10), 4)
    # a delta moved to another value: KL = inf at the edited query, 0 at the other
    assert (torch.isinf(p.kl_bits).sum(1) == 1).all()
    assert (p.kl_bits[p.kl_bits.isfinite()] == 0).all()


# ------------------------------------------------------------------------------------- SULA
KS = (1, 2, 4)


@pytest.mark.parametrize("kind", ["evidence", "bayes_null", "shuffled", "unrelated"])
def test_sula_pairs(kind):
    ks = (2, 4, 8)
    p = sula_patch_pairs(6, kind, seed=1, ks=ks)
    again = sula_patch_pairs(6, kind, seed=1, ks=ks)
    assert p.clean_texts == again.clean_texts and p.corrupt_texts == again.corrupt_texts
    assert p.clean_texts != sula_patch_pairs(6, kind, seed=2, ks=ks).clean_texts
    assert p.k.tolist() == [2, 2, 4, 4, 8, 8]
    assert p.posterior_clean.shape == p.posterior_corrupt.shape == (6, 1, 2)
    words = set(p.label_words)
    for a, b, k in zip(p.clean_texts, p.corrupt_texts, p.k.tolist(), strict=True):
        assert a != b and a.count(":") == b.count(":") == k + 1
        if kind == "unrelated":
            continue
        wa, wb = a.split(), b.split()
        assert len(wa) == len(wb)  # carriers in place, labels one word each
        moved = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]
        assert all(x.rstrip(",") in words and y.rstrip(",") in words for x, y in moved)
        assert len(moved) == {"evidence": 1, "bayes_null": 2}.get(kind, len(moved))
    if kind == "bayes_null":
        assert torch.equal(p.posterior_clean, p.posterior_corrupt) and (p.kl_bits == 0).all()
    elif kind == "shuffled":
        assert (p.posterior_corrupt == 0.5).all()
    elif kind == "evidence":
        assert ((p.posterior_clean - p.posterior_corrupt).abs().amax((1, 2)) > 0).all()


def test_sula_clean_prompts_are_the_tasks_own():
    p = sula_patch_pairs(6, "evidence", seed=5, ks=KS)
    ref = SulaTask(SulaTaskConfig(ks=KS)).posterior_prompts(16 * len(KS), 5)
    rows = [16 * b + j for b in range(len(KS)) for j in range(2)]
    assert p.clean_texts == [ref.prompts[r] for r in rows]
    assert np.array_equal(p.posterior_clean[:, 0].numpy(), ref.bayes[rows])
    flipped = p.edit_example.tolist()
    for a, b, j in zip(p.clean_texts, p.corrupt_texts, flipped, strict=True):
        ea, eb = a.split(", "), b.split(", ")
        assert [x for x in range(len(ea)) if ea[x] != eb[x]] == [j]


@pytest.mark.parametrize("args, match", [
    ({"n": 0}, "positive integer"),
    ({"n": 4}, "not a multiple of 3"),
    ({"n": 3, "kind": "bayes_null"}, r"counts >= 2"),
    ({"n": 3, "kind": "nope"}, "not offered for sula"),
    ({"n": 3, "labels": ("dax", "two words")}, "single words"),
    ({"n": 3, "alpha": 0.4}, "alpha"),
    ({"n": 3, "seed": -2}, "seed must be"),
])
def test_sula_bad_requests_are_one_line(args, match):
    with pytest.raises(TaskConfigError, match=match) as e:
        sula_patch_pairs(ks=KS, **args)
    assert "\n" not in str(e.value)
    if match in ("not a multiple of 3", "counts >= 2", "single words", "alpha"):
        assert isinstance(e.value, SulaError)


def test_a_null_edit_the_posterior_sees_is_refused_not_kept(monkeypatch):
    """Verified, not assumed: an 'edit' that changes an emission is offered as a Bayes null;
    every pair fails the check, so the pool runs dry instead of yielding a fake null."""
    from bayesgeom.windtunnel.patch_kinds import Editor

    hmm = EDITORS["hmm"]
    fake = Editor(hmm.problem, lambda t, k, ids, rng: hmm.edit(t, "evidence", ids, rng),
                  hmm.posterior, "fake")
    monkeypatch.setitem(EDITORS, "hmm", fake)
    monkeypatch.setattr(pp_module, "MAX_POOL", 256)
    with pytest.raises(TaskConfigError, match="only 0 of 256"):
        patch_pairs(make_token_task("hmm", K=4), 4, "bayes_null")


def test_the_first_pairs_do_not_depend_on_n_where_every_sequence_qualifies():
    task = make_token_task("bijection", V=8)
    small = patch_pairs(task, 5, "evidence", seed=2)
    large = patch_pairs(task, 20, "evidence", seed=2)
    assert torch.equal(small.corrupt_ids, large.corrupt_ids[:5])
    assert torch.equal(small.posterior_corrupt, large.posterior_corrupt[:5])

"""Named seed streams: disjoint across purposes and indices by construction, deterministic, and
what the library's own call sites (training, evaluation, prompt cuts) actually draw from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.bijection import BijectionTask
from bayesgeom.windtunnel.seeds import INDEX_LIMIT, Purpose, seed_sequence, stream, tag
from bayesgeom.windtunnel.training import TrainConfig, train

SEEDS = (0, 1, 7, 2**32, 2**64 + 3)
INDICES = (0, 1, 2, 1_000_003, INDEX_LIMIT - 1)


def _draw(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(x) for x in rng.integers(0, 2**63, size=4))


def test_plain_numpy_seed_tuples_alias():
    """Why the streams exist: zero padding and multi-word ints make plain seeds collide."""
    for s in (0, 5):
        assert _draw(np.random.default_rng(s)) == _draw(np.random.default_rng((s, 0)))
        assert _draw(np.random.default_rng((s, 7))) == _draw(np.random.default_rng((s, 7, 0)))
    assert _draw(np.random.default_rng(2**32)) == _draw(np.random.default_rng((0, 1)))


def test_streams_of_different_seed_purpose_or_index_are_pairwise_different():
    keys = list(itertools.product(SEEDS, Purpose, INDICES))
    states = {k: tuple(seed_sequence(*k).generate_state(4).tolist()) for k in keys}
    draws = {k: _draw(stream(*k)) for k in keys}
    assert len(set(states.values())) == len(keys)
    assert len(set(draws.values())) == len(keys)
    # nor does any stream replay a plain int or (seed, i) tuple stream, the old call forms
    plain = {_draw(np.random.default_rng(s)) for s in SEEDS}
    plain |= {_draw(np.random.default_rng((s, i))) for s in SEEDS for i in range(8)}
    assert not plain & set(draws.values())


def test_evaluation_is_not_training_step_0_any_more():
    """The old alias: evaluation drawn with ``seed`` equalled training step 0 ``(seed, 0)``."""
    for s in SEEDS:
        ev, tr = stream(s, Purpose.EVAL, 0), stream(s, Purpose.TRAIN, 0)
        assert _draw(ev) != _draw(tr)
        assert not np.array_equal(seed_sequence(s, Purpose.EVAL).generate_state(4),
                                  seed_sequence(s, Purpose.TRAIN).generate_state(4))


def test_spawn_key_is_the_six_word_encoding():
    """SeedSequence pads a spawned entropy to its 4-word pool: the hashed words are
    [seed as 4 words, tag, index], so only that literal six-tuple reproduces a stream."""
    ss = seed_sequence(5, Purpose.TRAIN, 3)
    same = np.random.SeedSequence((5, 0, 0, 0, tag(Purpose.TRAIN), 3))
    assert np.array_equal(ss.generate_state(4), same.generate_state(4))
    assert len({tag(p) for p in Purpose}) == len(Purpose)


def test_streams_are_deterministic():
    t = make_task("bijection", V=8)
    a = t.sample(16, stream(3, Purpose.TRAIN, 5))
    b = t.sample(16, stream(3, Purpose.TRAIN, 5))
    c = t.sample(16, stream(3, Purpose.TRAIN, 6))
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.posterior, b.posterior)
    assert not torch.equal(a.input_ids, c.input_ids)
    p, q = t.cut_at_queries(10, 3), t.cut_at_queries(10, 3)
    assert p.tokens == q.tokens and np.array_equal(p.query, q.query)
    assert t.posterior_prompts(10, 3).prompts == t.posterior_prompts(10, 3).prompts


@pytest.mark.parametrize("seed, index", [(-1, 0), (2**128, 0), (0, -1), (0, INDEX_LIMIT)])
def test_out_of_range_seeds_and_indices_are_refused(seed, index):
    with pytest.raises(ValueError, match="must be in"):
        stream(seed, Purpose.EVAL, index)


def test_library_call_sites_draw_from_their_own_streams(tmp_path, monkeypatch):
    """Every batch that training, its evaluations, the query-cut pool and the posterior prompts
    draw for seed 0 (all of 8 sequences): each comes from its named stream, and batches from
    different streams share no data (before, the pool equalled training step 0). The periodic
    and final evaluations reuse one held-out set by design."""
    drawn: list[tuple[tuple[int, ...], torch.Tensor]] = []
    orig = BijectionTask._sample

    def record(self, rng, n):
        b = orig(self, rng, n)
        drawn.append((tuple(rng.bit_generator.seed_seq.spawn_key), b.input_ids.clone()))
        return b

    monkeypatch.setattr(BijectionTask, "_sample", record)
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, preset="tiny", steps=4,
                      batch_size=8, warmup_steps=1, eval_every=2, eval_size=8,
                      final_eval_size=8, ckpt_every=4, seed=0)
    train(cfg, tmp_path / "r", progress=False)
    task = make_task("bijection", V=6)
    task.cut_at_queries(8, 0)
    task.posterior_prompts(8, 0)
    key = {p: tag(p) for p in Purpose}
    t, e = key[Purpose.TRAIN], key[Purpose.EVAL]
    assert [k for k, _ in drawn] == [
        (t, 0), (t, 1), (e, 0), (t, 2), (t, 3), (e, 0), (e, 0),
        (key[Purpose.QUERY_CUTS], 0), (key[Purpose.POSTERIOR_PROMPTS], 0)]
    for (ka, a), (kb, b) in itertools.combinations(drawn, 2):
        assert torch.equal(a, b) == (ka == kb), (ka, kb)

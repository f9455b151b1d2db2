"""Stacked direction edits: replica k of a repeated batch equals the one edit along direction k
(per-head site, positions "last"), edits that differ in more than their direction are refused,
a non-finite edit raises naming the replica, and the hooks are gone afterwards."""

from __future__ import annotations

import pytest
import torch
import transformers

from bayesgeom import interp
from bayesgeom.interp.edits import project_out, shift
from bayesgeom.interp.intervention_kinds import DirectionEdit
from bayesgeom.interp.stacked_edits import repeat_batch, stacked_edits


def _model() -> interp.InterpModel:
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=8, vocab_size=13, n_positions=16)
    return interp.InterpModel(transformers.GPT2LMHeadModel(cfg).eval())


def test_each_replica_is_its_own_edit():
    m = _model()
    b = m.batch([[1, 2, 3, 4], [5, 6], [7, 8, 9]])
    dirs = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    reps = [[DirectionEdit("attn.1.v", d, project_out, fraction=0.7, positions="last")]
            for d in dirs]
    with stacked_edits(m, reps) as k:
        z = m.forward(repeat_batch(b, k), logits_to_keep=1)
    assert not m.checked_edits
    clean = m.forward(b, logits_to_keep=1)
    for j, rep in enumerate(reps):
        with m.intervene(*rep):
            one = m.forward(b, logits_to_keep=1)
        torch.testing.assert_close(z[3 * j:3 * (j + 1)], one, atol=1e-6, rtol=1e-5)
        assert (one - clean).abs().max() > 1e-5
    torch.testing.assert_close(m.forward(b, logits_to_keep=1), clean)  # hooks removed


def test_refuses_edits_that_differ_in_more_than_direction():
    m = _model()
    a = DirectionEdit("resid_post.0", torch.ones(8), project_out)
    other = DirectionEdit("resid_post.0", torch.ones(8), shift, amount=1.0)
    with pytest.raises(interp.InterpError, match="differ only in their directions"), \
            stacked_edits(m, [[a], [other]]):
        pass
    with pytest.raises(interp.InterpError, match="not 2 replicas"), stacked_edits(m, [[a], [a]]):
        m.forward(m.batch([[1, 2, 3]]))


def test_a_non_finite_edit_raises():
    m = _model()
    big = [[DirectionEdit("resid_post.0", torch.ones(8), shift, amount=1e39)]] * 2
    with pytest.raises(interp.NonFiniteActivationError, match="replica 0"), \
            stacked_edits(m, big) as k:
        m.forward(repeat_batch(m.batch([[1, 2]]), k))
    assert not m.checked_edits

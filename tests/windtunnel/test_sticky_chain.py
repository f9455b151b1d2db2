"""The sticky Markov chain of Paper II §2.3: P as the authors build it (row 0, the 0.3498
self-transition), the 1.8292-nat floor, the authors' seeded sequences and initialisation, and
the two models' sizes."""

from __future__ import annotations

import math

import pytest
import torch

from bayesgeom.windtunnel import sticky_chain as sc

ROW0 = [0.3498, 0.1660, 0.0830, 0.0553, 0.0415, 0.0553, 0.0830, 0.1660]


def test_transition_matrix_row0_and_effective_self_transition():
    p = sc.transition_matrix()
    assert p.shape == (8, 8)
    assert torch.allclose(p.sum(1), torch.ones(8), atol=1e-6)
    assert torch.allclose(p[0], torch.tensor(ROW0), atol=1e-4)
    assert torch.allclose(p.diagonal(), torch.full((8,), 0.3498), atol=1e-4)  # not 0.3
    assert torch.allclose(p.diagonal(), torch.full((8,), 0.3 + 0.7 * 0.3 / (0.3 + 2 * (
        1 + 1 / 2 + 1 / 3) + 1 / 4)), atol=1e-6)
    assert torch.allclose(p[3], p[0].roll(3), atol=1e-6)  # circulant


def test_floor_is_the_unweighted_mean_row_entropy():
    assert sc.floor_nats() == pytest.approx(1.8292, abs=1e-4)
    assert sc.floor_nats() / math.log(2) == pytest.approx(2.639, abs=1e-3)
    p = sc.transition_matrix().double()
    assert sc.floor_nats() == pytest.approx(float(-(p * p.log()).sum(1).mean()), abs=1e-9)


def _authors_sequence(seed: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The authors' order of draws on the global RNG (reference for the generators)."""
    p = sc.transition_matrix()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        mu = torch.randn(8, 20)
        torch.manual_seed(seed)
        seq = [torch.randint(8, (1,)).item()]
        for _ in range(length - 1):
            seq.append(torch.multinomial(p[seq[-1]], 1).item())
        states = torch.tensor(seq)
        return states, mu[states[:-1]] + torch.randn(length - 1, 20)


def test_sequence_matches_the_authors_draws_and_is_deterministic():
    s = sc.make_sequence(2024, 300)
    states, x = _authors_sequence(2024, 300)
    assert torch.equal(s.states, states) and torch.equal(s.inputs, x)
    assert torch.equal(s.targets, states[1:])
    again = sc.make_sequence(2024, 300)
    assert torch.equal(again.inputs, s.inputs) and torch.equal(again.states, s.states)
    assert not torch.equal(sc.make_sequence(42, 300).states, s.states)
    full = sc.make_sequence(42)
    assert full.inputs.shape == (1999, 20) and full.targets.shape == (1999,)
    assert full.targets.dtype == torch.int64 and int(full.states.max()) < 8


def test_single_head_has_820_params_and_the_authors_init():
    m = sc.SingleHeadAttention(1337)
    assert sc.n_params(m) == 820
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1337)
        want = [torch.randn(*s) * 0.1 for s in ((20, 10), (20, 10), (20, 15), (15, 8))]
    for w, p in zip(want, (m.W_Q, m.W_K, m.W_V, m.W_O), strict=True):
        assert torch.equal(w, p.data)


def test_single_head_is_causal():
    m = sc.SingleHeadAttention(0)
    x = sc.make_sequence(7, 40).inputs
    logits, alpha = m(x)
    assert logits.shape == (39, 8) and torch.allclose(alpha.sum(1), torch.ones(39), atol=1e-6)
    assert float(alpha.detach().triu(1).abs().max()) == 0.0
    y = x.clone()
    y[20:] += 5.0
    assert torch.allclose(m(y)[0][:20], logits[:20], atol=1e-6)
    assert not torch.allclose(m(y)[0][20:], logits[20:], atol=1e-3)


def test_deep_variant_size_and_no_position_signal():
    torch.manual_seed(0)
    m = sc.DeepStickyTransformer().eval()
    # the authors' 201,928 plus the body's unused 1-row token table
    assert sc.n_params(m) == 201_928 + sc.UNUSED_PARAMS == 201_992
    x = sc.make_sequence(3, 30).inputs
    with torch.no_grad():
        out = m(x)
        same = m(x[4].expand(30, 20))  # one input repeated: every position alike
        changed = x.clone()
        changed[20:] += 3.0
        later = m(changed)
    assert out.shape == (29, 8)
    assert all(layer.attention.rotary_ndims == 0 for layer in m.body.layers)  # no RoPE
    assert torch.allclose(same, same[0].expand(30, 8), atol=1e-5)  # no absolute position signal
    assert torch.allclose(later[:20], out[:20], atol=1e-5)  # causal
    assert not torch.allclose(later[20:], out[20:], atol=1e-3)

"""The shared base of the hand-written wind-tunnel LMs: tied head, and the starting weights
each declares (N(0, 0.02²) where ``normal_init`` says, LayerNorms at (1, 0), LSTMs as torch)."""

import math

import pytest
import torch
from torch import nn

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.tied_lm import TiedEmbeddingLM


@pytest.mark.parametrize("arch", ["mlp-position", "mlp-flat", "lstm"])
def test_starting_weights_follow_the_declared_init(arch):
    m = build_model(make_task("bijection", V=6), arch, "tiny", seed=3)
    assert isinstance(m, TiedEmbeddingLM)
    assert m.get_input_embeddings() is m.embed and m.get_output_embeddings() is m.lm_head
    assert abs(float(m.embed.weight.std()) - 0.02) < 0.005
    for mod in m.modules():
        if isinstance(mod, nn.LayerNorm):
            assert torch.equal(mod.weight, torch.ones_like(mod.weight))
            assert torch.equal(mod.bias, torch.zeros_like(mod.bias))
        elif isinstance(mod, nn.Linear) and mod.bias is not None:
            assert torch.equal(mod.bias, torch.zeros_like(mod.bias))
        elif isinstance(mod, nn.LSTM):
            bound = 1 / math.sqrt(mod.hidden_size)
            assert all(float(p.abs().max()) <= bound for p in mod.parameters())
            assert any(float(p.abs().max()) > 0.9 * bound for p in mod.parameters())


def test_a_tied_head_is_drawn_once_as_the_embedding():
    m = build_model(make_task("bijection", V=6), "lstm", "tiny", seed=3)
    assert m.lm_head.weight is m.embed.weight
    again = build_model(make_task("bijection", V=6), "lstm", "tiny", seed=3)
    assert all(torch.equal(a, b) for a, b in zip(m.state_dict().values(),
                                                  again.state_dict().values(), strict=True))

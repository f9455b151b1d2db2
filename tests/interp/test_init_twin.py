"""The random-initialisation twin: same class and config, the family's own init, seeded."""

import pytest
import torch

from bayesgeom import interp


@pytest.mark.parametrize("family", ["llama", "gpt_neox", "phi"])
def test_twin_is_the_same_architecture_freshly_initialised(tiny_models, family):
    trained = interp.load(tiny_models[family].path)  # itself a seed-0 random init
    twin = interp.random_init_twin(trained, seed=7)
    assert type(twin.hf) is type(trained.hf)
    assert twin.hf.config.to_dict() == trained.hf.config.to_dict()
    assert twin.info.source == "random-init" and "random init" in twin.info.name
    assert twin.tokenizer is trained.tokenizer and twin.sites() == trained.sites()
    shapes = {n: p.shape for n, p in trained.hf.named_parameters()}
    assert {n: p.shape for n, p in twin.hf.named_parameters()} == shapes
    assert twin.weights_digest() != trained.weights_digest()
    # the same prompts run through both
    a = trained.logits(["hello world"])
    b = twin.logits(["hello world"])
    assert a.shape == b.shape and not torch.allclose(a, b)


def test_twin_uses_the_family_init_not_an_iid_stand_in(tiny_models):
    """The fixtures are built with initializer_range 0.2; HF's Llama init draws linear weights
    from N(0, initializer_range) and sets RMSNorm weights to 1."""
    twin = interp.random_init_twin(interp.load(tiny_models["llama"].path), seed=1)
    attn = twin.hf.model.layers[0].self_attn
    w = torch.cat([attn.q_proj.weight.flatten(), attn.k_proj.weight.flatten(),
                   attn.o_proj.weight.flatten()])
    assert float(w.detach().std()) == pytest.approx(0.2, rel=0.15)
    assert torch.equal(twin.hf.model.norm.weight, torch.ones_like(twin.hf.model.norm.weight))


def test_twin_is_deterministic_in_its_seed_and_leaves_the_global_rng_alone(tiny_models):
    trained = interp.load(tiny_models["windtunnel"].path)
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = interp.random_init_twin(trained, seed=4)
    after = torch.rand(3)
    assert torch.equal(before, after)  # the caller's random stream is untouched
    assert a.weights_digest() == interp.random_init_twin(trained, seed=4).weights_digest()
    assert a.weights_digest() != interp.random_init_twin(trained, seed=5).weights_digest()


def test_twin_keeps_an_attached_task_and_the_dtype(tiny_models):
    trained = interp.load(tiny_models["windtunnel"].path)
    trained.hf.double()
    trained.task = object()
    twin = interp.random_init_twin(trained)
    assert twin.task is trained.task
    assert next(twin.hf.parameters()).dtype == torch.float64

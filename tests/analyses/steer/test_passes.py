"""Edited passes stacked as replicas of one forward (``Runner.edited_many``) give the effects of
one edit at a time (``Runner.edited``): logits of every effect and the edited activations, for
every condition kind, on a wind tunnel and a tiny Llama, in stacks of one, several and all."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bayesgeom import interp
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.analyses.steer.passes import Runner
from bayesgeom.analyses.steer.run import SteerConfig, posterior_prompts
from bayesgeom.analyses.steer.scores import Condition

from .test_run import _text_prompts

CONDITIONS = [Condition("cut", 0.5), Condition("keep_only", float("nan")),
              Condition("shift", -2.0)]


def _directions(d: int, n: int, layers: int) -> list[list[torch.Tensor]]:
    g = torch.Generator().manual_seed(3)
    return [[torch.randn(d, generator=g, dtype=torch.float64) for _ in range(layers)]
            for _ in range(n)]


def _same(runner: Runner, cond: Condition, dirs: list[list[torch.Tensor]], positions: str,
          ) -> None:
    sigmas = [1.3] * len(runner.layers)
    edits = [cond.interventions(runner.sites, ds, sigmas, positions) for ds in dirs]
    stacked = list(runner.edited_many(edits))
    assert len(stacked) == len(edits)
    for ivs, got in zip(edits, stacked, strict=True):
        want = runner.edited(ivs)
        assert list(got) == list(want)
        for eff, po in want.items():
            torch.testing.assert_close(got[eff].logits, po.logits, atol=2e-5, rtol=1e-5)
            assert set(got[eff].acts) == set(po.acts)
            for L, a in po.acts.items():
                np.testing.assert_allclose(got[eff].acts[L], a, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("max_stack", [1, 3, None])
def test_stacked_passes_equal_one_edit_at_a_time_on_a_wind_tunnel(windtunnel_run, max_stack):
    m = open_model(windtunnel_run)
    pp = posterior_prompts(SteerConfig(model=str(windtunnel_run), out="unused", n_prompts=40), m)
    runner = Runner(m, pp, ["attn.1.v"], [1], batch_size=16, norm_frozen=True,
                    direct_path=True, progress=False)
    clean = runner.clean()
    assert runner.frozen_by_head and runner.offset is not None  # rescaled logits, checked
    runner.max_stack = max_stack
    dirs = _directions(clean.acts[1].shape[1], 5, 1)
    for cond in CONDITIONS:
        _same(runner, cond, dirs, "all")


@pytest.mark.parametrize("positions", ["all", "last"])
def test_stacked_passes_equal_one_edit_at_a_time_on_two_llama_layers(text_models, positions):
    m = interp.load(text_models["llama"])
    runner = Runner(m, _text_prompts(m, 20), ["resid_post.0", "resid_post.1"], [0, 1],
                    batch_size=8, norm_frozen=True, progress=False, positions=positions)
    clean = runner.clean()
    assert runner.frozen_by_head and runner.offset is not None and runner.stack_size(4) == 4
    for cond in CONDITIONS:
        _same(runner, cond, _directions(clean.acts[0].shape[1], 4, 2), positions)
    runner.offset = None  # the norm-frozen logits through the head, stacked
    _same(runner, CONDITIONS[0], _directions(clean.acts[0].shape[1], 3, 2), positions)
    runner.frozen_by_head = False  # the second forward with the frozen norm, stacked
    _same(runner, CONDITIONS[0], _directions(clean.acts[0].shape[1], 3, 2), positions)


def test_a_head_that_is_not_linear_in_the_norm_output_gets_no_rescaling(text_models):
    m = interp.load(text_models["llama"])
    head = m.hf.get_output_embeddings()
    handle = head.register_forward_hook(lambda mod, a, out: 2 * torch.tanh(out / 2))
    try:  # soft-capped logits (Gemma 2's kind): rescaling them would be wrong
        runner = Runner(m, _text_prompts(m, 10), ["attn.1.v"], [1], batch_size=8,
                        norm_frozen=True, progress=False)
        clean = runner.clean()
        assert runner.frozen_by_head and runner.offset is None
        _same(runner, CONDITIONS[0], _directions(clean.acts[1].shape[1], 3, 1), "all")
    finally:
        handle.remove()


def test_edits_that_differ_in_more_than_direction_run_one_at_a_time(text_models):
    m = interp.load(text_models["llama"])
    runner = Runner(m, _text_prompts(m, 10), ["attn.1.v"], [1], batch_size=8,
                    norm_frozen=False, progress=False)
    clean = runner.clean()
    (a,), (b,) = _directions(clean.acts[1].shape[1], 2, 1)
    edits = [Condition("cut", 1.0).interventions(runner.sites, [a], [1.0], "all"),
             Condition("shift", 1.0).interventions(runner.sites, [b], [1.0], "all")]
    got = list(runner.edited_many(edits))
    for ivs, g in zip(edits, got, strict=True):
        torch.testing.assert_close(g["total"].logits, runner.edited(ivs)["total"].logits)

"""Ablations through interp (issue 12): ZeroHead, ZeroSublayer, BypassLayer on the tiny GPT-2
wind tunnel, checked against direct computations."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import BypassLayer, ZeroHead, ZeroSublayer, ablate, cumulative_bypass


@pytest.fixture(scope="module")
def wt(tiny_models):
    return interp.load(tiny_models["windtunnel"].path)


@pytest.fixture(scope="module")
def ids(wt_prompts):
    return wt_prompts[:, :9].clone()


def logits(m, ids):
    with torch.no_grad():
        return m.hf(ids).logits.float()


def z_of(m, ids, layer):
    store = {}

    def grab(x):
        store["z"] = x.detach().clone()

    with m.hooks([(f"attn.{layer}.z", grab)]):
        logits(m, ids)
    return store["z"]


def test_zero_head_changes_only_that_head(wt, ids):
    clean_z, clean = z_of(wt, ids, 0), logits(wt, ids)
    seen = {}

    def grab(x):  # registered after the ablation: sees the ablated z
        seen["z"] = x.detach().clone()

    with ablate(wt, ZeroHead("attn.0.z", 1)) as h, wt.hooks([("attn.0.z", grab)]):
        ablated = logits(wt, ids)
    z = seen["z"]
    assert z.shape == clean_z.shape and z.shape[2] == 2
    assert torch.equal(z[:, :, 0], clean_z[:, :, 0])
    assert torch.all(z[:, :, 1] == 0) and clean_z[:, :, 1].abs().max() > 0
    assert (ablated - clean).abs().max() > 1e-4
    assert h.effects[0].rows == ids.numel() and not h.nil_effects()
    assert torch.equal(logits(wt, ids), clean)  # hooks removed on exit


def test_zero_head_equals_zeroing_out_projection_rows(wt, ids):
    """Zeroing head h = removing its rows of the out-projection's input (direct computation)."""
    clean = logits(wt, ids)
    attn = wt.hf.transformer.h[0].attn
    dh = attn.head_dim
    w = attn.c_proj.weight.data
    saved = w.clone()
    try:
        w[dh:2 * dh] = 0  # GPT-2 Conv1D: weight [in, out]; head 1's input rows
        direct = logits(wt, ids)
    finally:
        w.copy_(saved)
    with ablate(wt, ZeroHead("attn.0.z", 1)):
        via = logits(wt, ids)
    torch.testing.assert_close(via, direct, atol=1e-5, rtol=1e-5)
    assert torch.equal(logits(wt, ids), clean)


def test_bypass_all_layers_is_embedding_only(wt, ids):
    hf = wt.hf
    with torch.no_grad():
        pos = torch.arange(ids.shape[1])
        emb = hf.transformer.wte(ids) + hf.transformer.wpe(pos)[None]
        direct = hf.lm_head(hf.transformer.ln_f(emb)).float()
    for ab in (BypassLayer("*"), cumulative_bypass(-1), cumulative_bypass(wt.n_layers - 1),
               BypassLayer([0, 1])):
        with ablate(wt, ab):
            got = logits(wt, ids)
        torch.testing.assert_close(got, direct, atol=1e-5, rtol=1e-5)
    # bypassing layer 0 alone is not embedding-only
    with ablate(wt, BypassLayer(0)):
        assert (logits(wt, ids) - direct).abs().max() > 1e-4


def test_bypass_equals_zeroing_both_sublayers(wt, ids):
    with ablate(wt, BypassLayer(1)):
        a = logits(wt, ids)
    with ablate(wt, ZeroSublayer(["attn_out.1", "mlp_out.1"])):
        b = logits(wt, ids)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_zero_attention_everywhere_is_attention_free(wt, ids):
    other = ids.clone()
    other[:, 0] = (ids[:, 0] + 1) % 6
    assert (logits(wt, ids)[:, -1] - logits(wt, other)[:, -1]).abs().max() > 1e-4
    with ablate(wt, ZeroSublayer("attn_out.*")):
        a, b = logits(wt, ids), logits(wt, other)
        mid = logits(wt, ids[:, :5])
    torch.testing.assert_close(a[:, -1], b[:, -1], atol=0, rtol=0)
    assert (a[:, 0] - b[:, 0]).abs().max() > 1e-4  # token 0's own position still sees it
    torch.testing.assert_close(a[:, :5], mid, atol=1e-5, rtol=1e-5)


def test_zero_mlp_changes_output_and_positions(wt, ids):
    clean = logits(wt, ids)
    with ablate(wt, ZeroSublayer("mlp_out.0", positions="last")) as h:
        a = logits(wt, ids)
    assert torch.equal(a[:, :-1], clean[:, :-1])
    assert (a[:, -1] - clean[:, -1]).abs().max() > 1e-4
    assert h.effects[0].rows == ids.shape[0]


def test_mixes_with_interventions_and_removes_on_error(wt, ids):
    clean = logits(wt, ids)
    u = torch.randn(wt.d_model)
    with ablate(wt, ZeroHead("attn.*.z", [0]), interp.ProjectOut("resid_post.0", u)) as h:
        assert (logits(wt, ids) - clean).abs().max() > 0
    assert len(h.effects) == 2
    with pytest.raises(RuntimeError), ablate(wt, BypassLayer(0)):
        raise RuntimeError("boom")
    assert torch.equal(logits(wt, ids), clean)


def test_bad_sites_and_nil(wt, ids):
    with pytest.raises(interp.InterpError, match="attn_out"):
        ablate(wt, ZeroSublayer("resid_post.0"))
    with pytest.raises(interp.InterpError, match="heads"):
        ablate(wt, ZeroHead("attn.0.z", 5))
    with pytest.raises(interp.InterpError, match="ablate"):
        ablate(wt, "attn.0.z")  # type: ignore[arg-type]
    with pytest.raises(interp.NilInterventionError), ablate(wt, ZeroHead("attn.0.z", 0),
                                                            strict=True):
        pass  # never ran
    with pytest.warns(interp.NilInterventionWarning), ablate(wt, ZeroHead("attn.0.z", 0)):
        pass

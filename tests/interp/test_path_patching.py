"""Path patching: sender -> logits is the target's final residual stream plus the sender's change
through the model's own final norm and head (built here by hand, per-head shares from the
out-projection's weight slices); it equals full activation patching where nothing but the norm
lies downstream (the last MLP; the last attention of a parallel-residual block) and where the
receiver is the next block's input; a block with post-norms is refused."""

from __future__ import annotations

import pytest
import torch
import transformers

from bayesgeom import interp
from bayesgeom.interp import PatchCell, activation_patch, capture, logit_diff_score, path_patch
from bayesgeom.interp.errors import InterpError, UnknownSiteError

GOOD, BAD = 5, 7
CLEAN = [[11, 40, 52, 63, 71, 90], [12, 33, 44, 57], [14, 22, 35, 46, 58, 69, 80]]
CORRUPT = [[11, 40, 52, 88, 71, 90], [12, 39, 44, 57], [15, 22, 35, 46, 58, 69, 80]]


def _parts(hf, family):
    if family == "llama":
        return hf.model.norm, hf.lm_head, lambda L: hf.model.layers[L].self_attn.o_proj
    return hf.gpt_neox.final_layer_norm, hf.get_output_embeddings(), \
        lambda L: hf.gpt_neox.layers[L].attention.dense


def _by_hand(m, family, cell, position=None):
    """[N] logit differences: unembed(final residual + Δ) at the last token, one pair at a
    time, Δ = the sender's source − target output (a head's through its W_O columns)."""
    norm, head, out_proj = _parts(m.hf, family)
    sites = ["resid_post.-1", cell.site]
    out = []
    for t, s in zip(CORRUPT, CLEAN, strict=True):
        a_t = capture(m, [t], sites, "all", progress=False)
        a_s = capture(m, [s], sites, "all", progress=False)
        d = a_s[cell.site] - a_t[cell.site]  # [T, D] or [T, H, dh]
        if cell.kind == "attn.z":
            dh = d.shape[-1]
            w = out_proj(cell.layer).weight[:, cell.head * dh:(cell.head + 1) * dh]  # [D, dh]
            d = d[:, cell.head] @ w.T
        keep = torch.zeros(len(t), 1)
        keep[len(t) - 1 if position is None else position] = 1
        h = a_t["resid_post.1"][-1] + (d * keep)[-1]
        with torch.no_grad():
            z = head(norm(h[None, None]))[0, 0]
        out.append(float(z[GOOD] - z[BAD]))
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_sender_to_logits_is_the_final_residual_plus_the_delta(family, tiny_models):
    m = interp.load(tiny_models[family].path)
    senders = [PatchCell("attn_out.0", 0), PatchCell("mlp_out.0", 0),
               PatchCell("attn.0.z", 0, head=1), PatchCell("attn.1.z", 1, head=3),
               PatchCell("mlp_out.1", 1, position=-1), PatchCell("attn_out.0", 0, position=0)]
    r = path_patch(m, CORRUPT, CLEAN, senders, "logits", logit_diff_score(GOOD, BAD),
                   batch_size=2)
    assert r.method == "path" and r.receiver == "logits" and r.cells == tuple(senders)
    for i, c in enumerate(senders[:-1]):
        torch.testing.assert_close(r.value()[i], _by_hand(m, family, c), atol=2e-5, rtol=1e-5,
                                   msg=c.label)
    # a sender at the first position writes nothing into the last position's residual stream
    assert torch.equal(r.values[-1], r.target)
    assert r.effect()[:-1].abs().max() > 1e-3


@pytest.mark.parametrize("family, site", [("llama", "mlp_out.1"), ("gpt_neox", "mlp_out.1"),
                                          ("gpt_neox", "attn_out.1")])
def test_equals_activation_patching_at_the_last_layer(family, site, tiny_models):
    """Nothing but the final norm reads the last MLP (or a parallel block's attention)."""
    m = interp.load(tiny_models[family].path)
    cells = [PatchCell.at(site), PatchCell.at(site, position=-1)]
    score = logit_diff_score(GOOD, BAD)
    path = path_patch(m, CORRUPT, CLEAN, cells, "logits", score)
    full = activation_patch(m, CORRUPT, CLEAN, cells, score)
    torch.testing.assert_close(path.values, full.values, atol=1e-5, rtol=1e-5)


def test_receiver_the_next_block_input(tiny_models):
    m = interp.load(tiny_models["llama"].path)
    score = logit_diff_score(GOOD, BAD)
    cells = [PatchCell("mlp_out.0", 0), PatchCell("mlp_out.0", 0, position=1)]
    path = path_patch(m, CORRUPT, CLEAN, cells, "resid_pre.1", score)
    assert path.receiver == "resid_pre.1"
    torch.testing.assert_close(path.values, activation_patch(m, CORRUPT, CLEAN, cells, score)
                               .values, atol=1e-5, rtol=1e-5)
    # the attention's path to block 1 skips block 0's MLP, so it is not its total effect
    attn = [PatchCell("attn_out.0", 0)]
    direct = path_patch(m, CORRUPT, CLEAN, attn, "resid_pre.1", score).values
    total = activation_patch(m, CORRUPT, CLEAN, attn, score).values
    assert (direct - total).abs().max() > 1e-4


def test_refuses_what_it_cannot_path(tiny_models):
    m = interp.load(tiny_models["llama"].path)
    score = logit_diff_score(GOOD, BAD)
    for sender, receiver, err in [("resid_pre.0", "logits", UnknownSiteError),
                                  ("attn_out.1", "resid_pre.1", UnknownSiteError),
                                  ("attn_out.0", "resid_post.1", UnknownSiteError),
                                  ("mlp_out.2", "logits", UnknownSiteError)]:
        with pytest.raises(err) as info:
            path_patch(m, CORRUPT, CLEAN, sender, receiver, score)
        assert "\n" not in str(info.value)
    cfg = transformers.Gemma2Config(vocab_size=100, hidden_size=32, intermediate_size=64,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=2, head_dim=8)
    torch.manual_seed(0)
    gemma = interp.InterpModel(transformers.Gemma2ForCausalLM(cfg))  # norms after sublayers
    with pytest.raises(InterpError, match="residual stream"):
        path_patch(gemma, CORRUPT, CLEAN, "attn_out.0", "logits", score)

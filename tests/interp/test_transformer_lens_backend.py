"""The HF-hook and TransformerLens ``TransformerBridge`` backends yield identical tensors for every
site, family by family (TransformerLens is imported here only; the import takes seconds).

Bit-identical for GPT-NeoX, Phi, Llama and Mistral. For GPT-2 (the wind tunnel) TransformerLens'
adapter re-splits the fused ``c_attn`` into three separate matmuls, so sites agree to float32
rounding (measured max |diff| 1.2e-7 on the logits), not bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import ProjectOut, ShiftAlong, capture

FAMILIES = ["gpt_neox", "phi", "llama", "mistral", "windtunnel"]
SITES = ["resid_pre.*", "resid_post.*", "attn.*.q", "attn.*.k", "attn.*.v", "attn.*.pattern",
         "attn.*.z", "attn_out.*", "mlp_out.*", "final_norm.scale", "logits"]


@pytest.fixture(scope="module")
def pairs(tiny_models):
    return {
        name: (interp.load(tm.path, attn_implementation="eager"),
               interp.load(tm.path, backend="transformer_lens"))
        for name, tm in tiny_models.items()
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_backends_return_identical_tensors(family, pairs, family_prompts):
    hf, tl = pairs[family]
    assert tl.info.backend == "transformer_lens" and tl.bridge is not None
    prompts = family_prompts[family]
    a = capture(hf, prompts, SITES, "all", batch_size=2, progress=False)
    b = capture(tl, prompts, SITES, "all", batch_size=2, progress=False)
    assert a.sites == b.sites and len(a.sites) == 9 * hf.n_layers + 2
    for s in a.sites:
        assert a[s].shape == b[s].shape, s
        if family == "windtunnel":
            torch.testing.assert_close(b[s], a[s], atol=1e-6, rtol=0, msg=s)
        else:
            assert torch.equal(a[s], b[s]), f"{s}: max |diff| {(a[s] - b[s]).abs().max():.3g}"


@pytest.mark.parametrize("family", FAMILIES)
def test_backends_agree_under_interventions(family, pairs, family_prompts):
    hf, tl = pairs[family]
    prompts = family_prompts[family]
    g = torch.Generator().manual_seed(0)
    u = torch.randn(hf.geometry.n_kv_heads, hf.geometry.d_head, generator=g)
    d = hf.hf.config.get_text_config().hidden_size if family != "windtunnel" else 32
    r = torch.randn(d, generator=g)
    ivs = [ProjectOut("attn.-1.v", u, positions="last"), ShiftAlong("resid_post.0", r, 3.0)]
    outs = []
    for m in (hf, tl):
        base = m.logits(prompts)
        with interp.intervene(m, *ivs):
            outs.append(m.logits(prompts))
        assert (outs[-1] - base).abs().max() > 1e-4
    torch.testing.assert_close(outs[1], outs[0], atol=1e-5, rtol=0)

"""Per-family acceptance checks on tiny random models (GPT-NeoX, Phi, Llama GQA, Mistral sliding
window, Phi-3's fused GQA ``qkv_proj`` through the generic adapter, the wind-tunnel GPT-2 and the
Llama-style wind-tunnel transformers): values against the weights, padding invariance,
interventions that change logits and leave the model bit-identical afterwards."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import AddVector, ProjectOut, capture

#: the Llama-style wind-tunnel transformers (family ``llama``): name -> arch
WT_LLAMA = {"wt-llama": "llama", "wt-llama-rope": "llama-rope", "wt-llama-nope": "llama-nope"}
FAMILIES = ["gpt_neox", "phi", "llama", "mistral", "phi3", "windtunnel", *WT_LLAMA]


def _parts(hf, family: str, layer: int):
    """(input norm, fn(normed) -> values [T, Hkv, dh], out-projection) written independently
    from the HF weights."""
    if family == "gpt_neox":
        blk = hf.gpt_neox.layers[layer]
        qkv = blk.attention.query_key_value
        H = hf.config.num_attention_heads

        def values(h):  # HF's layout: [T, H, 3*dh] per head, then chunk(3)
            return (h @ qkv.weight.T + qkv.bias).view(h.shape[0], H, 3, -1)[:, :, 2]

        return blk.input_layernorm, values, blk.attention.dense
    if family == "windtunnel":
        blk = hf.transformer.h[layer]
        D, H = hf.config.n_embd, hf.config.n_head

        def values(h):  # Conv1D: x @ W + b, output [q | k | v]
            return (h @ blk.attn.c_attn.weight + blk.attn.c_attn.bias)[:, 2 * D:].view(
                h.shape[0], H, -1)

        return blk.ln_1, values, blk.attn.c_proj
    blk = hf.model.layers[layer]
    d_head = hf.config.hidden_size // hf.config.num_attention_heads
    if family == "phi3":
        qkv = blk.self_attn.qkv_proj
        start = (hf.config.num_attention_heads + hf.config.num_key_value_heads) * d_head

        def values(h):  # [q (H·dh) | k (Hkv·dh) | v (Hkv·dh)]
            return (h @ qkv.weight.T)[:, start:].view(h.shape[0], -1, d_head)

        return blk.input_layernorm, values, blk.self_attn.o_proj
    vp = blk.self_attn.v_proj

    def values(h):
        y = h @ vp.weight.T + (vp.bias if vp.bias is not None else 0)
        return y.view(h.shape[0], -1, d_head)

    out = blk.self_attn.dense if family == "phi" else blk.self_attn.o_proj
    return blk.input_layernorm, values, out


@pytest.fixture(scope="module")
def models(tiny_models, tmp_path_factory):
    from bayesgeom.windtunnel import make_task
    from bayesgeom.windtunnel.architectures import build_model

    out = {name: interp.load(tm.path, attn_implementation="eager")
           for name, tm in tiny_models.items()}
    root = tmp_path_factory.mktemp("wt-llama")
    for name, arch in WT_LLAMA.items():
        build_model(make_task("bijection", V=6), arch, "tiny", seed=0).save_pretrained(root / name)
        out[name] = interp.load(str(root / name))  # eager by default
    return out


@pytest.fixture(scope="module")
def family_prompts(family_prompts):
    """conftest's prompts, and the wind-tunnel ones for the Llama-style wind tunnels."""
    return {**family_prompts, **dict.fromkeys(WT_LLAMA, family_prompts["windtunnel"])}


@pytest.mark.parametrize("family", WT_LLAMA)
def test_llama_wind_tunnels_use_the_llama_adapter_with_their_head_geometry(family, models):
    m = models[family]
    assert m.info.family == "llama" and m.info.model_type == "bayesgeom_llama"
    assert m.geometry.heads == (2, 2, 16) and m.d_model == 32 and m.n_layers == 2
    ids = torch.tensor([[0, 6, 1, 7, 2]])  # bijection V = 6: keys 0..5, values 6..11
    sites = ["resid_pre.0", "resid_post.1", "attn.0.q", "attn.0.k", "attn.0.v", "attn.1.pattern",
             "attn.1.z", "attn_out.0", "mlp_out.1", "logits"]
    st = capture(m, ids, sites, positions="all", progress=False)
    shapes = {s: tuple(st[s].shape) for s in sites}
    assert shapes == {"resid_pre.0": (5, 32), "resid_post.1": (5, 32), "attn.0.q": (5, 2, 16),
                      "attn.0.k": (5, 2, 16), "attn.0.v": (5, 2, 16),
                      "attn.1.pattern": (5, 2, 5), "attn.1.z": (5, 2, 16),
                      "attn_out.0": (5, 32), "mlp_out.1": (5, 32), "logits": (5, 12)}
    with torch.no_grad():
        out = m.hf(input_ids=ids, output_hidden_states=True, output_attentions=True)
    torch.testing.assert_close(st["resid_pre.0"], out.hidden_states[0][0])
    torch.testing.assert_close(st["attn.1.pattern"], out.attentions[1][0].transpose(0, 1))
    torch.testing.assert_close(st["logits"], out.logits[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_captured_values_match_the_weights(family, models, family_prompts):
    m = models[family]
    prompt = family_prompts[family][2]
    store = capture(m, [prompt], ["attn.*.v", "attn.*.z"], positions="all", progress=False)
    ids = torch.tensor([m.encode([prompt])[0][0]])
    with torch.no_grad():
        hidden = m.hf(input_ids=ids, output_hidden_states=True).hidden_states
    kv_of = m.geometry.kv_head_of_query
    raw: dict[str, torch.Tensor] = {}
    for layer in range(m.n_layers):
        norm, values, out_proj = _parts(m.hf, family, layer)
        raw.clear()
        h = out_proj.register_forward_pre_hook(lambda _m, a: raw.__setitem__("z", a[0].clone()))
        try:
            with torch.no_grad():
                expected_v = values(norm(hidden[layer][0]))
                m.hf(input_ids=ids)
        finally:
            h.remove()
        got_v = store[f"attn.{layer}.v"]
        assert got_v.shape == expected_v.shape
        torch.testing.assert_close(got_v, expected_v, atol=1e-5, rtol=0)
        z = raw["z"][0].view(ids.shape[1], m.geometry.n_heads, -1)
        torch.testing.assert_close(store[f"attn.{layer}.z"], z, atol=1e-6, rtol=0)
        # Position 0 attends only to itself: each query head's output IS its kv head's value.
        # A wrong split of a fused QKV (e.g. NeoX read as [3, H, dh]) fails here.
        for q_head, kv_head in enumerate(kv_of):
            torch.testing.assert_close(z[0, q_head], got_v[0, kv_head], atol=1e-5, rtol=0)


def test_naive_neox_split_would_fail(models, family_prompts):
    """The check above can fail: the published [3, H, dh] split of Pythia's QKV disagrees."""
    m = models["gpt_neox"]
    ids = torch.tensor([m.encode([family_prompts["gpt_neox"][0]])[0][0]])
    blk = m.hf.gpt_neox.layers[0]
    raw: dict[str, torch.Tensor] = {}
    h = blk.attention.query_key_value.register_forward_hook(
        lambda _m, _a, o: raw.__setitem__("qkv", o.clone()))
    try:
        with torch.no_grad():
            m.hf(input_ids=ids)
    finally:
        h.remove()
    naive_v = raw["qkv"].view(1, ids.shape[1], 3, m.geometry.n_heads, -1)[0, :, 2]
    right_v = capture(m, ids, ["attn.0.v"], positions="all", progress=False)["attn.0.v"]
    assert (naive_v - right_v).abs().max() > 1e-2


@pytest.mark.parametrize("family", FAMILIES)
def test_left_padding_gives_the_same_last_token_activations(family, models, family_prompts):
    m = models[family]
    prompts = family_prompts[family]
    sites = ["resid_pre.0", "resid_post.*", "attn.*.v", "attn.-1.q", "attn.-1.pattern",
             "attn.-1.z", "mlp_out.-1", "final_norm.scale", "logits"]
    together = capture(m, prompts, sites, "last", batch_size=len(prompts), progress=False)
    alone = capture(m, prompts, sites, "last", batch_size=1, progress=False)
    lengths = [len(t) for t in m.encode(prompts)[0]]
    assert len(set(lengths)) > 1, "prompts must differ in length to exercise padding"
    for s in together.sites:
        torch.testing.assert_close(together[s], alone[s], atol=1e-5, rtol=1e-5, msg=s)
    torch.testing.assert_close(together.entropy_bits, alone.entropy_bits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", ["windtunnel", "wt-llama"])
def test_padding_without_position_ids_would_shift_learned_positions(family, models,
                                                                    family_prompts):
    """Negative control: the padding test can fail for absolute positions (wind tunnel)."""
    m = models[family]
    toks = family_prompts[family]
    b = m.batch(toks)
    with torch.no_grad():
        wrong = m.hf(input_ids=b.input_ids, attention_mask=b.attention_mask).logits[:, -1]
        right = m.forward(b)[:, -1]
        alone = torch.stack([m.forward(m.batch([t]))[0, -1] for t in toks])
    torch.testing.assert_close(right, alone, atol=1e-5, rtol=0)
    assert (wrong - alone).abs().max() > 1e-3


def _hook_counts(model: torch.nn.Module) -> list[tuple[int, int]]:
    return [(len(x._forward_hooks), len(x._forward_pre_hooks)) for x in model.modules()]


@pytest.mark.parametrize("family", FAMILIES)
def test_intervention_changes_logits_then_model_is_bit_identical(family, models, family_prompts):
    m = models[family]
    prompts = family_prompts[family]
    state = {k: v.clone() for k, v in m.hf.state_dict().items()}
    hooks = _hook_counts(m.hf)
    base = m.logits(prompts)
    g = torch.Generator().manual_seed(1)
    d = m.hf.config.get_text_config().hidden_size
    vec = torch.randn(d, generator=g)
    n_kv, d_head = m.geometry.n_kv_heads, m.geometry.d_head
    axis = torch.randn(n_kv * d_head, generator=g)
    for iv in (AddVector("resid_post.0", vec, positions="last"),
               ProjectOut("attn.-1.v", axis, positions="all")):
        with interp.intervene(m, iv) as h:
            changed = m.logits(prompts)
        assert (changed - base).abs().max() > 1e-4, iv
        assert not h.nil_effects()
        assert torch.equal(m.logits(prompts), base)
    assert _hook_counts(m.hf) == hooks
    after = m.hf.state_dict()
    assert state.keys() == after.keys()
    assert all(torch.equal(state[k], after[k]) for k in state)

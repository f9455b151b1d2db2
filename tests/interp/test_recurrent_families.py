"""The recurrent families (HF Mamba and Mamba-2, the wind-tunnel LSTM) through interp: residual
sites with their shapes and values, Mamba's mixer output, left padding, loading, the random-init
twin, and one clear line for every attention site."""

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp.families.recurrent import NoAttentionError
from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model

ARCHS = ("lstm", "mamba", "mamba2")


@pytest.fixture(scope="module")
def models():
    t = make_task("bijection", V=6)
    return {a: build_model(t, a, "tiny", seed=5).eval() for a in ARCHS}


def _ids(n=3, T=7, vocab=12):
    return torch.randint(0, vocab, (n, T), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("arch", ARCHS)
def test_residual_sites_have_their_shapes_and_values(models, arch):
    hf = models[arch]
    m = interp.InterpModel(hf, name=arch)
    assert m.info.family == arch and m.n_layers == 2
    ids = _ids()
    st = interp.capture(m, ids, ["resid_pre.0", "resid_post.0", "resid_post.1", "logits"],
                        positions="all", progress=False)
    D = m.d_model
    assert st.manifest["row_shapes"] == {"resid_pre.0": [D], "resid_post.0": [D],
                                         "resid_post.1": [D], "logits": [12]}
    with torch.no_grad():
        out = hf(ids, output_hidden_states=True)
    # HF's hidden states: the LSTM's start with the embeddings; Mamba's with block 0's output
    block0 = out.hidden_states[1 if arch == "lstm" else 0]
    got = st["resid_post.0"].reshape(3, 7, D)
    torch.testing.assert_close(got, block0.float())
    torch.testing.assert_close(st["logits"].reshape(3, 7, -1), out.logits.float())


@pytest.mark.parametrize("arch", ["mamba", "mamba2"])
def test_mamba_mixer_output_is_the_block_update(models, arch):
    m = interp.InterpModel(models[arch])
    st = interp.capture(m, _ids(), ["resid_pre.1", "mlp_out.1", "resid_post.1"],
                        positions="all", progress=False)
    torch.testing.assert_close(st["resid_pre.1"] + st["mlp_out.1"],
                               st["resid_post.1"])


@pytest.mark.parametrize("arch", ARCHS)
def test_left_padded_prompts_read_as_unpadded(models, arch):
    m = interp.InterpModel(models[arch])
    short, long = [3, 1, 4], [2, 7, 1, 8, 2, 8]
    both = interp.capture(m, [short, long], ["resid_post.1"], positions="all",
                          progress=False)["resid_post.1"]
    alone = interp.capture(m, [short], ["resid_post.1"], positions="all",
                           progress=False)["resid_post.1"]
    torch.testing.assert_close(both[:3], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("site", ["attn.0.v", "attn.1.q", "attn.0.pattern", "attn.0.z",
                                  "attn_out.1"])
def test_attention_sites_are_refused_in_one_line(models, arch, site):
    m = interp.InterpModel(models[arch])
    with pytest.raises(NoAttentionError) as e:
        interp.capture(m, _ids(), [site], progress=False)
    msg = str(e.value)
    assert isinstance(e.value, interp.InterpError) and "\n" not in msg
    assert "no attention" in msg and "resid_post.L" in msg


def test_lstm_has_no_mlp_site(models):
    m = interp.InterpModel(models["lstm"])
    with pytest.raises(NoAttentionError, match="no MLP or mixer sublayer"):
        interp.capture(m, _ids(), ["mlp_out.0"], progress=False)


@pytest.mark.parametrize("arch", ARCHS)
def test_saved_models_load_with_interp_and_have_a_random_twin(models, arch, tmp_path):
    # Mamba is a stock HF class; the LSTM loads because windtunnel (imported above) registered
    # its config with the Auto classes
    models[arch].save_pretrained(tmp_path)
    m = interp.load(str(tmp_path))
    assert m.info.family == arch
    ids = _ids(n=2)
    torch.testing.assert_close(m.forward(m.batch(ids.tolist())), interp.InterpModel(
        models[arch]).forward(m.batch(ids.tolist())))
    twin = interp.random_init_twin(m, seed=2)
    assert twin.info.family == arch and twin.weights_digest() != m.weights_digest()
    st = interp.capture(twin, ids, ["resid_post.-1"], progress=False)
    assert st.manifest["row_shapes"]["resid_post.1"] == [m.d_model]

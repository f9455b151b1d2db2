import pytest
import torch
from transformers import AutoModelForCausalLM

from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel.architectures import build_model, n_params
from bayesgeom.windtunnel.checkpoint import load_model
from bayesgeom.windtunnel.transformer import transformer_params

PAPER_PARAMS = 2_677_440


def test_paper_preset_parameter_count():
    p = transformer_params(make_task("bijection", V=20), "paper")
    assert abs(p - PAPER_PARAMS) / PAPER_PARAMS <= 0.02


@pytest.mark.parametrize("task", ["bijection", "hmm"])
@pytest.mark.parametrize("preset", ["tiny", "small"])
@pytest.mark.parametrize("arch", ["mlp-position", "mlp-flat"])
def test_mlp_baselines_are_parameter_matched(task, preset, arch):
    t = make_task(task)
    target = transformer_params(t, preset)
    got = n_params(build_model(t, arch, preset))
    assert abs(got - target) / target <= 0.02


def test_paper_mlp_baselines_match_paper_transformer():
    t = make_task("bijection")
    target = transformer_params(t, "paper")
    with torch.device("meta"):
        for arch in ("mlp-position", "mlp-flat"):
            assert abs(n_params(build_model(t, arch, "paper")) - target) / target <= 0.02


@pytest.mark.parametrize("arch", ["transformer", "mlp-position", "mlp-flat"])
def test_save_and_load_roundtrip_with_auto_classes(tmp_path, arch):
    t = make_task("bijection", V=6)
    m = build_model(t, arch, "tiny", seed=3).eval()
    m.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists()
    m2 = AutoModelForCausalLM.from_pretrained(tmp_path).eval()  # plain HF, no bayesgeom loader
    m3 = load_model(tmp_path).eval()
    x = t.sample(3, 0).input_ids
    with torch.no_grad():
        assert torch.allclose(m(x).logits, m2(x).logits, atol=1e-6)
        assert torch.equal(m(x).logits, m3(x).logits)


def test_init_is_deterministic_in_seed():
    t = make_task("bijection", V=6)
    a, b = build_model(t, "transformer", "tiny", 1), build_model(t, "transformer", "tiny", 1)
    c = build_model(t, "transformer", "tiny", 2)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_position_mlp_cannot_see_context():
    t = make_task("bijection", V=8)
    m = build_model(t, "mlp-position", "tiny").eval()
    x = t.sample(2, 0).input_ids
    y = x.clone()
    y[:, :-1] = (x[:, :-1] + 3) % t.vocab_size  # change every earlier token
    with torch.no_grad():
        assert torch.equal(m(x).logits[:, -1], m(y).logits[:, -1])


def test_flat_mlp_is_causal():
    t = make_task("bijection", V=8)
    m = build_model(t, "mlp-flat", "tiny").eval()
    x = t.sample(1, 0).input_ids
    y = x.clone()
    y[0, 5] = (y[0, 5] + 1) % 8
    with torch.no_grad():
        lx, ly = m(x).logits, m(y).logits
    assert torch.allclose(lx[:, :5], ly[:, :5])
    assert not torch.allclose(lx[:, 5:], ly[:, 5:])


@pytest.mark.parametrize("arch, preset", [("gru", "small"), ("transformer", "huge")])
def test_unknown_arch_or_preset(arch, preset):
    with pytest.raises(TaskConfigError, match="unknown"):
        build_model(make_task("bijection"), arch, preset)


def test_auto_classes_are_registered_by_the_package_and_idempotently():
    """``import bayesgeom.windtunnel`` registers every own model class, whichever submodule is
    imported first; calling :func:`register_auto_classes` again is harmless."""
    import subprocess
    import sys

    code = ("from bayesgeom.windtunnel.bijection import BijectionTask\n"
            "from transformers.models.auto.configuration_auto import CONFIG_MAPPING as M\n"
            "from bayesgeom.windtunnel import register_auto_classes\n"
            "register_auto_classes(); register_auto_classes()\n"
            "print(sorted(k for k in M if k.startswith('bayesgeom_')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    last = out.stdout.strip().splitlines()[-1]
    assert last == "['bayesgeom_llama', 'bayesgeom_lstm', 'bayesgeom_mlp']"


def test_a_sharded_model_loads_and_a_missing_shard_is_one_line(tmp_path):
    """save_pretrained's sharded layout (an index and shards: how the committed paper-scale
    tunnels keep each file under 16 MiB) loads with the same logits, checksums verified; a
    missing shard or an index naming a path outside the folder is one CheckpointError."""
    from bayesgeom.records import write_checksums, write_json
    from bayesgeom.windtunnel.checkpoint import CheckpointError

    t = make_task("bijection", V=6)
    m = build_model(t, "transformer", "small", 0).eval()
    m.save_pretrained(tmp_path, max_shard_size="200KB")
    shards = sorted(tmp_path.glob("model-*.safetensors"))
    assert len(shards) >= 2 and not (tmp_path / "model.safetensors").exists()
    write_checksums(tmp_path)
    x = t.sample(3, 0).input_ids
    with torch.no_grad():
        assert torch.equal(m(x).logits, load_model(tmp_path).eval()(x).logits)
    shards[-1].unlink()
    with pytest.raises(CheckpointError, match=f"lacks {shards[-1].name}"):
        load_model(tmp_path)
    index = tmp_path / "model.safetensors.index.json"
    write_json(index, {"metadata": {}, "weight_map": {"w": "../elsewhere.safetensors"}})
    with pytest.raises(CheckpointError, match="not a safetensors file beside it"):
        load_model(tmp_path)

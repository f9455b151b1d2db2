"""The recurrent baselines (LSTM, Mamba, Mamba-2): parameter matching, training through the same
loop, save / reload, and the LSTM's left-padding equivalence."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, Mamba2ForCausalLM, MambaForCausalLM

from bayesgeom import interp
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.windtunnel import load_run, make_task
from bayesgeom.windtunnel.architectures import arch_sizes, build_model, n_params
from bayesgeom.windtunnel.checkpoint import latest_checkpoint_dir
from bayesgeom.windtunnel.evaluate import evaluate
from bayesgeom.windtunnel.recurrent import WindTunnelLSTM, WindTunnelLSTMConfig, lstm_params
from bayesgeom.windtunnel.training import TrainConfig, train
from bayesgeom.windtunnel.transformer import transformer_params

from ..conftest import assert_left_padding_ignored

TASKS = {"bijection": {"V": 20}, "hmm": {}}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("preset", ["tiny", "small", "paper"])
@pytest.mark.parametrize("arch", ["lstm", "mamba", "mamba2"])
def test_recurrent_baselines_are_parameter_matched(task, preset, arch):
    t = make_task(task, **TASKS[task])
    target = transformer_params(t, preset)
    with torch.device("meta"):
        got = n_params(build_model(t, arch, preset))
    assert got == arch_sizes(t, arch, preset)["params"]  # the count formulas are exact
    assert abs(got - target) / target <= 0.02


def test_authors_lstm_size():
    # spec §1.5: nn.LSTM(192, 192, 6 layers), positions, LayerNorm, tied head: 1.79M
    with torch.device("meta"):
        m = WindTunnelLSTM(WindTunnelLSTMConfig(vocab_size=40, n_positions=38, d_model=192,
                                                n_layer=6))
    assert n_params(m) == lstm_params(40, 38, 192, 6) == 1_794_048


def test_lstm_left_padding_equals_unpadded():
    t = make_task("bijection", V=6)
    m = build_model(t, "lstm", "tiny", seed=1).eval()
    assert_left_padding_ignored(m, torch.randint(0, t.vocab_size, (1, 7)))


def test_lstm_saves_and_loads_through_auto_classes(tmp_path):
    t = make_task("bijection", V=6)
    m = build_model(t, "lstm", "tiny", seed=3).eval()
    m.save_pretrained(tmp_path)
    back = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(back, WindTunnelLSTM) and back.lm_head.weight is back.embed.weight
    ids = torch.randint(0, t.vocab_size, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(back(ids).logits, m(ids).logits)


@pytest.mark.parametrize(("arch", "task", "cls"), [
    ("lstm", "hmm", WindTunnelLSTM),
    ("mamba", "bijection", MambaForCausalLM),
    ("mamba2", "hmm", Mamba2ForCausalLM),
])
def test_recurrent_trains_saves_and_reloads(tmp_path, arch, task, cls):
    cfg = TrainConfig(task=task, task_params={"V": 6} if task == "bijection" else {"K": 6},
                      arch=arch, preset="tiny", steps=3, batch_size=4, warmup_steps=1,
                      eval_every=2, eval_size=4, final_eval_size=8, ckpt_every=2)
    res = train(cfg, tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    assert isinstance(run.model, cls) and run.arch == arch
    assert res.params == n_params(run.model) > 0
    assert json.loads((tmp_path / "run" / "eval.json").read_text())["params"] == res.params
    # the reloaded model reproduces the final evaluation exactly, logit lens included
    rep = evaluate(run.model, run.task, cfg.final_eval_size, cfg.seed)
    assert rep.entropy_mae_bits == pytest.approx(res.report.entropy_mae_bits, abs=1e-6)
    assert len(rep.per_layer["kl_bits"]) == 2
    m = open_model(tmp_path / "run")
    assert m.info.family == arch and m.task is not None
    # a checkpoint of the run opens as a wind-tunnel model too
    ck = latest_checkpoint_dir(tmp_path / "run" / "checkpoints")
    assert type(load_run(ck).model) is cls
    # the saved model directory through interp.load (the LSTM: windtunnel is imported here)
    hooked = interp.load(str(tmp_path / "run" / "model"))
    ids = run.task.sample(2, 0).input_ids
    st = interp.capture(hooked, ids, ["resid_post.0", "resid_post.-1"], positions="all",
                        progress=False)
    assert st["resid_post.0"].shape == st["resid_post.1"].shape == (ids.numel(), hooked.d_model)
    with pytest.raises(interp.InterpError, match="no attention"):
        interp.capture(hooked, ids, ["attn.0.v"], progress=False)

"""The ablation protocol (analyses.ablate.run) on a tiny trained wind-tunnel run."""

from __future__ import annotations

import json

import pytest

from bayesgeom.analyses.ablate.run import evaluate_ablated, run_ablations
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.interp import BypassLayer, ZeroSublayer
from bayesgeom.windtunnel.training import TrainConfig, train


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, preset="tiny", steps=60,
                      batch_size=32, lr=5e-3, warmup_steps=5, eval_every=60, eval_size=64,
                      final_eval_size=64, log_every=50, ckpt_every=60)
    out = tmp_path_factory.mktemp("abl") / "run"
    train(cfg, out, progress=False)
    return out


def test_protocol_on_a_trained_run(run_dir, tmp_path):
    res = run_ablations(run_dir, n=128, seed=1)
    m = open_model(run_dir)
    assert res.clean_mae_bits == pytest.approx(evaluate_ablated(m, m.task, n=128, seed=1))
    assert len(res.heads) == m.geometry.n_heads == 2
    deltas = [h["delta_mae_bits"] for h in res.heads]
    assert res.frame_head == max(range(len(deltas)), key=deltas.__getitem__)
    assert [r["layer"] for r in res.layers] == list(range(m.n_layers))
    for r in res.layers:
        assert r["bypass"] > res.clean_mae_bits  # removing a trained layer hurts
        assert r["zero_attn"] is not None and r["zero_ffn"] is not None
    assert [r["through"] for r in res.cumulative] == list(range(m.n_layers))
    assert res.cumulative[0]["mae_bits"] == pytest.approx(res.layers[0]["bypass"])
    # the same condition built another way gives the same number
    assert res.layers[1]["bypass"] == pytest.approx(evaluate_ablated(
        m, m.task, ZeroSublayer(["attn_out.1", "mlp_out.1"]), n=128, seed=1), abs=1e-6)
    assert res.cumulative[-1]["mae_bits"] == pytest.approx(evaluate_ablated(
        m, m.task, BypassLayer("*"), n=128, seed=1))
    text = res.table()
    assert "frame head" in text and "bypass L0..L1" in text
    d = json.loads(res.write_json(tmp_path / "a.json").read_text())
    assert d["frame_head"] == res.frame_head


def test_recurrent_model_gets_bypass_rows_only(tmp_path):
    from bayesgeom import interp
    from bayesgeom.windtunnel import make_task
    from bayesgeom.windtunnel.architectures import build_model

    task = make_task("bijection", V=6)
    build_model(task, "lstm", "tiny", seed=0).save_pretrained(tmp_path / "lstm")
    m = interp.load(tmp_path / "lstm")
    res = run_ablations(m, task, n=32)
    assert res.heads == [] and res.frame_head is None
    assert res.layers and all(r["zero_attn"] is None and r["zero_ffn"] is None
                              for r in res.layers)
    assert all(r["bypass"] is not None for r in res.layers)
    assert len(res.cumulative) == m.n_layers
    assert "zero_attn" not in res.table()


def test_mean_ablation_control_replaces_one_head_by_its_per_position_mean(run_dir):
    import torch

    from bayesgeom.analyses.ablate.controls import mean_replaced, site_means
    from bayesgeom.windtunnel.seeds import Purpose, stream

    m = open_model(run_dir)
    means = site_means(m, m.task, ["attn.0.z", "attn_out.1"], seed=0)
    g = m.geometry
    assert means["attn.0.z"].shape == (m.task.seq_len, g.n_heads, g.d_head)
    assert means["attn_out.1"].shape == (m.task.seq_len, m.d_model)
    ids = m.task.sample(4, stream(0, Purpose.EVAL, 3)).input_ids
    seen: dict[str, torch.Tensor] = {}

    def grab(x):
        seen["z"] = x.detach().clone()

    with m.hooks([("attn.0.z", grab)]), torch.no_grad():
        m.hf(ids)
    clean = seen["z"]
    with mean_replaced(m, "attn.0.z", means["attn.0.z"], 1), m.hooks([("attn.0.z", grab)]), \
            torch.no_grad():
        m.hf(ids)
    z = seen["z"]
    assert torch.equal(z[:, :, 0], clean[:, :, 0])  # the other head untouched
    assert torch.equal(z[:, :, 1], means["attn.0.z"][None, :, 1].expand_as(z[:, :, 1]))


def test_eval_task_changes_K_only_where_the_task_has_one():
    from bayesgeom.analyses.ablate.controls import eval_task
    from bayesgeom.windtunnel import make_task

    hmm = eval_task(make_task("hmm", K=20), 30)
    assert hmm.config()["K"] == 30 and hmm.config()["max_K"] == 50
    assert hmm.seq_len == make_task("hmm", K=30).seq_len
    with pytest.raises(ExperimentError, match="bijection has none"):
        eval_task(make_task("bijection", V=6), 20)

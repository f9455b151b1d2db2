"""The Paper II training-dynamics monitor: its alignments have the sign of a gradient step on a
head's own weights, it changes nothing of training and a resumed run logs the same rows, the
two-timescale read-out, and ``windtunnel train --monitor-every``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.dynamics.monitor.findings import findings
from bayesgeom.analyses.dynamics.monitor.report import format_summary
from bayesgeom.analyses.dynamics.monitor.result import HEAD_METRICS, column, read_dynamics, tidy_log
from bayesgeom.analyses.dynamics.monitor.run import DynamicsMonitor
from bayesgeom.analyses.dynamics.monitor.timescales import phase_means, settle_steps
from bayesgeom.windtunnel import make_token_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.training import TrainConfig, task_loss, train

from ....conftest import Killed, die_at, tiny_train_config


def _step_on_attention(layer: int, sign: float) -> dict[str, float]:
    """The monitor's row after one plain gradient step (``sign`` +1: descent, −1: ascent) of
    one layer's attention weights (GPT-2's fused q/k/v projection) on the monitor batch."""
    task = make_token_task("bijection", V=6)
    hf = build_model(task, "transformer", "tiny", seed=0).double()
    mon = DynamicsMonitor(batch_size=16)
    mon.start(hf, task, seed=0, step=0)
    params = list(hf.transformer.h[layer].attn.c_attn.parameters())
    grads = torch.autograd.grad(task_loss(hf, task, mon.batch), params)
    with torch.no_grad():
        for p, g in zip(params, grads, strict=True):
            p -= sign * 1e-4 * g
    return mon(hf, step=1)


@pytest.mark.parametrize("layer", [0, 1])
def test_a_descent_step_on_a_heads_own_weights_follows_the_routing_law(layer):
    """W_Q, W_K and W_V of a head reach the loss only through its scores and values, so to
    first order a descent step moves both along −∂L/∂S and −Σ_i α_ij u_i (cosine > 0) and an
    ascent step against them; the other layer's upstream values and patterns do not move."""
    down, up = _step_on_attention(layer, +1.0), _step_on_attention(layer, -1.0)
    for h in range(2):
        for metric in ("score_follow", "value_follow"):
            c = column(layer, h, metric)
            assert down[c] > 0.1 and up[c] < -0.1, (c, down[c], up[c])
            assert down[c] == pytest.approx(-up[c], abs=1e-2)
        assert down[column(layer, h, "pattern_change")] > 0
        assert down[column(layer, h, "value_change")] > 0
        assert 0 < down[column(layer, h, "value_pc1")] <= 1
        assert 1 <= down[column(layer, h, "value_pr")] <= 8  # head size 16, here ≤ 8 keys
    if layer == 1:  # layer 0 sits upstream: nothing of it moved
        assert down[column(0, 0, "value_change")] == 0 == down[column(0, 1, "pattern_change")]
    assert down["dyn.loss"] < up["dyn.loss"]


def _cfg(**kw) -> TrainConfig:
    return tiny_train_config(**{"steps": 30, "eval_every": 15, **kw})


def test_the_monitor_changes_nothing_of_training_and_resumes_bit_for_bit(tmp_path):
    plain = train(_cfg(), tmp_path / "plain", progress=False)
    cfg = _cfg(monitor_every=5)
    full = train(cfg, tmp_path / "full", progress=False, monitor=DynamicsMonitor(batch_size=16))
    cols = ["step", "train_loss", "eval_entropy_mae_bits", "eval_kl_bits", "eval_tvd"]
    pd.testing.assert_frame_equal(
        plain.log[cols], full.log[full.log["step"].isin(plain.log["step"])][cols]
        .reset_index(drop=True), check_exact=True)
    assert full.report.entropy_mae_bits == plain.report.entropy_mae_bits

    die = die_at(17)

    with pytest.raises(Killed):
        train(cfg, tmp_path / "cut", on_step=die, progress=False,
              monitor=DynamicsMonitor(batch_size=16))
    resumed = train(cfg, tmp_path / "cut", progress=False,
                    monitor=DynamicsMonitor(batch_size=16))
    keep = [c for c in full.log.columns if c != "elapsed_s"]
    assert column(1, 1, "score_follow") in keep
    pd.testing.assert_frame_equal(full.log[keep], resumed.log[keep], check_exact=True)
    tidy = read_dynamics(tmp_path / "cut")
    assert sorted(tidy["step"].unique()) == [5, 10, 15, 20, 25, 30]
    assert tidy["value"].notna().all()


def _hand_log() -> pd.DataFrame:
    """A made-up log: every layer's patterns make 90 % of their path by step 20 (changes
    8, 1, 0.5, 0.5), the values by step 40 (changes 1, 1, 1, 7), the learning rate by step 30;
    score alignment falls."""
    steps = [10, 20, 30, 40]
    log = pd.DataFrame({"step": steps, "train_loss": 1.0, "dyn.loss": [2.0, 1.5, 1.2, 1.1],
                        "lr": [0.4, 0.3, 0.2, 0.1]})
    for L in (0, 1):
        for h in (0, 1):
            log[column(L, h, "pattern_change")] = [8.0, 1.0, 0.5, 0.5]
            log[column(L, h, "value_change")] = [1.0, 1.0, 1.0, 7.0]
            log[column(L, h, "score_follow")] = [0.6, 0.6, 0.3, 0.0]
    return log


def test_settle_steps_and_phase_means_of_a_made_up_log():
    tidy = tidy_log(pd.concat([_hand_log(), pd.DataFrame({"step": [45], "train_loss": [1.0]})]))
    assert sorted(tidy["step"].unique()) == [10, 20, 30, 40]  # rows without the monitor left out
    assert tidy[tidy["metric"] == "loss"]["layer"].isna().all()
    st = settle_steps(tidy).set_index("layer")
    assert st.loc["0", "attention_settle_step"] == 20 and st.loc["all", "value_settle_step"] == 40
    assert st["frame_first"].all()
    assert (st["lr_settle_step"] == 30).all()  # Σ lr: 4, 7, 9 of 10 by step 30
    ph = phase_means(tidy, ("score_follow",), phases=2).set_index("layer")
    assert ph.loc["1", "phase1"] == pytest.approx(0.6) and ph.loc["1", "phase2"] == 0.15
    # the verdict table: the planted frame-first timescales survive the settle-step rule; the
    # alignment has no criterion in the monitor, so no verdict
    rows = findings(tidy)
    assert rows[0].survives is True and rows[0].value == 20 and "step 40" in rows[0].control
    assert "2 of 2 layers" in rows[0].evidence and "step 30" in rows[0].evidence
    assert rows[1].survives is None and rows[1].value == pytest.approx(0.375)
    assert format_summary(tidy).startswith("What was found")


def test_windtunnel_train_monitor_every_writes_the_dynamics_table_and_report(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["windtunnel", "train", "--preset", "tiny", "--V", "6", "--steps", "20",
            "--batch-size", "16", "--eval-every", "20", "--eval-size", "32", "--ckpt-every",
            "10", "--monitor-every", "5", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    tidy = pd.read_csv(out / "dynamics.csv")
    assert list(tidy.columns) == ["step", "layer", "head", "metric", "value"]
    assert set(tidy["metric"]) == {*HEAD_METRICS, "loss", "lr"}
    assert len(tidy) == 4 * (2 * 2 * len(HEAD_METRICS) + 2)  # 4 intervals, 2 layers x 2 heads
    assert np.isfinite(tidy["value"]).all()
    html = (out / "dynamics.html").read_text()
    assert "Two timescales" in html and "score_follow" in html
    assert html.index("What was found") < html.index("Summary") < html.index("Two timescales")
    assert "Look for:" in html
    capsys.readouterr()
    bad = [*argv[:-1], str(tmp_path / "lstm"), "--arch", "lstm"]
    assert main(bad) == 2
    assert "has none" in capsys.readouterr().err and not (tmp_path / "lstm").exists()

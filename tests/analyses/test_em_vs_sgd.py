"""``bayesgeom dynamics em-vs-sgd``: the closed-form M-step lowers the loss at fixed attention;
a tiny run writes its files, reuses finished cells and repeats itself exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from bayesgeom.analyses.dynamics.em_vs_sgd import (
    EmVsSgdConfig,
    first_below,
    m_step,
    run_em_vs_sgd,
    token_errors,
    train_deep,
    train_shallow,
)
from bayesgeom.analyses.dynamics.em_vs_sgd_report import format_summary
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.windtunnel import sticky_chain as sc


def _loss_at_fixed_attention(m: sc.SingleHeadAttention, seq: sc.StickySequence,
                             w_v: torch.Tensor) -> float:
    with torch.no_grad():
        alpha = m.attention(seq.inputs)
        return float(F.cross_entropy((alpha @ (seq.inputs @ w_v)) @ m.W_O, seq.targets))


@pytest.mark.parametrize("trained_steps", [0, 150])
def test_m_step_lowers_the_loss_at_fixed_attention(trained_steps):
    seq = sc.make_sequence(42, 400)
    if trained_steps:  # a partly trained point: the authors' split, then its W_Q, W_K, W_O fixed
        _, m = train_shallow("authors_split", seq, trained_steps, eta=1.0)
    else:
        m = sc.SingleHeadAttention(42)
    with torch.no_grad():
        alpha = m.attention(seq.inputs)
    before = _loss_at_fixed_attention(m, seq, m.W_V.detach())
    with torch.no_grad():
        assert before == pytest.approx(float(F.cross_entropy(m(seq.inputs)[0], seq.targets)))
    for eta in (0.3, 3.0, EmVsSgdConfig().eta):  # the default η = 30 included
        after = _loss_at_fixed_attention(m, seq, m_step(m, seq.inputs, seq.targets, alpha, eta))
        assert after < before - 1e-6
    # η = 0: V* = X W_V lies in the column space of X, so least squares returns W_V itself
    same = m_step(m, seq.inputs, seq.targets, alpha, 0.0)
    assert torch.allclose(same, m.W_V.detach(), atol=1e-5)


def test_token_errors_are_the_per_token_gradients():
    seq = sc.make_sequence(1, 50)
    m = sc.SingleHeadAttention(1)
    alpha = m.attention(seq.inputs).detach()
    o = (alpha @ (seq.inputs @ m.W_V)).detach().requires_grad_(True)
    F.cross_entropy(o @ m.W_O, seq.targets, reduction="sum").backward()  # sum: per-token grads
    want = o.grad
    got = token_errors((o @ m.W_O).detach(), seq.targets, m.W_O.detach())
    assert torch.allclose(got, want, atol=1e-6)


def test_first_below():
    assert first_below(np.array([3.0, 2.0, 1.0]), 2.5) == 1.0
    assert math.isnan(first_below(np.array([3.0, 2.0]), 1.0))


def test_bad_settings_are_one_line_usage_errors(tmp_path):
    with pytest.raises(ExperimentError, match="seeds must be <= 5"):
        run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "x", seeds=6))
    with pytest.raises(ExperimentError, match="eta must be > 0"):
        run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "x", eta=0.0))


def test_tiny_run_writes_reuses_and_repeats(tmp_path):
    cfg = EmVsSgdConfig(out=tmp_path / "run", seeds=2, steps=3, progress=False)
    r = run_em_vs_sgd(cfg)
    out = cfg.out
    for f in ("table.parquet", "cells.parquet", "summary.json", "manifest.json", "report.html"):
        assert (out / f).is_file(), f
    curves = pd.read_parquet(out / "table.parquet")
    assert {"protocol", "seed", "step", "loss"} <= set(curves.columns)
    assert len(curves) == 3 * 2 * 4 and set(curves["seed"]) == {42, 2024}
    assert r.floor_nats == pytest.approx(1.8292, abs=1e-4) and r.n_params == 820
    assert r.seeds == [42, 2024] and not any(c.reused for c in r.cells)
    first = {(c.protocol, c.seed): c.final_loss for c in r.cells}
    assert r.sgd_final_mean == pytest.approx(np.mean([first["sgd", 42], first["sgd", 2024]]))
    for c in r.cells:  # the final loss is the curve's last point
        last = curves[(curves.protocol == c.protocol) & (curves.seed == c.seed)]["loss"].iloc[-1]
        assert last == pytest.approx(c.final_loss, abs=1e-5)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["protocols"]) == {"sgd", "authors_split", "em_closed_form"}
    assert summary["protocols"]["sgd"]["p_vs_sgd"] is None  # NaN: no test against itself
    assert summary["protocols"]["sgd"]["reached_own"] == 0  # not paired with itself
    for c in r.cells:
        if c.protocol != "sgd" and np.isfinite(c.steps_to_own_sgd):
            own = curves[(curves.protocol == c.protocol) & (curves.seed == c.seed)]["loss"]
            assert own.iloc[int(c.steps_to_own_sgd)] < first["sgd", c.seed]
    html = (out / "report.html").read_text()
    assert "authors&#x27; learning-rate split" in html and "closed-form M-step" in html
    text = format_summary(r)
    assert "458 +/- 164" in text and "2.3x faster (430 vs 1000" in text

    again = run_em_vs_sgd(cfg)  # the same run: every cell reused, the same numbers
    assert all(c.reused for c in again.cells)
    assert {(c.protocol, c.seed): c.final_loss for c in again.cells} == first

    other = run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "other", seeds=1, steps=3,
                                        progress=False))  # retrained from scratch
    assert not any(c.reused for c in other.cells)
    for c in other.cells:
        assert c.final_loss == first[c.protocol, c.seed]


def test_deep_variant_runs_on_a_short_sequence():
    losses, test, train_loss = train_deep(42, 2, length=40)
    assert losses.shape == (3,) and losses[-1] == train_loss
    assert set(test) == {"final_loss", "entropy", "accuracy"}
    assert 0.0 <= test["accuracy"] <= 1.0 and 0.0 < test["entropy"] <= math.log(8) + 1e-9
    again = train_deep(42, 2, length=40)
    assert np.array_equal(again[0], losses) and again[1] == test


def test_deep_cells_join_the_summary_and_report(tmp_path, monkeypatch):
    from bayesgeom.analyses.dynamics import em_vs_sgd as mod

    short = mod.train_deep
    monkeypatch.setattr(mod, "train_deep",  # a 40-state sequence keeps the test fast
                        lambda seed, steps, bar=None: short(seed, steps, bar, length=40))
    cfg = EmVsSgdConfig(out=tmp_path / "deep", seeds=2, steps=1, deep=True, deep_steps=2,
                        deep_seeds=1, progress=False)
    assert cfg.deep_seed_list() == [42]
    r = run_em_vs_sgd(cfg)
    assert [c.seed for c in r.deep_cells] == [42] and r.deep is not None
    assert r.deep_n_params == 201_992 and r.deep_steps == 2
    assert r.deep.gap_loss_mean == pytest.approx(r.deep_cells[0].final_loss - r.floor_nats)
    curves = pd.read_parquet(cfg.out / "table.parquet")
    assert (curves["protocol"] == "deep_adamw").sum() == 3
    assert "deep_adamw" in format_summary(r)
    with pytest.raises(ExperimentError, match="deep_seeds"):
        EmVsSgdConfig(seeds=1, deep_seeds=2).check()

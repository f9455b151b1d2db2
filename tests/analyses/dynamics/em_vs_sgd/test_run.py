"""``bayesgeom dynamics em-vs-sgd``: the batched trainer equals the plain per-step loop on every
protocol; the M-step and its ablations are what they say; tuning picks the pilot argmin; the
quick preset stays small; the summary states the verdict; a tiny run writes its files, reuses
finished cells and repeats itself exactly."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from bayesgeom.analyses.dynamics.em_vs_sgd import config as em_vs_sgd_config
from bayesgeom.analyses.dynamics.em_vs_sgd import run as mod
from bayesgeom.analyses.dynamics.em_vs_sgd.config import EmVsSgdConfig
from bayesgeom.analyses.dynamics.em_vs_sgd.deep import train_deep
from bayesgeom.analyses.dynamics.em_vs_sgd.findings import findings
from bayesgeom.analyses.dynamics.em_vs_sgd.protocols import (
    BASELINE,
    GRID_POINTS,
    PILOT_SEED,
    PROTOCOLS,
)
from bayesgeom.analyses.dynamics.em_vs_sgd.reference import (
    m_step,
    token_errors,
    train_reference,
    uniform_attention,
)
from bayesgeom.analyses.dynamics.em_vs_sgd.report import format_summary
from bayesgeom.analyses.dynamics.em_vs_sgd.run import run_em_vs_sgd
from bayesgeom.analyses.dynamics.em_vs_sgd.stats import Run, choose, first_below
from bayesgeom.analyses.dynamics.em_vs_sgd.sticky_trainer import RunSettings, train_batch
from bayesgeom.analyses.dynamics.em_vs_sgd.verdict import verdict
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
        _, m = train_reference(PROTOCOLS["authors_split"].settings(0.1), seq, trained_steps)
    else:
        m = sc.SingleHeadAttention(42)
    with torch.no_grad():
        alpha = m.attention(seq.inputs)
    before = _loss_at_fixed_attention(m, seq, m.W_V.detach())
    for eta in (0.3, 3.0, 30.0):
        after = _loss_at_fixed_attention(m, seq, m_step(m, seq.inputs, seq.targets, alpha, eta))
        assert after < before - 1e-6
    # η = 0: V* = X W_V lies in the column space of X, so least squares returns W_V itself
    same = m_step(m, seq.inputs, seq.targets, alpha, 0.0)
    assert torch.allclose(same, m.W_V.detach(), atol=1e-5)


def test_ablations_are_what_they_say():
    seq = sc.make_sequence(7, 120)
    m, x, y = sc.SingleHeadAttention(7), seq.inputs, seq.targets
    with torch.no_grad():
        alpha = m.attention(x)
        u = token_errors((alpha @ (x @ m.W_V)) @ m.W_O, y, m.W_O)
        v = x @ m.W_V
    w = uniform_attention(len(y))
    assert torch.allclose(w.sum(1), torch.ones(len(y))) and torch.equal(w.triu(1), 0 * w)
    eta = 5.0

    def solve(target: torch.Tensor) -> torch.Tensor:
        return torch.linalg.lstsq(x.double(), target.double()).solution.float()

    want = {"alpha": solve(v - eta * (alpha.T @ u) / alpha.sum(0)[:, None]),
            "unnorm": solve(v - eta * alpha.T @ u),  # no 1/Σα
            "uniform": solve(v - eta * (w.T @ u) / w.sum(0)[:, None])}  # α -> uniform
    got = {k: m_step(m, x, y, alpha, eta, k) for k in want}
    for k in want:
        assert torch.allclose(got[k], want[k], atol=1e-5), k
    for a, b in (("alpha", "unnorm"), ("alpha", "uniform"), ("unnorm", "uniform")):
        assert (got[a] - got[b]).abs().max() > 1e-3, (a, b)


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_batched_trainer_equals_the_per_step_loop(name):
    p = PROTOCOLS[name]
    value = p.grid[2] if p.tuned else p.fixed
    seqs = [sc.make_sequence(42, 300), sc.make_sequence(2024, 300)]
    got = train_batch(seqs, [p.settings(value)] * 2, 4, chunk=64)
    for i, seq in enumerate(seqs):
        losses, model = train_reference(p.settings(value), seq, 4)
        np.testing.assert_allclose(got.losses[i], losses, rtol=0, atol=2e-6)
        for n, w in model.named_parameters():  # float32 rounding, relative to the matrix
            err = (got.params[n][i] - w.detach()).abs().max() / w.detach().abs().max()
            assert err < 2e-5, (n, float(err))
        with torch.no_grad():
            assert torch.allclose(got.final_logits[i], model(seq.inputs)[0], atol=1e-5)


def test_a_run_does_not_depend_on_its_batch():
    seqs = [sc.make_sequence(s, 200) for s in (42, 2024, 1337)]
    st = RunSettings("sgd", 0.1, 0.1, 0.1, 0.1)
    alone = train_batch(seqs[1:2], [st], 3)
    together = train_batch(seqs, [st, st, st], 3)
    assert np.array_equal(alone.losses[0], together.losses[1])


def test_tuning_picks_the_pilot_argmin():
    def run(loss: float) -> Run:
        return Run(np.array([3.0, loss]), {"final_loss": loss})

    trials = {"a": {1.0: run(2.0), 3.0: run(1.5), 10.0: run(float("nan"))},
              "b": {0.1: run(1.2), 0.3: run(1.2)}}
    assert choose(trials) == {"a": 3.0, "b": 0.1}  # NaN (diverged) never chosen; ties: first
    assert PILOT_SEED not in sc.SEEDS
    tuned = [p for p in PROTOCOLS.values() if p.tuned]
    assert {len(p.trials(False)) for p in tuned} == {GRID_POINTS}  # one budget for all
    assert {len(p.trials(True)) for p in tuned} == {3}
    for p in tuned:
        g = np.log10(p.grid)
        np.testing.assert_allclose(np.diff(g), 0.5, atol=0.03)  # a declared log grid


def test_first_below():
    assert first_below(np.array([3.0, 2.0, 1.0]), 2.5) == 1.0
    assert math.isnan(first_below(np.array([3.0, 2.0]), 1.0))


def test_quick_config_stays_small_and_bad_settings_are_one_line_errors(tmp_path):
    q = EmVsSgdConfig(out=tmp_path / "q", quick=True)
    q.check()
    n_trials = sum(len(p.trials(True)) for p in PROTOCOLS.values())
    assert q.n_seeds == 2 and q.n_steps == 150 and n_trials == 7 * 3
    model_steps = (n_trials + len(PROTOCOLS) * q.n_seeds) * q.n_steps
    assert model_steps <= 6000  # ≈ 1 min at the measured ≈ 10 ms a model-step
    with pytest.raises(ExperimentError, match="drop --seeds"):
        run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "x", quick=True, seeds=3))
    with pytest.raises(ExperimentError, match="seeds must be <= 5"):
        run_em_vs_sgd(EmVsSgdConfig(out=tmp_path / "x", seeds=6))
    with pytest.raises(ExperimentError, match="deep_seeds"):
        EmVsSgdConfig(seeds=1, deep=True, deep_seeds=2).check()


def _summary(name: str, **kw) -> object:
    from bayesgeom.analyses.dynamics.em_vs_sgd.result import ProtocolSummary

    base = dict(protocol=name, label=name, param="eta", value=30.0, n_seeds=5,
                final_loss_mean=2.0, final_loss_sd=0.01, entropy_mean=2.0, entropy_sd=0.01,
                accuracy_mean=0.2, accuracy_sd=0.01, gap_loss_mean=0.2, gap_loss_sd=0.01,
                gap_entropy_mean=0.2, gap_entropy_sd=0.01, steps_to_tuned_mean=math.nan,
                steps_to_tuned_sd=math.nan, reached=0, speedup=math.nan,
                wall_to_tuned_mean=math.nan, s_per_step=0.01, speedup_wall=math.nan,
                steps_to_sgd_mean=400.0, steps_to_sgd_sd=10.0, reached_sgd=5, speedup_sgd=2.5,
                t_vs_tuned=3.0, p_vs_tuned=0.01, p_holm=0.05, survives=False)
    return ProtocolSummary(**{**base, **kw})


def test_the_verdict_names_what_survives_tuning():
    summ = {p: _summary(p) for p in PROTOCOLS}
    summ[BASELINE] = _summary(BASELINE, param="lr", value=0.3, survives=None)
    summ["adam"] = _summary("adam", param="lr", value=0.01, reached=5, speedup=4.0,
                            speedup_wall=4.0, t_vs_tuned=-7.0, p_holm=0.002, survives=True)
    lines, survivors = verdict(summ, {}, False, [42], 1000)
    assert survivors == ["adam"] and lines[0].startswith("Speed-ups that survive tuning")
    assert "No EM-like protocol's speed-up survives" in lines[0]
    assert "authors' split's 2.5" in lines[1] and "closed-form M-step's 2.5" in lines[1]
    summ["adam"] = _summary("adam")
    summ["em_closed_form"] = _summary("em_closed_form", reached=5, speedup=12.0,
                                      speedup_wall=11.0, final_loss_mean=1.9, t_vs_tuned=-8.0,
                                      p_holm=0.001, survives=True)
    lines, survivors = verdict(summ, {}, False, [42], 1000)
    assert survivors == ["em_closed_form"] and "12.0" in lines[0]
    assert "No EM-like" not in lines[0] and "closed-form" not in lines[1]
    summ["em_closed_form"] = _summary("em_closed_form")
    lines, survivors = verdict(summ, {}, True, [42], 100)
    assert not survivors and lines[0].startswith("QUICK: NOT A RESULT")
    assert lines[1].startswith("No speed-up survives tuning")


def test_tiny_run_writes_reuses_and_repeats(tmp_path, monkeypatch):
    monkeypatch.setattr(em_vs_sgd_config, "QUICK_STEPS", 2)  # the quick preset, two steps
    cfg = EmVsSgdConfig(out=tmp_path / "run", quick=True, progress=False)
    r = run_em_vs_sgd(cfg)
    out = cfg.out
    for f in ("table.parquet", "cells.parquet", "tuning.parquet", "summary.json",
              "manifest.json", "report.html"):
        assert (out / f).is_file(), f
    curves = pd.read_parquet(out / "table.parquet")
    assert len(curves) == len(PROTOCOLS) * 2 * 3 and set(curves["seed"]) == {42, 2024}
    assert r.floor_nats == pytest.approx(1.8292, abs=1e-4) and r.n_params == 820
    assert r.quick and r.verdict[0].startswith("QUICK: NOT A RESULT")
    text = format_summary(r)
    assert text.startswith("What was found")
    verdict_at = text.index("QUICK: NOT A RESULT")
    assert "survive" in text[verdict_at:].splitlines()[1]
    assert "458 +/- 164" in text and "2.3x faster (430 vs 1000" in text
    # a quick run gives no verdict on any row, and says why
    rows = findings(r)
    assert rows and all(f.survives is None for f in rows)
    assert all(f.evidence.startswith("quick run: not a result") for f in rows)
    assert "authors' EM-like schedule" in rows[0].claim and "tuned SGD" in rows[0].control
    # the same numbers as a full run with a planted surviving M-step: the rows carry the
    # run's own verdicts
    em = replace(r.protocols["em_closed_form"], survives=True, speedup=3.0)
    full = replace(r, quick=False, protocols={**r.protocols, "em_closed_form": em},
                   survivors=["em_closed_form"])
    by = {f.claim.split(" trains")[0]: f for f in findings(full)}
    assert by[em.label].survives is True and by[em.label].value == 3.0
    assert by["the authors' EM-like schedule (their learning-rate split, untuned)"].survives \
        is r.protocols["authors_split"].survives
    assert findings(full)[-1].survives is True and "em_closed_form 3.00x" in findings(
        full)[-1].evidence
    html = (out / "report.html").read_text()
    assert "QUICK RUN" in html and "not a result" in html
    assert html.index("What was found") < html.index("Verdict in words")
    assert "Look for:" in html
    # tuning: the chosen value is the pilot argmin and is what the seeds ran with
    trials = pd.read_parquet(out / "tuning.parquet")
    assert len(trials) == 7 * 3 and set(trials["pilot_seed"]) == {PILOT_SEED}
    for p, t in r.tuning.items():
        assert t.chosen == t.grid[int(np.nanargmin(t.pilot_losses))]
        assert {c.value for c in r.cells if c.protocol == p} == {t.chosen}
        assert trials[(trials.protocol == p) & trials.chosen]["value"].tolist() == [t.chosen]
    first = {(c.protocol, c.seed): c.final_loss for c in r.cells}
    for c in r.cells:  # the final loss is the curve's last point
        last = curves[(curves.protocol == c.protocol) & (curves.seed == c.seed)]["loss"].iloc[-1]
        assert last == pytest.approx(c.final_loss, abs=1e-5)
        if c.protocol != BASELINE and np.isfinite(c.steps_to_tuned):
            own = curves[(curves.protocol == c.protocol) & (curves.seed == c.seed)]["loss"]
            assert own.iloc[int(c.steps_to_tuned)] < first[BASELINE, c.seed]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["protocols"]) == set(PROTOCOLS)
    assert summary["protocols"][BASELINE]["p_vs_tuned"] is None  # not tested against itself
    assert summary["verdict"] == r.verdict

    again = run_em_vs_sgd(cfg)  # the same run: every cell reused, the same numbers
    assert all(c.reused for c in again.cells)
    assert {(c.protocol, c.seed): c.final_loss for c in again.cells} == first


def test_deep_variant_runs_on_a_short_sequence():
    losses, test, train_loss = train_deep(42, 2, length=40)
    assert losses.shape == (3,) and losses[-1] == train_loss
    assert set(test) == {"final_loss", "entropy", "accuracy"}
    assert 0.0 <= test["accuracy"] <= 1.0 and 0.0 < test["entropy"] <= math.log(8) + 1e-9
    again = train_deep(42, 2, length=40)
    assert np.array_equal(again[0], losses) and again[1] == test


def test_deep_cells_join_the_summary_and_report(tmp_path, monkeypatch):
    short = mod.train_deep
    monkeypatch.setattr(mod, "train_deep",  # a 40-state sequence keeps the test fast
                        lambda seed, steps, bar=None: short(seed, steps, bar, length=40))
    monkeypatch.setattr(em_vs_sgd_config, "QUICK_STEPS", 1)
    cfg = EmVsSgdConfig(out=tmp_path / "deep", quick=True, deep=True, deep_steps=2,
                        deep_seeds=1, progress=False)
    assert cfg.deep_seed_list() == [42]
    r = run_em_vs_sgd(cfg)
    assert [c.seed for c in r.deep_cells] == [42] and r.deep is not None
    assert r.deep_n_params == 201_992 and r.deep_steps == 2
    assert r.deep.gap_loss_mean == pytest.approx(r.deep_cells[0].final_loss - r.floor_nats)
    curves = pd.read_parquet(cfg.out / "table.parquet")
    assert (curves["protocol"] == "deep_adamw").sum() == 3
    assert "deep_adamw" in format_summary(r)


def test_a_diverged_cell_is_reused_as_nan(tmp_path):
    from tqdm.auto import tqdm

    from bayesgeom.records import Parts

    p = PROTOCOLS["sgd_tuned"]
    parts, bar = Parts(tmp_path / "cells"), tqdm(disable=True)
    cells = [("blown", PILOT_SEED, 1e8), ("fine", PILOT_SEED, 0.1)]
    first = mod.run_group(p, cells, 3, parts, bar)
    again = mod.run_group(p, cells, 3, parts, bar)  # from the cache: JSON null -> NaN
    assert math.isnan(first["blown"].metrics["final_loss"])
    assert math.isnan(again["blown"].metrics["final_loss"]) and again["blown"].metrics["reused"]
    assert choose({"sgd_tuned": {1e8: again["blown"], 0.1: again["fine"]}}) == {
        "sgd_tuned": 0.1}

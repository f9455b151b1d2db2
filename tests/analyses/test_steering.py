"""Steering experiments: the controls (norm-matched, orthogonal), δ = 0 is a no-op, direct =
total for an edit the final norm cannot see, end-to-end runs on a wind tunnel and a tiny Llama
(files, p-values, resume and reproducibility), the CLI and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import interp
from analyses.cli import main
from analyses.steering import SteerConfig, SteerError, run_steer
from analyses.steering_passes import Runner
from analyses.steering_scores import Condition, edit_directions
from windtunnel import PosteriorPrompts

SMALL = dict(n_random=4, n_prompts=48, cut_fractions=(0.5, 1.0), shift_deltas=(-1.0, 1.0),
             batch_size=16, progress=False)


def _text_prompts(model: interp.InterpModel, n: int = 24) -> PosteriorPrompts:
    """Prompts for a tiny text model with a made-up exact posterior over two tokens."""
    rng = np.random.default_rng(0)
    words = ["the cat", "a prior", "entropy measures", "attention routes", "the dog sat"]
    prompts = [" ".join(rng.choice(words, size=int(rng.integers(1, 4)))) for _ in range(n)]
    p = rng.uniform(0.05, 0.95, size=n)
    return PosteriorPrompts(name="toy", prompts=prompts, hyp_ids=np.tile([5, 9], (n, 1)),
                            bayes=np.stack([p, 1 - p], 1), group=np.arange(n) % 3,
                            group_name="k")


def test_random_controls_are_orthogonal_and_norm_matched():
    rng = np.random.default_rng(1)
    units = {L: (v := rng.normal(size=40)) / np.linalg.norm(v) for L in (3, 7)}
    dirs = edit_directions(units, 12, seed=0)
    assert [n for n, _ in dirs] == ["axis", *(f"random-{i}" for i in range(12))]
    for i, L in enumerate((3, 7)):
        u = torch.as_tensor(units[L])
        for _, per_layer in dirs[1:]:
            r = per_layer[i].double()
            assert abs(float(r @ u)) < 1e-6
            assert float(r.norm()) == pytest.approx(1.0, abs=1e-6)
        rs = torch.stack([d[i] for _, d in dirs[1:]]).double()
        assert (rs @ rs.T - torch.eye(12)).abs().max() < 0.9  # distinct directions
    again = edit_directions(units, 12, seed=0)
    for (_, x), (_, y) in zip(dirs, again, strict=True):
        assert all(torch.equal(a, b) for a, b in zip(x, y, strict=True))


@pytest.mark.parametrize("site", ["attn.v", "resid_post"])
def test_zero_shift_leaves_logits_unchanged(text_models, site):
    m = interp.load(text_models["llama"])
    pp = _text_prompts(m)
    site_name = interp.site_name(site, 1)
    runner = Runner(m, pp, [site_name], [1], batch_size=16, direct=True, progress=False)
    clean = runner.clean()
    assert runner.resumed and runner.resume_rel_error < 1e-6
    d = clean.acts[1].shape[1]
    u = torch.randn(d, generator=torch.Generator().manual_seed(0))
    ivs = Condition("shift", 0.0).interventions(runner.sites, [u], [1.7], "all")
    total, direct = runner.edited(ivs)
    torch.testing.assert_close(total.logits, clean.logits, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(direct.logits, clean.logits, atol=1e-6, rtol=1e-6)
    shift = Condition("shift", 2.0).interventions(runner.sites, [u], [1.7], "all")
    moved, _ = runner.edited(shift)
    assert (moved.logits - clean.logits).abs().max() > 1e-4


def test_direct_equals_total_for_an_edit_the_norm_cannot_see(text_models, tmp_path):
    """RMSNorm divides by the RMS of the final residual; reflecting that residual through the
    hyperplane orthogonal to any axis (a cut with fraction 2) keeps its RMS, so the frozen-scale
    direct effect equals the total effect for the axis and every control. A hard cut (fraction 1)
    changes the RMS, and there they differ."""
    m = interp.load(text_models["llama"])
    cfg = SteerConfig(out=tmp_path / "s", site="resid_post", layers=(-1,), positions="last",
                      cut_fractions=(1.0, 2.0), keep_only=False, shift_deltas=(), n_random=3,
                      batch_size=8, progress=False)
    run_steer(cfg, model=m, prompts=_text_prompts(m))
    t = pd.read_parquet(tmp_path / "s" / "table.parquet")
    t = t[(t["metric"] == "kl_clean") & t["group"].isna()]
    wide = t.pivot_table(index=["condition", "direction"], columns="effect", values="value")
    refl, hard = wide.loc["cut+2"], wide.loc["cut+1"]
    assert (refl["total"] > 1e-4).all()
    np.testing.assert_allclose(refl["direct"], refl["total"], rtol=1e-3, atol=1e-7)
    assert (np.abs(hard["direct"] - hard["total"]) > 1e-4 * hard["total"]).any()


def test_windtunnel_run_end_to_end_resumes_and_reproduces(windtunnel_run, tmp_path):
    out = tmp_path / "wt"
    cfg = SteerConfig(model=str(windtunnel_run), out=out, **SMALL)
    s = run_steer(cfg)
    for f in ("table.parquet", "effects.parquet", "prompts.parquet", "summary.json",
              "manifest.json", "report.html", "axes/L1.safetensors", "axes/L1.json"):
        assert (out / f).exists(), f
    assert s.task == "bijection" and s.group_name == "q" and s.layers == [1]
    assert s.resume.used and s.reused_conditions == 0
    assert s.conditions == ["cut+0.5", "cut+1", "keep_only", "shift-1", "shift+1"]
    eff = pd.read_parquet(out / "effects.parquet")
    assert set(eff["effect"]) == {"total", "direct"}
    # every p-value is recomputed from the per-direction rows of the table, independently
    t = pd.read_parquet(out / "table.parquet")
    clean = t[(t["condition"] == "clean") & t["group"].isna()].set_index("metric")["value"]
    for r in eff[eff["metric"].isin(["d_mae", "d_kl_bayes", "kl_clean"])].to_dict("records"):
        metric = r["metric"].removeprefix("d_")
        rows = t[(t["condition"] == r["condition"]) & (t["effect"] == r["effect"])
                 & (t["metric"] == metric) & t["group"].isna()]
        ref = clean[metric] if r["metric"].startswith("d_") else 0.0
        axis = rows[rows["direction"] == "axis"]["value"].item() - ref
        null = rows[rows["direction"] != "axis"]["value"].to_numpy() - ref
        assert r["axis"] == pytest.approx(axis, abs=1e-12) and len(null) == 4
        expected_p = (1 + int((np.abs(null) >= abs(axis) - 1e-12 * max(1, abs(axis))).sum())) / 5
        assert r["p"] == pytest.approx(expected_p)
        assert s.headline[r["condition"]][r["effect"]][r["metric"]].p == pytest.approx(r["p"])
    # a full cut makes the axis coordinate constant: its correlation is undefined
    full = t[(t["condition"] == "cut+1") & (t["direction"] == "axis") & (t["metric"] ==
                                                                          "axis_corr")]
    assert full["value"].isna().all()
    half = t[(t["condition"] == "cut+0.5") & (t["direction"] == "axis")
             & (t["metric"] == "axis_corr") & (t["effect"] == "total")]
    assert np.isfinite(half["value"]).all()
    # the per-group rows cover every prediction index present
    groups = set(t[t["metric"] == "mae_by_q"]["group"].dropna().astype(int))
    assert groups == set(pd.read_parquet(out / "prompts.parquet")["q"])
    # rerun: every condition is reused, the results are identical
    s2 = run_steer(SteerConfig(model=str(windtunnel_run), out=out, **SMALL))
    assert s2.reused_conditions == 5
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"), t)
    # a fresh directory with the same seed gives the same numbers
    run_steer(SteerConfig(model=str(windtunnel_run), out=tmp_path / "again", **SMALL))
    t3 = pd.read_parquet(tmp_path / "again" / "table.parquet")
    np.testing.assert_allclose(t3["value"].to_numpy(float), t["value"].to_numpy(float),
                               rtol=1e-6, atol=1e-9)


def test_multi_layer_edits_fit_one_axis_per_layer(text_models, tmp_path):
    m = interp.load(text_models["gpt_neox"])
    cfg = SteerConfig(out=tmp_path / "ml", layers=(0, -1), cut_fractions=(1.0,),
                      keep_only=False, shift_deltas=(1.0,), n_random=3, batch_size=8,
                      progress=False)
    s = run_steer(cfg, model=m, prompts=_text_prompts(m))
    assert s.layers == [0, 1] and s.sites == ["attn.0.v", "attn.1.v"]
    assert s.resume.from_layer == 0 and set(s.axes) == {"0", "1"}
    t = pd.read_parquet(tmp_path / "ml" / "table.parquet")
    assert set(t[t["metric"] == "axis_corr"]["layer"].dropna().astype(int)) == {0, 1}


def test_cli_json_and_bad_input(windtunnel_run, tmp_path, capsys):
    rc = main(["steer", "--model", str(windtunnel_run), "--out", str(tmp_path / "c"),
               "--n-random", "3", "--n-prompts", "32", "--cut", "1", "--shift", "1",
               "--no-keep-only", "--no-direct", "--json", "--no-progress"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["conditions"] == ["cut+1", "shift+1"] and not s["direct"]
    assert set(s["headline"]["cut+1"]) == {"total"}
    assert "d_mae" in s["headline"]["cut+1"]["total"]
    for args, msg in ((["--task", "hmm"], "trained on 'bijection'"),
                      (["--layers", "5"], "does not exist"),
                      (["--n-random", "0"], "n_random"),
                      (["--shift", "0"], "non-zero")):
        rc = main(["steer", "--model", str(windtunnel_run), "--out", str(tmp_path / "e"),
                   "--no-progress", *args])
        assert rc == 2
        assert msg in capsys.readouterr().err
    with pytest.raises(SteerError, match="site must be one of"):
        SteerConfig(site="attn.x").check()


def test_text_model_needs_sula_or_a_windtunnel_task(text_models, tmp_path):
    m = interp.load(text_models["llama"])
    with pytest.raises(SteerError, match="needs a wind-tunnel model"):
        run_steer(SteerConfig(task="bijection", out=tmp_path / "x", progress=False), model=m)

"""Steering experiments: the control directions (energy-, variance-, norm- or PC-matched; the
planted cases of the null are in ``test_nulls.py`` beside it), edit energies, δ = 0 is a no-op,
norm-frozen = total for an edit the final norm cannot see, the direct path against a manual
computation, a wind tunnel's next-token metrics on its hypothesis tokens only, end-to-end runs on
a wind tunnel and a tiny Llama (files, p-values, adjustment, resume and reproducibility), the
CLI and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from bayesgeom import interp
from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.steer.nulls import LayerAxis, edit_directions, edit_energy
from bayesgeom.analyses.steer.passes import PassOutput, Runner
from bayesgeom.analyses.steer.report import findings, format_summary
from bayesgeom.analyses.steer.run import SteerConfig, run_steer
from bayesgeom.analyses.steer.scores import CleanRef, Condition, score, tidy
from bayesgeom.probes import fit_entropy_axis, holm
from bayesgeom.probes.energy_controls import EnergyMoments
from bayesgeom.windtunnel import PosteriorPrompts

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


@pytest.mark.parametrize("null", ["energy", "orthonormal", "variance", "norm", "pcs"])
def test_control_directions_are_orthogonal_unit_and_reproducible(null):
    rng = np.random.default_rng(1)
    acts = {L: rng.normal(size=(60, 40)) * np.linspace(3, 0.2, 40) for L in (3, 7)}
    moments = {L: EnergyMoments.of(a) for L, a in acts.items()}
    h = {L: acts[L][:, 5] + rng.normal(size=60) for L in (3, 7)}
    reads = {L: LayerAxis.of(fit_entropy_axis(acts[L], h[L]), acts[L], "readout")
             for L in (3, 7)}
    dirs = edit_directions(reads, acts, moments, null, 12, seed=0)
    assert dirs.names == ["axis", *(f"control-{i}" for i in range(12))]
    for i, L in enumerate((3, 7)):
        u = torch.as_tensor(reads[L].unit)
        rs = torch.stack([d[i] for _, d in list(dirs)[1:]]).double()
        assert (rs @ u).abs().max() < 1e-6
        torch.testing.assert_close(rs.norm(dim=1), torch.ones(12, dtype=torch.float64))
        assert (rs @ rs.T - torch.eye(12)).abs().max() < 0.95  # distinct directions
        c = dirs.controls[L]
        assert c.method == ("independent" if null == "energy" else null)
        assert c.independent == (null not in ("orthonormal", "pcs"))
        assert 1 <= c.n_effective_euclidean <= 12 + 1e-9
        if null == "orthonormal":  # one frame: mutually orthogonal
            torch.testing.assert_close(rs @ rs.T, torch.eye(12, dtype=torch.float64))
        if null in ("energy", "orthonormal"):
            assert c.energy_ratio_min > 1 - 1e-6 and c.energy_ratio_max < 1 + 1e-6
        if null == "variance":
            ratios = interp.variance_ratios(rs, u, torch.as_tensor(acts[L]))
            np.testing.assert_allclose(ratios.numpy(), 1.0, rtol=1e-5)
        if null == "pcs":  # the principal components are orthogonal in the standardised space
            z = torch.as_tensor(reads[L].axis.scale) * rs
            z = z / z.norm(dim=1, keepdim=True)
            assert (z[0] @ z[1]).abs() < 0.95
    again = edit_directions(reads, acts, moments, null, 12, seed=0)
    for (_, a), (_, b) in zip(dirs, again, strict=True):
        assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_edit_energy_of_a_full_cut_is_the_share_of_the_axis():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 8)) + 1.0
    m = EnergyMoments.of(x)
    u = rng.normal(size=8)
    u /= np.linalg.norm(u)
    (cut,) = Condition("cut", 1.0).interventions(["s"], [torch.as_tensor(3 * u)], [1.0], "all")
    assert edit_energy(m, cut) == pytest.approx(np.mean((x @ u) ** 2) / np.mean((x ** 2).sum(1)))
    (half,) = Condition("cut", 0.5).interventions(["s"], [torch.as_tensor(u)], [1.0], "all")
    assert edit_energy(m, half) == pytest.approx(0.25 * edit_energy(m, cut))
    (sh,) = Condition("shift", 2.0).interventions(["s"], [torch.as_tensor(u)], [1.5], "all")
    assert edit_energy(m, sh) == pytest.approx(9.0 / np.mean((x ** 2).sum(1)))
    (keep,) = Condition("keep_only", float("nan")).interventions(["s"], [torch.as_tensor(u)],
                                                                 [1.0], "all")
    kept = np.outer(x @ u, u)
    assert edit_energy(m, keep) == pytest.approx(np.mean(((kept - x) ** 2).sum(1))
                                                 / np.mean((x ** 2).sum(1)))


def test_edit_space_standardised_lets_paper_iiis_read_out_move():
    """A full cut along the readout direction makes the axis coordinate constant (both
    read-outs undefined); along the standardised PC1 used as a raw direction (Paper III's code)
    the standardised projection still varies and its correlation with H moves."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 6)) * [5.0, 1.0, 0.3, 2.0, 1.0, 0.5]
    x[:, 1] += 0.8 * x[:, 0] / 5
    hh = x[:, 0] / 5 + 0.5 * x[:, 1] + 0.3 * rng.normal(size=300)
    ax = fit_entropy_axis(x, hh)
    for space, moves in (("readout", False), ("standardised", True)):
        la = LayerAxis.of(ax, x, space)
        (cut,) = Condition("cut", 1.0).interventions(["s"], [torch.as_tensor(la.unit)], [1.0],
                                                     "all")
        xe = cut.edit(torch.as_tensor(x), torch.as_tensor(la.unit)).numpy()
        assert np.isnan(la.coordinate_corr(xe, hh))  # x'·u is constant after a full cut
        before, after = la.projection_corr(x, hh), la.projection_corr(xe, hh)
        assert before == pytest.approx(ax.pearson)
        assert np.isfinite(after) == moves
        if moves:
            assert abs(after - before) > 0.05


def test_windtunnel_vocabulary_metrics_read_only_the_hypothesis_tokens():
    """A huge logit on a token outside the hypotheses (never trained in a wind tunnel) changes
    nothing the wind-tunnel metrics read, and everything the full-vocabulary ones read."""
    n = 4
    pp = PosteriorPrompts(name="toy", prompts=[f"p{i}" for i in range(n)],
                          hyp_ids=np.tile([1, 2], (n, 1)), bayes=np.full((n, 2), 0.5),
                          group=np.zeros(n, int), group_name="q")
    clean = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    clean[:, 5] = -5.0
    edited = clean.clone()
    edited[:, 5] = 100.0
    for vocab, sees in ((pp.hyp_ids, False), (None, True)):
        s, _ = score(PassOutput(edited), pp, {}, CleanRef.of(PassOutput(clean), vocab), vocab)
        assert (s.kl_clean > 1.0) == sees and (s.top1_flip == 1.0) == sees
        assert (abs(s.dh_next) > 0.5) == sees
        if not sees:
            assert s.kl_clean == pytest.approx(0, abs=1e-12) and s.top1_flip == 0
            assert s.dh_next == pytest.approx(0, abs=1e-12)
    rows = tidy(s, "c", "cut", 1.0, "axis", "total", "q")
    assert {r["metric"] for r in rows} >= {"kl_clean", "top1_flip", "dh_next"}


@pytest.mark.parametrize("site", ["attn.v", "resid_post"])
def test_zero_shift_leaves_logits_unchanged(text_models, site):
    m = interp.load(text_models["llama"])
    pp = _text_prompts(m)
    site_name = interp.site_name(site, 1)
    runner = Runner(m, pp, [site_name], [1], batch_size=16, norm_frozen=True, direct_path=True,
                    progress=False)
    clean = runner.clean()
    assert runner.resumed and runner.resume_rel_error < 1e-6 and runner.head_rel_error < 1e-5
    d = clean.acts[1].shape[1]
    u = torch.randn(d, generator=torch.Generator().manual_seed(0))
    ivs = Condition("shift", 0.0).interventions(runner.sites, [u], [1.7], "all")
    passes = runner.edited(ivs)
    assert list(passes) == ["total", "norm_frozen", "direct_path"]
    for po in passes.values():
        torch.testing.assert_close(po.logits, clean.logits, atol=1e-5, rtol=1e-5)
    shift = Condition("shift", 2.0).interventions(runner.sites, [u], [1.7], "all")
    moved = runner.edited(shift)["total"]
    assert (moved.logits - clean.logits).abs().max() > 1e-4


def test_direct_path_is_the_layer_output_change_through_the_clean_head(text_models):
    """Direct path at a value edit of the last layer: unembed(norm(h_clean + Δattn_out)) at the
    final token, computed here by hand with the model's own modules; it leaves out the edited
    layer's MLP, so it differs from the total effect. For an edit of the final residual stream
    itself there is nothing downstream to hold: direct path = total."""
    m = interp.load(text_models["llama"])
    pp = _text_prompts(m, 12)
    u = torch.randn(2 * 8, generator=torch.Generator().manual_seed(1))
    runner = Runner(m, pp, ["attn.1.v"], [1], batch_size=5, norm_frozen=False,
                    direct_path=True, progress=False)
    runner.clean()
    (iv,) = Condition("cut", 1.0).interventions(["attn.1.v"], [u], [1.0], "all")
    passes = runner.edited([iv])
    assert set(passes) == {"total", "direct_path"}

    tokens, _ = m.encode(pp.prompts)
    batch = m.batch(tokens, list(range(len(tokens))))
    got: dict[str, torch.Tensor] = {}

    def keep(name: str):
        return lambda x: got.__setitem__(name, x[:, -1].detach().clone())

    with m.hooks([("resid_post.1", keep("h")), ("attn_out.1", keep("clean"))]):
        m.forward(batch)
    with m.intervene(iv), m.hooks([("attn_out.1", keep("edited"))]):
        m.forward(batch)
    with torch.no_grad():
        manual = m.hf.lm_head(m.hf.model.norm(got["h"] + got["edited"] - got["clean"]))
    torch.testing.assert_close(passes["direct_path"].logits, manual.float(), atol=2e-5,
                               rtol=1e-4)
    assert (passes["direct_path"].logits - passes["total"].logits).abs().max() > 1e-4

    final = Runner(m, pp, ["resid_post.1"], [1], batch_size=5, norm_frozen=False,
                   direct_path=True, progress=False)
    final.clean()
    (iv,) = Condition("shift", 2.0).interventions(["resid_post.1"], [torch.ones(32)], [1.0],
                                                  "all")
    passes = final.edited([iv])
    torch.testing.assert_close(passes["direct_path"].logits, passes["total"].logits,
                               atol=2e-5, rtol=1e-4)


def test_norm_frozen_equals_total_for_an_edit_the_norm_cannot_see(text_models, tmp_path):
    """RMSNorm divides by the RMS of the final residual; reflecting that residual through the
    hyperplane orthogonal to any axis (a cut with fraction 2) keeps its RMS, so the norm-frozen
    effect equals the total effect for the axis and every control. A hard cut (fraction 1)
    changes the RMS, and there they differ. (The direct path, with nothing downstream of the
    final residual, equals the total effect.)"""
    m = interp.load(text_models["llama"])
    cfg = SteerConfig(out=tmp_path / "s", site="resid_post", layers=(-1,), positions="last",
                      cut_fractions=(1.0, 2.0), keep_only=False, shift_deltas=(), n_random=3,
                      direct_path=True, batch_size=8, progress=False)
    s = run_steer(cfg, model=m, prompts=_text_prompts(m))
    assert set(s.headline["cut+1"]) == {"total", "norm_frozen", "direct_path"}
    assert s.vocabulary == "full"  # a text model: the whole next-token distribution
    t = pd.read_parquet(tmp_path / "s" / "table.parquet")
    t = t[(t["metric"] == "kl_clean") & t["group"].isna()]
    wide = t.pivot_table(index=["condition", "direction"], columns="effect", values="value")
    refl, hard = wide.loc["cut+2"], wide.loc["cut+1"]
    assert (refl["total"] > 1e-4).all()
    np.testing.assert_allclose(refl["norm_frozen"], refl["total"], rtol=1e-3, atol=1e-7)
    assert (np.abs(hard["norm_frozen"] - hard["total"]) > 1e-4 * hard["total"]).any()
    np.testing.assert_allclose(wide["direct_path"], wide["total"], rtol=1e-3, atol=1e-6)


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
    assert s.vocabulary == "hypotheses" and s.null == "energy" and s.edit_space == "readout"
    # bijection without replacement: the exact entropy is a function of position, said plainly
    assert any("position alone predicts the exact entropy" in n for n in s.notes)
    eff = pd.read_parquet(out / "effects.parquet")
    assert set(eff["effect"]) == {"total", "norm_frozen"}
    # adjusted p-values: Holm over every test, and over the primary family only
    np.testing.assert_allclose(eff["p_holm"], holm(eff["p"].to_numpy()))
    prim = eff[eff["primary"]]
    assert list(prim["condition"]) == s.conditions
    assert set(prim["metric"]) == {"d_kl_bayes"} and set(prim["effect"]) == {"total"}
    np.testing.assert_allclose(prim["p_holm_primary"], holm(prim["p"].to_numpy()))
    np.testing.assert_allclose(prim["p_z_holm_primary"], holm(prim["p_z"].to_numpy()))
    assert eff[~eff["primary"]]["p_holm_primary"].isna().all()
    # four controls are too few independent draws: every verdict is withheld, and said
    assert eff["verdict_withheld"].all() and s.verdict_withheld and not eff["survives"].any()
    assert prim["withheld"].str.contains("rests on 4 independent draws").all()
    assert (prim["n_draws"] == 4).all() and not s.controls_adequate
    # the controls' effective number, from the per-prompt KL of every pass (kept)
    t = pd.read_parquet(out / "table.parquet")
    pp_rows = pd.read_parquet(out / "per_prompt.parquet")
    assert len(pp_rows) == 48 * (1 + 5 * 5 * 2)  # clean + conditions × directions × effects
    prim_eff = eff[eff["metric"] == "d_kl_bayes"]
    assert ((prim_eff["n_effective"] >= 1 - 1e-9) & (prim_eff["n_effective"] <= 4 + 1e-9)
            | prim_eff["n_effective"].isna()).all()
    full = prim_eff["n_effective"].notna()
    assert np.allclose(prim_eff[full]["n_effective_independent"], 4 * 47 / 50)
    for cond in s.conditions:
        sel = (pp_rows["condition"] == cond) & (pp_rows["direction"] == "axis")
        mean = t[(t["condition"] == cond) & (t["direction"] == "axis") & t["group"].isna()
                 & (t["effect"] == "total") & (t["metric"] == "kl_bayes")]["value"].item()
        kl = pp_rows[sel & (pp_rows["effect"] == "total")]["value"].mean()
        assert kl == pytest.approx(mean, rel=1e-9)
    assert s.controls_needed == 100 and "no verdict" in format_summary(s)
    assert s.survivors == list(prim[prim["survives"]]["condition"])
    assert eff["at_floor"].equals(eff["p"] <= 1 / 5 + 1e-12)
    # the controls carry the axis' energy where the edits apply (or the most they can, with the
    # reason), and every edit's energy is in the table and the effects
    c = s.controls["1"]
    assert c.energy_ratio_min <= c.energy_ratio_median <= c.energy_ratio_max
    assert (c.method == "independent") == (c.reason == "") and 0 <= c.mean_abs_cos <= 1
    assert c.method in ("independent", "unmatched") and c.independent
    assert (c.method == "independent") == (c.reach_min <= 1 <= c.reach_max)
    en = t[t["metric"] == "edit_energy"]
    assert set(en["effect"]) == {"edit"} and len(en) == 5 * 5  # conditions × directions
    full_cut = en[(en["condition"] == "cut+1") & (en["direction"] == "axis")]["value"].item()
    assert full_cut > 0 and np.isfinite(eff["energy_axis"]).all()
    assert s.headline["cut+1"]["total"]["d_kl_bayes"].energy_axis == pytest.approx(full_cut)
    shifts = en[en["kind"] == "shift"].groupby("condition")["value"]
    assert (shifts.max() - shifts.min()).max() < 1e-9  # a shift adds (δσ)² along any direction
    text = format_summary(s)
    assert "no verdict" in text and "hypothesis tokens only" in text
    # the verdict table opens the summary and the report: four controls withhold every verdict
    assert text.startswith("What was found")
    # the 20-step tunnel has not learned its task: the learned-first gate heads the table
    # and withholds every verdict (tests/analyses/kit/test_learned.py); the mechanics below
    # read the table without it
    from dataclasses import replace
    assert s.learned is not None and not s.learned.learned
    gated = findings(s)
    assert "learned its task" in gated[0].claim and gated[0].survives is False
    assert all(r.survives is None for r in gated[1:])
    s = replace(s, learned=None)
    rows = findings(s)
    assert 2 <= len(rows) <= 6 and "read-out" in rows[0].claim
    edits = rows[1:]
    assert [r.claim.split(":")[0] for r in edits] == [
        "full cut of the axis component", "keep only the axis component",
        "shift of -1σ along the axis", "shift of +1σ along the axis"]
    assert all(r.survives is None and "verdict withheld" in r.evidence for r in edits)
    assert all("effective number of the controls' effects" in r.evidence and r.unit == "bits"
               for r in edits)
    assert all("energy moved, controls / axis" in r.evidence for r in edits)
    # the energy caveat goes to the edits whose energy the controls do not move, never shifts
    unmatched = "of the axis' energy where the edits are applied"
    assert all(unmatched not in r.evidence for r in edits[2:])
    assert (unmatched in edits[0].evidence) == (not c.matched)
    assert all(r.control.startswith("4 independent random directions") or
               r.control.startswith("4 independent random directions (no direction")
               for r in edits)
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("Set-up") < html.index("Look for:")
    # where the run gives a verdict the table carries it; a quick run gives none
    stat = s.headline["cut+1"]["total"]["d_kl_bayes"]
    keep = s.headline["keep_only"]["total"]["d_kl_bayes"]
    planted = replace(s, verdict_withheld=False, headline={**s.headline, "cut+1": {
        "total": {"d_kl_bayes": replace(stat, survives=True, p_holm_primary=0.01,
                                        withheld="")}},
        "keep_only": {"total": {"d_kl_bayes": replace(keep, withheld="")}}})
    assert findings(planted)[1].survives is True and "0.01" in findings(planted)[1].evidence
    assert findings(planted)[2].survives is False
    quick = findings(replace(planted, quick=True))
    assert all(r.survives is None for r in quick) and "quick run" in quick[1].evidence
    if eff["at_floor"].any():
        assert "≤ 1/5" in text
    # every p-value is recomputed from the per-direction rows of the table, independently
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
    # (edited along the readout direction, Paper III's read-out is constant too)
    for metric in ("axis_corr", "axis_proj_corr"):
        full = t[(t["condition"] == "cut+1") & (t["direction"] == "axis")
                 & (t["metric"] == metric)]
        assert full["value"].isna().all()
        half = t[(t["condition"] == "cut+0.5") & (t["direction"] == "axis")
                 & (t["metric"] == metric) & (t["effect"] == "total")]
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
               "--no-keep-only", "--no-norm-frozen", "--null", "norm", "--edit-space",
               "standardised", "--json", "--no-progress"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["conditions"] == ["cut+1", "shift+1"] and not s["norm_frozen"]
    assert s["null"] == "norm" and s["edit_space"] == "standardised" and not s["direct_path"]
    assert set(s["headline"]["cut+1"]) == {"total"}
    assert "d_mae" in s["headline"]["cut+1"]["total"]
    for args, msg in ((["--task", "hmm"], "trained on 'bijection'"),
                      (["--layers", "5"], "does not exist"),
                      (["--n-random", "0"], "n_random"),
                      (["--shift", "0"], "non-zero"),
                      (["--direct-path", "--layers", "0,1"], "one edited layer"),
                      (["--null", "pcs", "--n-random", "400"], "principal components")):
        rc = main(["steer", "--model", str(windtunnel_run), "--out", str(tmp_path / "e"),
                   "--no-progress", *args])
        assert rc == 2
        assert msg in capsys.readouterr().err
    with pytest.raises(ExperimentError, match="site must be one of"):
        SteerConfig(site="attn.x").check()


def test_text_model_needs_sula_or_a_windtunnel_task(text_models, tmp_path):
    m = interp.load(text_models["llama"])
    with pytest.raises(ExperimentError, match="needs a wind-tunnel model"):
        run_steer(SteerConfig(task="bijection", out=tmp_path / "x", progress=False), model=m)

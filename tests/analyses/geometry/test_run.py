"""The geometry pipeline end to end on tiny random family models and a tiny wind-tunnel run."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from bayesgeom import interp
from bayesgeom.analyses.cli import main
from bayesgeom.analyses.geometry.entropy_sampler import quantile_bins
from bayesgeom.analyses.geometry.report import (
    bootstrap_note,
    excluding_intervals,
    findings,
    format_summary,
    table1,
    write_report,
)
from bayesgeom.analyses.geometry.result import GeometryResult
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.options import layer_list
from bayesgeom.probes import (
    attention_entropy_profile,
    fit_pca,
    head_entropies,
    spearman,
    summarize_pca,
)
from bayesgeom.probes.bootstrap import EXCLUDES_NOTE, Interval
from bayesgeom.records import RunDirError, read_result, to_json

SUMMARY_KEYS = {"model", "layer", "n_prompts", "pc1", "pc1_pc2", "rho_pc1_entropy", "probe_r2",
                "key_orthogonality", "attention_focusing", "criteria_met"}


def _config(model, out, corpus_paths, **kw) -> GeometryConfig:
    base = dict(model=str(model), out=out, n_per_quintile=3, pool_size=120, n_resamples=60,
                progress=False, corpus_paths=corpus_paths)
    return GeometryConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def llama_run(text_models, tmp_path_factory):
    """One run on the GQA family, mixed + two domains (bare-machine corpora)."""
    from bayesgeom.analyses.prompts import corpora

    mp = pytest.MonkeyPatch()
    mp.setattr(corpora, "package_dir", lambda m: None)
    paths = corpora.CorpusPaths(r_libraries=())
    out = tmp_path_factory.mktemp("geometry") / "llama"
    try:
        summary = run_geometry(_config(text_models["llama"], out, paths,
                                       prompts=("mixed", "code", "legal")))
    finally:
        mp.undo()
    return summary, out, paths


def test_summary_has_the_paper_iii_fields(llama_run):
    result, out, _ = llama_run
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= SUMMARY_KEYS  # the headline set sits at the top level
    assert summary["pc1"] == summary["prompt_sets"]["mixed"]["pc1"]
    assert result.layer == 1 and result.layers == [0, 1]
    assert result.headline.n_prompts == 15 and result.prompts == "mixed"
    assert list(result.prompt_sets) == ["mixed", "code", "legal"]
    for s in result.prompt_sets.values():
        assert 0 < s.pc1.estimate <= s.pc1_pc2.estimate <= 1 + 1e-12
        assert s.pc1.low <= s.pc1.high and s.pc1.n_resamples == 60
        assert s.criteria.evaluated == 3 and s.criteria_met == f"{s.criteria.n_met}/3"
        assert s.criteria.n_met == sum(bool(v) for v in (
            s.criteria.value_manifold, s.criteria.key_orthogonality,
            s.criteria.attention_focusing))
    ko = result.key_orthogonality
    assert [r.layer for r in ko.per_layer] == [0, 1]
    assert ko.gaussian_baseline == pytest.approx(math.sqrt(2 / (math.pi * 32)))
    assert ko.gaussian_baseline_d_head == pytest.approx(math.sqrt(2 / (math.pi * 8)))
    assert abs(ko.random_init_baseline.mean_abs_cos - ko.gaussian_baseline) < 0.03
    assert result.pool.domains == ["code", "legal"] and result.pool.size == 120
    for name in ("table.parquet", "prompts.parquet", "pool.parquet", "summary.json",
                 "manifest.json", "report.html"):
        assert (out / name).stat().st_size > 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["config"]["n_per_quintile"] == 3 and man["experiment"] == "geometry"
    assert "git_commit" in man
    html = (out / "report.html").read_text()
    assert "Table 1" in html and "PCA scatter: legal" in html and html.count("plotly") > 3
    # the verdict table comes first; every figure says what to look for
    assert html.index("What was found") < html.index("Table 1")
    assert html.count("Look for:") == len(result.prompt_sets) + 1
    rows = findings(result)
    assert [r.claim.split(" (")[0] for r in rows] == [
        "mixed, layer 1: low-dimensional value manifold", "mixed, layer 1: PC1 tracks entropy",
        "keys orthogonal", "mixed, layer 1: attention focuses through depth"]
    assert all("random-init twin" in r.control for r in rows)


def test_summary_json_is_the_typed_result(llama_run):
    """summary.json reads back into an equal GeometryResult (NaN-aware: via its JSON)."""
    result, out, _ = llama_run
    again = read_result(GeometryResult, out / "summary.json")
    assert isinstance(again.headline.pc1.low, float)
    assert to_json(again) == to_json(result)
    table = pd.read_parquet(out / "table.parquet")
    assert len(table) == len(result.metrics)


def test_sampled_prompts_are_stratified_by_the_pool_entropy(llama_run):
    _, out, _ = llama_run
    pool = pd.read_parquet(out / "pool.parquet")
    prompts = pd.read_parquet(out / "prompts.parquet")
    for name, rows in prompts.groupby("prompt_set"):
        cand = pool if name == "mixed" else pool[pool["domain"] == name]
        assert np.bincount(rows["quintile"]).tolist() == [3] * 5
        bins = pd.Series(quantile_bins(cand["entropy_bits"].to_numpy()), index=cand["prompt_id"])
        assert (bins[rows["prompt_id"]].to_numpy() == rows["quintile"].to_numpy()).all()
        if name != "mixed":
            assert (rows["domain"] == name).all()
        # the capture's entropy is the pool's (same model, same prompt, other batching)
        np.testing.assert_allclose(rows["entropy_bits"], rows["entropy_bits_pool"], atol=1e-4)


def test_numbers_match_an_independent_recomputation(llama_run, text_models):
    summary, out, _ = llama_run
    prompts = pd.read_parquet(out / "prompts.parquet")
    legal = prompts[prompts["prompt_set"] == "legal"]
    model = interp.load(text_models["llama"])
    store = interp.capture(model, list(legal["text"]), ["attn.1.v", "attn.0.pattern",
                                                        "attn.1.pattern"], progress=False)
    v = store["attn.1.v"].double().numpy().reshape(len(legal), -1)
    s = summary.prompt_sets["legal"]
    ref = summarize_pca(v, standardize=True, n_resamples=60, seed=0)
    assert s.pc1.estimate == pytest.approx(ref.pc1.estimate, abs=1e-6)
    assert s.pc1_pc2.estimate == pytest.approx(ref.pc1_pc2.estimate, abs=1e-6)
    pc = fit_pca(v, standardize=True).transform(v)[:, 0]
    np.testing.assert_allclose(np.abs(legal["pc1"]), np.abs(pc), atol=1e-5)
    rho = spearman(pc, store.entropy_bits.double().numpy())
    assert s.rho_pc1_entropy.estimate == pytest.approx(rho, abs=1e-6)
    pats = [store[f"attn.{L}.pattern"].double().numpy() for L in (0, 1)]
    prof = attention_entropy_profile(head_entropies(pats), n_resamples=60, seed=0)
    assert s.attention_focusing.estimate == pytest.approx(prof.focusing.estimate, abs=1e-6)
    table = pd.read_parquet(out / "table.parquet")
    r2 = table[(table.prompt_set == "legal") & (table.metric == "probe_r2") & (table.layer == 1)
               & (table.reference == "model")]
    assert r2["value"].item() == pytest.approx(s.probe_r2_at(1))


def test_rerun_reuses_pool_scores_and_gives_the_same_numbers(llama_run, text_models, tmp_path):
    summary, first, paths = llama_run
    from bayesgeom.analyses.prompts import corpora

    out = tmp_path / "rerun"
    shutil.copytree(first, out)

    from bayesgeom.analyses.geometry import pool as geometry_pool

    def no_scoring(*a, **k):
        raise AssertionError("a rerun must not score the pool again")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(corpora, "package_dir", lambda m: None)
        mp.setattr(geometry_pool, "next_token_entropy", no_scoring)
        with pytest.raises(RunDirError, match="finished geometry run with other settings"):
            run_geometry(_config(text_models["llama"], out, paths, prompts=("legal",)))
        again = run_geometry(_config(text_models["llama"], out, paths,
                                     prompts=("mixed", "code", "legal")))
    assert again.pool.reused_scores is True and summary.pool.reused_scores is False
    assert to_json(again.prompt_sets) == to_json(summary.prompt_sets)
    assert to_json(again.key_orthogonality) == to_json(summary.key_orthogonality)
    pool = out / "pool.parquet"  # a changed pool file is not reused: it is rescored
    pool.write_bytes(pool.read_bytes()[:-10])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(corpora, "package_dir", lambda m: None)
        rescored = run_geometry(_config(text_models["llama"], out, paths, prompts=("legal",),
                                        restart=True))
    assert rescored.pool.reused_scores is False
    with pytest.MonkeyPatch.context() as mp:  # another model in the same place: no reuse
        mp.setattr(corpora, "package_dir", lambda m: None)
        other = run_geometry(_config(text_models["phi"], out, paths, prompts=("legal",),
                                     restart=True))
    assert other.pool.reused_scores is False


@pytest.mark.parametrize("family", ["gpt_neox", "phi", "mistral"])
def test_other_families_run_end_to_end(text_models, tmp_path, base_corpora, family):
    s = run_geometry(_config(text_models[family], tmp_path, base_corpora, prompts=("legal",),
                             pool_size=60, layers=(0,), layer=-1))
    assert s.prompts == "legal" and s.headline.n_prompts == 15 and s.layers == [0, 1]
    assert len(s.key_orthogonality.per_layer) == 2
    assert s.headline.attention_focusing is not None and s.headline.criteria_met.endswith("/3")


def test_wind_tunnel_run_adds_the_bayes_entropy_target(windtunnel_run, tmp_path):
    s = run_geometry(GeometryConfig(model=str(windtunnel_run), out=tmp_path, n_per_quintile=3,
                                    pool_size=60, n_resamples=60, progress=False))
    assert s.prompts == "task" and "hypothesis tokens" in s.entropy_target
    assert s.headline.rho_pc1_bayes_entropy is not None
    assert [r.layer for r in s.headline.probe_r2_bayes_entropy] == [0, 1]
    prompts = pd.read_parquet(tmp_path / "prompts.parquet")
    # bijection V = 6 without replacement: H_Bayes = log2(V - q) at the q-th key
    np.testing.assert_allclose(prompts["bayes_entropy_bits"], np.log2(6 - prompts["query"]))
    assert all(t[-1] < 6 for t in prompts["tokens"])  # every prompt ends on a key token
    assert (prompts["entropy_bits"] <= math.log2(6) + 1e-5).all()  # hypothesis-slice entropy


def test_cli_prints_the_json_summary(text_models, tmp_path, capsys, base_corpora):
    rc = main(["geometry", "--model", str(text_models["llama"]), "--prompts", "mixed,legal",
               "--n-per-quintile", "3", "--pool-size", "40", "--bootstrap", "30",
               "--layers", "0-1", "--out", str(tmp_path), "--json"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s) >= SUMMARY_KEYS and s["n_prompts"] == 15
    assert list(s["prompt_sets"]) == ["mixed", "legal"]
    rc = main(["geometry", "--model", str(text_models["llama"]), "--prompts", "legal",
               "--n-per-quintile", "3", "--pool-size", "40", "--bootstrap", "30",
               "--out", str(tmp_path), "--no-progress", "--restart"])
    text = capsys.readouterr().out
    assert rc == 0 and "legal" in text and "key orthogonality" in text and "report.html" in text
    assert text.lstrip().startswith("What was found")


@pytest.mark.parametrize("args, msg", [
    (["--prompts", "poetry"], "unknown prompt set(s) poetry"),
    (["--prompts", "math"], "pip install champ-dataset"),
    (["--layers", "x"], "--layers takes 'all'"),
    (["--layer", "7"], "valid layers are 0..1"),
    (["--n-per-quintile", "30"], "smaller than the 150 prompts"),
    (["--n-per-quintile", "2"], "too few for the cross-validated probe"),
])
def test_cli_bad_input_is_one_clear_error(text_models, tmp_path, capsys, base_corpora, args,
                                          msg):
    rc = main(["geometry", "--model", str(text_models["llama"]), "--pool-size", "40",
               "--n-per-quintile", "3", "--out", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("bayesgeom: error:") and msg in err


def test_wind_tunnel_refuses_text_prompts(windtunnel_run, tmp_path, capsys):
    rc = main(["geometry", "--model", str(windtunnel_run), "--prompts", "mixed",
               "--out", str(tmp_path)])
    assert rc == 2 and "--prompts task" in capsys.readouterr().err


def test_layer_lists():
    import argparse

    assert layer_list("all") is None
    assert layer_list("0,5,-1") == (0, 5, -1)
    assert layer_list("2-4") == (2, 3, 4)
    with pytest.raises(argparse.ArgumentTypeError):
        layer_list(",")
    with pytest.raises(ExperimentError, match="n_per_quintile must be >= 1"):
        run_geometry(GeometryConfig(n_per_quintile=0))


def _planted(result, low: float = 0.192, high: float = 0.293):
    """``result`` with the mixed set's PC1+PC2 at 18.2 % and an interval wholly above it (the
    audit's GCIDE case), its twin's at 10 % (9-15 %): apart, so the old verdict survived."""
    mixed = result.prompt_sets["mixed"]
    s = replace(mixed, pc1_pc2=Interval(0.182, low, high, 0.95, 200, 0.243, "percentile",
                                        -math.inf))
    twin = replace(result.random_init.prompt_sets["mixed"],
                   pc1_pc2=Interval(0.10, 0.09, 0.15, 0.95, 200, 0.12, "bca", 0.1, 0.01))
    init = replace(result.random_init,
                   prompt_sets={**result.random_init.prompt_sets, "mixed": twin})
    return replace(result, headline=s, prompt_sets={**result.prompt_sets, "mixed": s},
                   random_init=init)


def test_an_interval_that_excludes_its_estimate_is_flagged_not_evidence(llama_run, tmp_path):
    """Issue 35: every report and summary that prints such an interval says so, and the
    value-manifold verdict does not rest on it (without the flag it survived its twin)."""
    result = _planted(llama_run[0])
    assert not result.headline.pc1_pc2.contains_estimate
    row = next(f for f in findings(result) if "value manifold" in f.claim)
    assert row.survives is None and EXCLUDES_NOTE + " (the model's)" in row.evidence
    text = format_summary(result)
    assert "18.2 [19.2, 29.3]!" in text
    assert f"! {EXCLUDES_NOTE}: mixed PC1+PC2" in text
    cell = table1(result).set_index("prompt set").loc["mixed", "PC1+PC2 95% CI"]
    assert cell == f"(19.2, 29.3) {EXCLUDES_NOTE}"
    assert "mixed PC1+PC2" in bootstrap_note(result)
    html = write_report(tmp_path / "report.html", result, pd.read_parquet(
        llama_run[1] / "prompts.parquet"), {}).read_text()
    assert html.count(EXCLUDES_NOTE) >= 3  # verdict, table cell, bootstrap note
    # the same numbers with the interval around the estimate: a verdict again
    fine = _planted(llama_run[0], low=0.16)
    assert fine.headline.pc1_pc2.contains_estimate and "mixed PC1+PC2" not in \
        excluding_intervals(fine) and "18.2 [16.0, 29.3] " in format_summary(fine)
    assert next(f for f in findings(fine) if "value manifold" in f.claim).survives is True


def test_the_runs_own_intervals_are_bca_and_their_flags_are_printed(llama_run):
    result = llama_run[0]
    ivs = [iv for s in result.prompt_sets.values()
           for iv in (s.pc1, s.pc1_pc2, s.rho_pc1_entropy, s.attention_focusing)]
    assert {iv.method for iv in ivs} <= {"bca", "percentile"} and "bca" in {iv.method
                                                                           for iv in ivs}
    assert all(iv.method == "bca" or not math.isfinite(iv.z0) for iv in ivs)
    bad = excluding_intervals(result)
    assert (f"! {EXCLUDES_NOTE}" in format_summary(result)) == bool(bad)
    for name in bad:
        assert name in bootstrap_note(result)

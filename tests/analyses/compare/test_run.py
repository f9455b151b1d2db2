"""bayesgeom compare: a wind tunnel and a text model through the same geometry code, one table."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.compare.report import findings, format_summary
from bayesgeom.analyses.compare.run import CompareConfig, run_compare
from bayesgeom.analyses.geometry import run as geometry
from bayesgeom.analyses.geometry.report import findings as geometry_findings
from bayesgeom.analyses.geometry.run import GeometryConfig
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.records import RunDirError


def _small(**kw) -> GeometryConfig:
    return GeometryConfig(n_per_quintile=4, pool_size=60, n_resamples=20, curve_resamples=10,
                          progress=False, **kw)


@pytest.fixture
def compared(windtunnel_run, text_models, base_corpora, tmp_path):
    cfg = CompareConfig(models=(str(windtunnel_run), str(text_models["llama"])),
                        labels=("wt", "llama"), out=tmp_path / "cmp",
                        geometry=_small(prompts=("legal",)))
    return cfg, run_compare(cfg)


def test_same_metrics_for_both_models(compared):
    cfg, s = compared
    for f in ("table.parquet", "curves.parquet", "side_by_side.csv", "summary.json",
              "manifest.json", "report.html", "wt/summary.json", "llama/summary.json"):
        assert (cfg.out / f).exists(), f
    t = pd.read_parquet(cfg.out / "table.parquet")
    per = {lab: set(t[t.label == lab]["metric"]) for lab in ("wt", "llama")}
    shared = {"pc1", "pc1_pc2", "abs_rho_pc1_entropy", "probe_r2", "key_orthogonality",
              "criteria_met", "participation_ratio"}
    assert shared <= per["wt"] and shared <= per["llama"]
    assert "abs_rho_pc1_bayes_entropy" in per["wt"]  # the wind tunnel also has the exact target
    # the numbers are the geometry runs' own (read back from their own summary files)
    for lab in ("wt", "llama"):
        g = json.loads((cfg.out / lab / "summary.json").read_text())
        head = next(iter(g["prompt_sets"].values()))
        row = t[(t.label == lab) & (t.metric == "pc1")].iloc[0]
        assert row["value"] == pytest.approx(head["pc1"]["estimate"])
        assert row["low"] == pytest.approx(head["pc1"]["low"])
        assert s.metrics[lab]["model.key_orthogonality"] == pytest.approx(
            g["key_orthogonality"]["mean_abs_cos"])
        assert s.metrics[lab][f"{g['prompts']}.criteria_met"] == float(
            g["criteria_met"].split("/")[0])
    wide = pd.read_csv(cfg.out / "side_by_side.csv")
    assert list(wide.columns) == ["metric", "wt · task", "llama · legal"]
    c = pd.read_parquet(cfg.out / "curves.parquet")
    assert c["depth"].between(0, 1).all() and set(c["label"]) == {"wt", "llama"}


def test_verdicts_are_the_geometry_runs_own_and_lead_the_report(compared):
    """Per model: key orthogonality and |ρ(PC1, entropy)| against the twin (and position),
    read from the comparison's table with the very verdicts each geometry run gives."""
    cfg, s = compared
    gated = findings(s, pd.read_parquet(cfg.out / "table.parquet"))
    assert len(gated) == 5 and gated[0].claim.startswith("wt: the wind tunnel has learned")
    rows = findings(replace(s, learned={}), pd.read_parquet(cfg.out / "table.parquet"))
    assert len(rows) == 4
    for i, lab in enumerate(("wt", "llama")):
        key, rho = rows[2 * i: 2 * i + 2]
        assert key.claim.startswith(f"{lab}: keys orthogonal") and "twin" in key.control
        assert rho.claim.startswith(f"{lab} · ") and "position alone" in rho.control
        own = {f.claim: f for f in geometry_findings(replace(s.results[lab], learned=None))}
        for mine in (key, rho):
            theirs = own[mine.claim.removeprefix(f"{lab}: ").removeprefix(f"{lab} · ")]
            assert (mine.survives, mine.value) == (theirs.survives, pytest.approx(theirs.value))
            assert mine.evidence == theirs.evidence
    assert format_summary(s).startswith("What was found")
    html = (cfg.out / "report.html").read_text()
    assert html.index("What was found") < html.index("Side by side") < html.index("Look for:")


def test_rerun_reuses_finished_runs(compared, monkeypatch):
    cfg, s = compared
    monkeypatch.setattr("bayesgeom.analyses.compare.run.run_geometry",
                        lambda *a, **k: pytest.fail("geometry rerun"))
    again = run_compare(cfg)
    assert again.reused == ["wt", "llama"]
    assert json.dumps(again.metrics) == json.dumps(s.metrics)  # NaN-aware equality


def test_changed_settings_rerun(compared, monkeypatch):
    cfg, _ = compared
    calls = []
    real = geometry.run_geometry
    monkeypatch.setattr("bayesgeom.analyses.compare.run.run_geometry",
                        lambda g, model=None: calls.append(g.model) or real(g, model=model))
    cfg.geometry.seed = 1
    with pytest.raises(RunDirError, match=r"finished compare run with other settings "
                                          r"\(geometry.seed 0 -> 1\)"):
        run_compare(cfg)
    assert calls == []
    cfg.restart = True
    assert run_compare(cfg).reused == [] and len(calls) == 2


def test_loaded_models_are_used(windtunnel_run, tmp_path):
    m = open_model(windtunnel_run)
    cfg = CompareConfig(models=(str(windtunnel_run),), out=tmp_path, geometry=_small())
    s = run_compare(cfg, models=[m])
    assert s.labels == ["run"] and s.models["run"].prompt_sets == ["task"]


def test_bad_input(tmp_path):
    with pytest.raises(ExperimentError, match="labels must differ"):
        CompareConfig(models=("a/run", "b/run")).resolved_labels()
    with pytest.raises(ExperimentError, match="2 labels for 1"):
        CompareConfig(models=("x",), labels=("a", "b")).resolved_labels()
    assert CompareConfig(models=(None, "/x/wt-run/")).resolved_labels() == ["smollm2", "wt-run"]
    assert main(["compare", "--models", "a/run", "b/run", "--out", str(tmp_path)]) == 2


def test_cli(windtunnel_run, text_models, base_corpora, tmp_path, capsys):
    rc = main(["compare", "--models", str(windtunnel_run), str(text_models["phi"]), "--labels",
               "wt,phi", "--out", str(tmp_path), "--prompts", "legal", "--n-per-quintile",
               "4", "--pool-size", "60", "--bootstrap", "20", "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "wt · task" in text and "phi · legal" in text and "key orthogonality" in text

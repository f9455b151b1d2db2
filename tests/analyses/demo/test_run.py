"""bayesgeom demo end to end on tiny models (a V = 6 wind tunnel and a tiny random Llama): every
step's files, the combined offline report and summary, and a rerun that reuses everything."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from bayesgeom.analyses.demo import run as demo
from bayesgeom.analyses.demo.report import format_summary
from bayesgeom.analyses.demo.result import DemoResult
from bayesgeom.analyses.demo.run import DemoConfig, DemoSizes, run_demo
from bayesgeom.records import read_result, to_json

TINY = DemoSizes(transformer_steps=40, hmm_steps=40, n_per_quintile=4, pool_size=60,
                 n_resamples=20, curve_resamples=10, sula_per_k=3, steer_per_k=3,
                 cut_fractions=(1.0,), shift_deltas=(1.0,), n_random=3, windtunnel_prompts=24)


@pytest.fixture(scope="module")
def demo_run(text_models, tmp_path_factory):
    from bayesgeom.analyses.prompts import corpora
    from bayesgeom.analyses.prompts.corpora import CorpusPaths

    mp = pytest.MonkeyPatch()
    mp.setattr(corpora, "package_dir", lambda module: None)  # a bare machine: legal only
    cfg = DemoConfig(out=tmp_path_factory.mktemp("demo") / "demo", quick=True,
                     model=str(text_models["llama"]), preset="tiny", task_params={"V": 6},
                     quick_sizes=TINY, progress=False, corpus_paths=CorpusPaths(r_libraries=()))
    try:
        yield cfg, mp
    finally:
        mp.undo()


def test_demo_writes_every_step_and_one_offline_report(demo_run, capsys):
    cfg, _ = demo_run
    summary = run_demo(cfg)
    capsys.readouterr()
    text = format_summary(summary)
    assert text.startswith("QUICK RUN:")  # a quick demo says first that it is no result
    assert "QUICK RUN:" in (cfg.out / "report.html").read_text(encoding="utf-8")
    assert all(f"== {s}" in text for s in ("wind tunnels", "small vs large", "SULA",
                                            "steering the LLM",
                                            "steering the HMM wind tunnel"))
    out = cfg.out
    for f in ("table.parquet", "headline.parquet", "summary.json", "manifest.json",
              "report.html", "compare/side_by_side.csv", "compare/bijection/summary.json",
              "compare/hmm/summary.json",
              "compare/llm/summary.json", "sula/summary.json", "steer-llm/effects.parquet",
              "steer-windtunnel/effects.parquet"):
        assert (out / f).exists(), f
    table = pd.read_parquet(out / "table.parquet")
    assert list(table["arch"]) == ["transformer", "mlp-position", "mlp-flat"]
    assert table["entropy_mae_bits"].notna().all()
    assert to_json(read_result(DemoResult, out / "summary.json")) == to_json(summary)
    assert summary.prompt_sets == ["mixed", "code"]  # no math corpus: stdlib code
    assert set(summary.sula.conditions) == {"main", "remap", "shuffled", "ablated"}
    for part, folder in (("steer_llm", "steer-llm"), ("steer_windtunnel", "steer-windtunnel")):
        cut = getattr(summary, part).headline["cut+1"]
        assert set(cut) == {"total"}  # the demo skips the norm-frozen passes
        # the demo's headline is the step's own effect table, p on the permutation lattice
        eff = pd.read_parquet(out / folder / "effects.parquet")
        row = eff[(eff.condition == "cut+1") & (eff.effect == "total")
                  & (eff.metric == "d_kl_bayes")].iloc[0]
        assert cut["total"]["d_kl_bayes"].p == row["p"]
        assert cut["total"]["d_kl_bayes"].axis == row["axis"]
        k = row["p"] * (row["n_null"] + 1)
        assert row["n_null"] == 3 and abs(k - round(k)) < 1e-9 and 1 <= round(k) <= 4
    head = pd.read_parquet(out / "headline.parquet")
    assert set(head["section"]) == {"windtunnel", "compare", "sula", "steer_llm",
                                    "steer_windtunnel"}
    sula = head[(head.section == "sula") & (head.condition == "main") & (head.metric == "mae")]
    assert sula["value"].item() == summary.sula.conditions["main"].mae
    assert np.isfinite(head[head.section == "windtunnel"]["value"]).all()
    html = (out / "report.html").read_text()
    assert "Run manifest" in html and "SULA" in html
    # each steering run's sections name their model; ids stay unique; the summary is a table
    for who in ("LLM", "HMM tunnel"):
        assert f">{who}: dose–response against control directions</h2>" in html
        assert f">{who}: per condition, the axis edit&#x27;s effects" in html
    ids = re.findall(r"<h2 id='([^']+)'", html)
    assert len(ids) == len(set(ids))
    # the verdict table first: every claim of the run, none with a verdict (a quick run)
    assert html.index("QUICK RUN") < html.index("What was found") < html.index(">1. Wind")
    assert html.count("quick run: not a result") >= 4 and "survives</td>" not in html
    assert "history-free filter" in html and text.index("What was found") < text.index("== wind")
    assert set(summary.hmm_controls) == {"history-free", "window 2", "window 3", "window 4"}
    assert 'src="https://cdn.plot.ly' not in html and html.count("<script") >= 1
    assert json.loads((out / "manifest.json").read_text())["versions"]["torch"]


def test_rerun_reuses_checkpoints_and_results(demo_run, monkeypatch, capsys):
    cfg, _ = demo_run
    if not (cfg.out / "summary.json").exists():
        run_demo(cfg)
    first = json.loads((cfg.out / "summary.json").read_text())
    ckpt = cfg.out / "windtunnel" / "transformer" / "model" / "model.safetensors"
    mtime = ckpt.stat().st_mtime_ns
    monkeypatch.setattr("bayesgeom.analyses.compare.run.run_geometry",
                        lambda *a, **k: pytest.fail("rerun"))
    again = to_json(run_demo(cfg))
    capsys.readouterr()
    assert ckpt.stat().st_mtime_ns == mtime
    assert again["windtunnel"] == first["windtunnel"]
    assert again["compare"]["metrics"] == first["compare"]["metrics"]
    assert again["compare"]["reused"] == ["bijection", "hmm", "llm"]
    assert again["hmm"] == first["hmm"]
    assert again["sula"]["conditions"] == first["sula"]["conditions"]
    assert sorted(again["sula"]["reused_conditions"]) == ["ablated", "main", "remap", "shuffled"]
    for part in ("steer_llm", "steer_windtunnel"):
        assert again[part]["headline"] == first[part]["headline"]
        assert again[part]["reused_conditions"] == len(again[part]["conditions"])


def test_domain_preference_falls_back(monkeypatch):
    from bayesgeom.analyses.prompts import corpora
    from bayesgeom.analyses.prompts.corpora import CorpusPaths

    monkeypatch.setattr(corpora, "package_dir", lambda module: None)
    assert demo.domain_set(CorpusPaths(r_libraries=()), 0) == "code"  # the stdlib sources


def test_demo_sizes_default_to_the_ten_minute_run_with_the_long_one_named():
    from bayesgeom.analyses.demo.config import FULL, QUICK, STANDARD
    from bayesgeom.analyses.kit.errors import ExperimentError

    assert DemoConfig().sizes() == STANDARD
    assert DemoConfig(paper=True).sizes() == FULL
    assert DemoConfig(quick=True).sizes() == QUICK
    assert STANDARD.transformer_steps < FULL.transformer_steps
    with pytest.raises(ExperimentError, match="exclude each other"):
        DemoConfig(quick=True, paper=True).check()


def test_the_wind_tunnel_verdicts_hold_each_transformer_against_its_controls():
    """The bijection transformer survives below every MLP baseline; the HMM transformer does
    not survive when it is no better than the history-free filter (the CPU plateau)."""
    from types import SimpleNamespace

    from bayesgeom.analyses.demo.report import windtunnel_findings
    from bayesgeom.analyses.demo.result import TrainRow

    def row(arch, mae):
        return TrainRow(arch, 100, 2000, 60.0, mae, mae, mae, 0.1, 0.5)

    r = SimpleNamespace(V=20, quick=False, windtunnel=[row("transformer", 0.022),
                                                       row("mlp-flat", 0.31),
                                                       row("mlp-position", 1.1)],
                        hmm=row("transformer", 0.106),
                        hmm_controls={"window 2": 0.047, "window 3": 0.015,
                                      "history-free": 0.080})
    bij, hmm = windtunnel_findings(r)
    assert bij.survives is True and "14.1x below the best baseline" in bij.evidence
    assert hmm.survives is False and "no better than the shortest window" in hmm.evidence
    r.hmm = row("transformer", 0.03)
    assert windtunnel_findings(r)[1].survives is True
    assert "up to 2 observations" in windtunnel_findings(r)[1].evidence
    r.quick = True
    assert {f.survives for f in windtunnel_findings(r)} == {None}

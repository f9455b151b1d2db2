"""bayesgeom demo end to end on tiny models (a V = 6 wind tunnel and a tiny random Llama): every
step's files, the combined offline report and summary, and a rerun that reuses everything."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analyses import demo
from analyses.demo import DemoConfig, DemoSizes, run_demo

TINY = DemoSizes(transformer_steps=40, n_per_quintile=4, pool_size=60, n_resamples=20,
                 curve_resamples=10, sula_per_k=3, steer_per_k=3, cut_fractions=(1.0,),
                 shift_deltas=(1.0,), n_random=3, windtunnel_prompts=24)


@pytest.fixture(scope="module")
def demo_run(text_models, tmp_path_factory):
    from analyses import corpora
    from analyses.corpora import CorpusPaths

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
    printed = capsys.readouterr().out
    for needle in ("[1/5]", "[5/5]", "mlp-flat", "== SULA", "== steering the wind tunnel",
                   "report:"):
        assert needle in printed
    out = cfg.out
    for f in ("table.parquet", "headline.parquet", "summary.json", "manifest.json",
              "report.html", "compare/side_by_side.csv", "compare/windtunnel/summary.json",
              "compare/llm/summary.json", "sula/summary.json", "steer-llm/effects.parquet",
              "steer-windtunnel/effects.parquet"):
        assert (out / f).exists(), f
    table = pd.read_parquet(out / "table.parquet")
    assert list(table["arch"]) == ["transformer", "mlp-position", "mlp-flat"]
    assert table["entropy_mae_bits"].notna().all()
    assert json.loads((out / "summary.json").read_text()) == summary
    assert summary["compare"]["prompt_sets"] == ["mixed", "code"]  # no math corpus: stdlib code
    assert set(summary["sula"]["conditions"]) == {"main", "remap", "shuffled", "ablated"}
    for part in ("steer_llm", "steer_windtunnel"):
        cut = summary[part]["headline"]["cut+1"]
        assert set(cut) == {"total", "direct"} and cut["total"]["d_kl_bayes"]["p"] > 0
    head = pd.read_parquet(out / "headline.parquet")
    assert set(head["section"]) == {"windtunnel", "compare", "sula", "steer_llm",
                                    "steer_windtunnel"}
    html = (out / "report.html").read_text()
    assert "Run manifest" in html and "SULA" in html and "Dose–response" in html
    assert 'src="https://cdn.plot.ly' not in html and html.count("<script") >= 1
    assert json.loads((out / "manifest.json").read_text())["versions"]["torch"]


def test_rerun_reuses_checkpoints_and_results(demo_run, monkeypatch, capsys):
    cfg, _ = demo_run
    if not (cfg.out / "summary.json").exists():
        run_demo(cfg)
    first = json.loads((cfg.out / "summary.json").read_text())
    ckpt = cfg.out / "windtunnel" / "transformer" / "model" / "model.safetensors"
    mtime = ckpt.stat().st_mtime_ns
    monkeypatch.setattr("analyses.compare.run_geometry", lambda *a, **k: pytest.fail("rerun"))
    again = run_demo(cfg)
    capsys.readouterr()
    assert ckpt.stat().st_mtime_ns == mtime
    for k in ("windtunnel", "compare", "sula"):
        assert again[k] == first[k], k
    assert again["steer_llm"] == first["steer_llm"]
    assert again["steer_windtunnel"] == first["steer_windtunnel"]


def test_domain_preference_falls_back(monkeypatch):
    from analyses import corpora
    from analyses.corpora import CorpusPaths

    monkeypatch.setattr(corpora, "package_dir", lambda module: None)
    assert demo.domain_set(CorpusPaths(r_libraries=()), 0) == "code"  # the stdlib sources

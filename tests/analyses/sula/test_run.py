"""bayesgeom sula on a tiny text model: label checks, files, controls, rerun reuse, the CLI,
and SULA prompts feeding the steering experiment."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayesgeom import interp
from bayesgeom.analyses.cli import main
from bayesgeom.analyses.prompts.sula import label_token, pick_labels, sula_prompts
from bayesgeom.analyses.sula.report import findings, format_summary
from bayesgeom.analyses.sula.result import SulaResult
from bayesgeom.analyses.sula.run import SulaConfig, run_sula
from bayesgeom.records import read_result, to_json
from bayesgeom.windtunnel.sula import SulaError, expected_entropy_bits


class WordTokenizer:
    """Splits on spaces; words in ``vocab`` are one token, others one token per letter."""

    def __init__(self, vocab: set[str]):
        self.vocab = sorted(vocab)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        out: list[int] = []
        for i, w in enumerate(text.split(" ")):
            piece = (" " if i else "") + w
            if w in self.vocab:
                out.append(1000 + self.vocab.index(w))
            else:
                out += [ord(c) for c in piece]
        return out


def test_pick_labels_checks_single_tokens():
    tok = WordTokenizer({"lug", "wug", "kep", "tuv", "gax"})
    lab, rem, ids = pick_labels(tok)
    assert lab == ("lug", "wug") and rem == ("kep", "tuv")
    assert len(set(ids.values())) == 4
    assert label_token(tok, "dax") is None
    lab, rem, _ = pick_labels(tok, labels=("tuv", "gax"))
    assert lab == ("tuv", "gax") and not set(rem) & {"tuv", "gax"}
    with pytest.raises(SulaError, match=r"'dax' is not a single token.*e\.g\. wug"):
        pick_labels(tok, labels=("dax", "lug"))
    with pytest.raises(SulaError, match="differ"):
        pick_labels(tok, labels=("lug", "lug"))
    with pytest.raises(SulaError, match="tokenizer"):
        label_token(None, "lug")


@pytest.fixture(scope="module")
def sula_run(text_models, tmp_path_factory):
    m = interp.load(text_models["llama"])
    out = tmp_path_factory.mktemp("sula") / "run"
    cfg = SulaConfig(model=str(text_models["llama"]), out=out, n_per_k=6, progress=False)
    return m, cfg, run_sula(cfg, model=m)


def test_run_writes_tables_summary_and_report(sula_run):
    m, cfg, s = sula_run
    for f in ("table.parquet", "per_k.parquet", "summary.json", "manifest.json", "report.html"):
        assert (cfg.out / f).exists()
    assert to_json(read_result(SulaResult, cfg.out / "summary.json")) == to_json(s)
    t = pd.read_parquet(cfg.out / "table.parquet")
    assert len(t) == 4 * 5 * 6 and set(t["condition"]) == {"main", "remap", "shuffled", "ablated"}
    # shuffled and ablated are flat at 1 bit; main/remap share their exact posteriors
    for c in ("shuffled", "ablated"):
        np.testing.assert_allclose(t[t.condition == c]["h_bayes_bits"], 1.0)
    np.testing.assert_array_equal(t[t.condition == "main"]["h_bayes_bits"].to_numpy(),
                                  t[t.condition == "remap"]["h_bayes_bits"].to_numpy())
    # the model posterior really is the renormalised next-token distribution over the labels
    main = t[t.condition == "main"].reset_index(drop=True)
    pp = sula_prompts("main", ks=cfg.ks, n_per_k=6, alpha=cfg.alpha, seed=cfg.seed,
                      labels=s.labels, remap_labels=s.remap_labels, ids=s.label_token_ids)
    z = m.logits(list(pp.prompts[:3]))
    p = np.exp(z[:, pp.hyp_ids[0]].double().numpy())
    np.testing.assert_allclose(main["p_model_1"][:3], p[:, 0] / p.sum(1), rtol=1e-4)
    assert ((main["label_mass"] > 0) & (main["label_mass"] < 1)).all()
    c = s.conditions["main"]
    assert c.mae == pytest.approx(np.abs(main.h_model_bits - main.h_bayes_bits).mean())
    assert set(c.per_k) == {"0", "1", "2", "4", "8"}
    for k, cal in c.per_k.items():
        rows = main[main.k == int(k)]
        assert cal.n == 6 and cal.mae == pytest.approx(
            np.abs(rows.h_model_bits - rows.h_bayes_bits).mean())
    assert s.expected_h_bayes_bits["2"] == pytest.approx(expected_entropy_bits(2))
    assert np.isnan(s.conditions["shuffled"].corr)  # H_Bayes is constant
    assert "pc1" in t and np.isfinite(t["pc1"]).all()
    assert s.site == f"attn.{m.n_layers - 1}.v" and s.reused_conditions == []


def test_report_and_summary_open_with_the_verdict_table(sula_run):
    """The run records no test of main against its controls: every finding says so, with the
    control conditions' and Paper III's numbers beside it."""
    _, cfg, s = sula_run
    rows = findings(s)
    assert len(rows) == 4 and all(r.survives is None for r in rows)
    assert all("no criterion" in r.evidence for r in rows)
    assert rows[0].value == pytest.approx(s.conditions["main"].mae) and rows[0].unit == "bits"
    assert "shuffled labels" in rows[0].control and "Paper III" in rows[0].control
    assert "evidence ablation" in rows[2].control
    assert format_summary(s).startswith("What was found")
    html = (cfg.out / "report.html").read_text()
    assert html.index("What was found") < html.index("Summary") < html.index("Look for:")


def test_rerun_reuses_scores_and_matches(sula_run, monkeypatch):
    m, cfg, s = sula_run
    monkeypatch.setattr(interp, "capture", lambda *a, **k: pytest.fail("rescored"))
    again = run_sula(cfg, model=m)
    assert sorted(again.reused_conditions) == sorted(cfg.conditions)
    strip = ("reused_conditions", "wall_s")
    assert {k: v for k, v in to_json(again).items() if k not in strip} == \
        {k: v for k, v in to_json(s).items() if k not in strip}
    part = next((cfg.out / "parts").glob("main.table.parquet"))
    part.write_bytes(part.read_bytes() + b"x")  # a damaged part is rescored, not reused
    monkeypatch.undo()
    third = run_sula(cfg, model=m)
    assert "main" not in third.reused_conditions


def test_cli(text_models, tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(["sula", "--model", str(text_models["llama"]), "--out", str(out), "--n-per-k",
               "2", "--ks", "0,2", "--conditions", "main,shuffled", "--json", "--no-progress"])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["conditions"]) == {"main", "shuffled"} and s["ks"] == [0, 2]
    assert main(["sula", "--model", str(text_models["llama"]), "--out", str(out),
                 "--conditions", "main,bogus"]) == 2
    assert "bogus" in capsys.readouterr().err


def test_windtunnel_model_is_refused(windtunnel_run, tmp_path):
    with pytest.raises(SulaError, match="tokenizer"):
        run_sula(SulaConfig(model=str(windtunnel_run), out=tmp_path, n_per_k=1, progress=False))

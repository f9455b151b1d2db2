"""``bayesgeom detect`` on a wind tunnel (hypothesis-token frame) and a tiny LLM (frequent
tokens), with the random-init baseline and the chance level beside each head."""

from __future__ import annotations

import json

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.detect.run import DetectConfig, run_detect
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.records import read_table


def test_wind_tunnel_frame_is_its_hypothesis_tokens(windtunnel_run, tmp_path):
    res = run_detect(DetectConfig(model=str(windtunnel_run), out=tmp_path / "d",
                                  n_sequences=16, progress=False))
    assert res.frame == "hypothesis tokens" and res.n_frame_tokens == 6  # bijection V = 6
    table = read_table(tmp_path / "d" / "table.parquet")
    assert set(table["condition"]) == {"trained", "random_init"}
    assert len(table) == 2 * 2 * 2  # conditions x layers x heads (tiny preset)
    assert table["orthogonality"].between(0, 1).all() and (table["m"] == 6).all()
    means = res.layer_means()
    assert set(means["layer"]) == {0, 1}
    for f in ("summary.json", "manifest.json", "report.html"):
        assert (tmp_path / "d" / f).is_file()


def test_llm_frame_from_builtin_text_via_the_cli(text_models, tmp_path, capsys):
    code = main(["detect", "--model", str(text_models["llama"]), "--out", str(tmp_path / "l"),
                 "--n-prompts", "8", "--n-tokens", "16", "--layers", "-1", "--json",
                 "--no-progress"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["layers"] == [1] and out["frame"] == "most frequent tokens"
    assert {h["condition"] for h in out["heads"]} == {"trained", "random_init"}
    assert all(h["m"] == out["n_frame_tokens"] for h in out["heads"])


def test_a_model_without_attention_is_refused(tmp_path):
    from bayesgeom import interp
    from bayesgeom.windtunnel import make_token_task
    from bayesgeom.windtunnel.architectures import build_model
    task = make_token_task("bijection", V=6)
    m = interp.InterpModel(build_model(task, "lstm", "tiny"), task=task)
    with pytest.raises((ExperimentError, interp.InterpError)):
        run_detect(DetectConfig(out=tmp_path / "x", progress=False), model=m)

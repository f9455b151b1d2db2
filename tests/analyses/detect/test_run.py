"""``bayesgeom detect`` on a wind tunnel (hypothesis-token frame) and a tiny LLM (frequent
tokens), with the random-init baseline and the chance level beside each head."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.detect.report import findings, format_summary
from bayesgeom.analyses.detect.result import DetectResult, HeadFrame
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
    assert (table["orthogonality"] == 1 - table["mean_abs_cos"]).all()
    assert table["isotropy"].between(0, 1).all() and table["orthogonalisable"].all()  # 6 <= d
    means = res.layer_means()
    assert set(means["layer"]) == {0, 1}
    for f in ("summary.json", "manifest.json", "report.html"):
        assert (tmp_path / "d" / f).is_file()
    html = (tmp_path / "d" / "report.html").read_text()
    assert html.index("What was found") < html.index("The frame") < html.index("Look for:")
    gated = findings(res)  # the 20-step tunnel has not learned: no verdict (learned-first gate)
    assert gated[0].survives is False and all(r.survives is None for r in gated[1:])
    rows = findings(replace(res, learned=None))  # the verdicts behind the gate
    assert [r.survives is None for r in rows] == [False, False, True]  # isotropy: no verdict
    assert rows[0].control.startswith("random-init twin") and "Paper I" in rows[0].claim
    assert format_summary(res).startswith("What was found")


def _frame(condition: str, layer: int, orthogonality: float) -> HeadFrame:
    return HeadFrame(condition=condition, layer=layer, head=0, m=6, d=16,
                     mean_abs_cos=1 - orthogonality, orthogonality=orthogonality,
                     chance_abs_cos=0.2, chance=0.8, reduction_vs_random=0.0,
                     orthogonalisable=True, welch=0.0, ceiling=1.0, vs_ceiling=orthogonality,
                     isotropy=0.5, isotropy_chance=0.6, effective_rank=4.0, utilisation=0.25)


@pytest.mark.parametrize("trained, survives", [((0.95, 0.9), True), ((0.5, 0.6), False)])
def test_the_verdict_holds_the_keys_against_the_twin_and_random_vectors(trained, survives):
    """Orthogonal trained keys (0.95, 0.9 against a twin at 0.6 and random vectors at 0.8)
    survive; keys no better than the twin do not."""
    heads = [_frame("trained", L, v) for L, v in enumerate(trained)]
    heads += [_frame("random_init", L, 0.6) for L in range(2)]
    res = DetectResult(model="toy", frame="hypothesis tokens", n_frame_tokens=6, layers=[0, 1],
                       n_kv_heads=1, d_head=16, heads=heads, twin_seed=0)
    every, best, iso = findings(res)
    assert every.survives is survives and best.survives is survives and iso.survives is None
    assert "random-init twin 0.6" in every.control and "random vectors 0.8" in every.control
    assert f"best layer, {trained.index(max(trained))}" in best.claim


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


def test_the_twin_defaults_to_the_runs_training_seed(tmp_path):
    """A wind-tunnel run's random-init twin is seeded by its training seed (so it is the run's
    step 0) unless --twin-seed says otherwise; other models fall back to --seed."""
    from bayesgeom import interp
    from bayesgeom.analyses.kit.models import open_model, twin_seed
    from bayesgeom.windtunnel import make_token_task
    from bayesgeom.windtunnel.architectures import build_model
    from bayesgeom.windtunnel.training import TrainConfig, train

    run = tmp_path / "run"
    train(TrainConfig(task="bijection", task_params={"V": 6}, arch="transformer",
                      preset="tiny", steps=2, seed=5, batch_size=8, eval_every=2, eval_size=8,
                      final_eval_size=8, ckpt_every=2, warmup_steps=1), run, progress=False)
    assert twin_seed(str(run), None, 0) == 5 and twin_seed(str(run / "model"), None, 0) == 5
    assert twin_seed(str(run), 3, 0) == 3 and twin_seed(None, None, 7) == 7
    m = open_model(str(run))
    step0 = interp.InterpModel(build_model(make_token_task("bijection", V=6), "transformer",
                                           "tiny", 5))
    assert interp.random_init_twin(m, seed=5).weights_digest() == step0.weights_digest()
    res = run_detect(DetectConfig(model=str(run), out=tmp_path / "d", n_sequences=8,
                                  progress=False))
    assert res.twin_seed == 5
    res = run_detect(DetectConfig(model=str(run), out=tmp_path / "e", n_sequences=8,
                                  twin_seed=2, progress=False))
    assert res.twin_seed == 2

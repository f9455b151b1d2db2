"""bayesgeom lens end to end: a small run on the committed, trained HMM tunnel (the Bayes lens
at the last depth beats the twin and position alone; the table, summary and report), SULA
prompts on a tiny text model, the quick banner, and refusals before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.lens.report import findings, format_summary
from bayesgeom.analyses.lens.result import LensResult
from bayesgeom.analyses.lens.run import LensConfig, run_lens
from bayesgeom.records import read_result

HMM = Path(__file__).resolve().parents[3] / "tunnels" / "hmm-k20"
SMALL = {"n_train": 12, "n_test": 10, "steps": 8, "n_boot": 200, "progress": False}


@pytest.fixture(scope="module")
def hmm_run(tmp_path_factory) -> tuple[LensResult, Path]:
    out = tmp_path_factory.mktemp("lens") / "hmm"
    res = run_lens(LensConfig(model=str(HMM), out=out, layers=(0, 4), **SMALL))
    return res, out


def test_bayes_lens_at_the_last_depth_beats_the_twin_and_position(hmm_run):
    res, _ = hmm_run
    assert res.source == "wind tunnel" and res.task == "hmm" and res.twin_seed == 0
    assert res.sites == ["resid_pre.0", "resid_post.0", "resid_post.4", "resid_post.8"]
    assert res.depths == [0, 1, 5, 9] and res.n_test_rows == 10 * 20
    t, w = res.score("trained", "bayes", 9), res.score("random_init", "bayes", 9)
    p = res.score("position_only", "position_mean", 9)
    assert t.kl_posterior_high < w.kl_posterior_low and t.kl_posterior_high < p.kl_posterior_low
    # the logit lens at the last depth is the model's output: no KL to itself
    assert res.score("trained", "logit", 9).kl_final_bits < 1e-6
    assert max(res.readout_max_abs_diff.values()) < 1e-4
    for s in res.scores:  # every interval holds its estimate
        assert s.kl_posterior_low <= s.kl_posterior_bits <= s.kl_posterior_high
    assert res.decodable_depth is not None and res.decodable_depth <= 9
    assert res.posterior_depth is not None and res.answer_depth["logit"] is not None
    rows = findings(res)
    assert rows[0].claim.startswith("the wind tunnel has learned") and rows[0].survives
    assert rows[1].survives is True  # the last-depth Bayes lens clears both controls


def test_files_table_and_summary(hmm_run):
    res, out = hmm_run
    table = pd.read_parquet(out / "table.parquet")
    assert len(table) == 4 * (2 * 3 + 1)  # depths x (two models x three lenses + baseline)
    assert not table.duplicated(["condition", "lens", "depth"]).any()
    assert set(table["lens"]) == {"logit", "bayes", "tuned", "position_mean"}
    pos = table[table.condition == "position_only"]
    assert pos["kl_posterior_bits"].nunique() == 1  # the same at every depth
    back = read_result(LensResult, out / "summary.json")
    assert back.decodable_depth == res.decodable_depth and len(back.scores) == len(table)
    assert "kl_posterior" in back.definitions and back.learned is not None
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["experiment"] == "lens" and manifest["config"]["n_train"] == 12
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("Definitions") and "QUICK" not in html
    assert "posterior decodable beyond the controls from depth" in format_summary(res)


def test_sula_on_a_text_model(text_models, tmp_path):
    out = tmp_path / "sula"
    res = run_lens(LensConfig(model=str(text_models["llama"]), out=out, ks=(0, 2),
                              layers=(0,), **{**SMALL, "n_train": 8, "n_test": 6}))
    assert res.source == "SULA" and len(res.hypotheses) == 2 and res.ks == [0, 2]
    assert res.n_train == 8 and res.n_test == 6 and res.n_test_rows == 6
    assert res.learned is None and res.depths == [0, 1, 2]
    assert len(pd.read_parquet(out / "table.parquet")) == 3 * 7


def test_quick_says_it_is_not_a_result(text_models, tmp_path, capsys):
    out = tmp_path / "quick"
    assert main(["lens", "--model", str(text_models["llama"]), "--out", str(out), "--quick",
                 "--ks", "0,2", "--layers", "0", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("QUICK RUN") and "no number below is a result" in text
    assert "QUICK RUN" in (out / "report.html").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["quick"] and summary["n_test"] == 30 and summary["steps"] == 15


@pytest.mark.parametrize("model, argv, message", [
    ("default", ["--layers", "30"], "layer 30 does not exist"),
    ("default", ["--task", "hmm"], "needs a wind-tunnel model trained on it"),
    ("default", ["--n-test", "7"], "give a multiple of 5"),
    (str(HMM), ["--n-train", "1"], "n_train must be >= 2"),
    (str(HMM), ["--labels", "lug,mip"], "applies to text models only"),
    (str(HMM), ["--formed-bits", "0"], "formed_bits must be > 0"),
])
def test_bad_input_is_one_line_before_the_model_loads(model, argv, message, tmp_path, capsys,
                                                       monkeypatch):
    import bayesgeom.analyses.kit.models as models  # run_lens opens through kit.models.model_of

    monkeypatch.setattr(models, "open_model", lambda *a, **k: pytest.fail("model loaded"))
    assert main(["lens", "--model", model, "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_layer_a_tunnel_lacks_is_one_line(tmp_path, capsys):
    """A wind tunnel's layer count is read once it loads (interp.layer_count)."""
    assert main(["lens", "--model", str(HMM), "--out", str(tmp_path / "x"), "--layers", "9",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "layer 9 does not exist" in err and len(err.strip().splitlines()) == 1


def test_sula_counts_must_split_evenly_over_ks(tmp_path):
    with pytest.raises(ExperimentError, match="multiple of 5"):
        LensConfig(out=tmp_path / "x", n_train=301).check()


def test_an_open_wind_tunnel_is_not_held_to_sulas_counts(tmp_path):
    from bayesgeom.analyses.kit.models import open_model

    res = run_lens(LensConfig(out=tmp_path / "o", layers=(0,), **{**SMALL, "n_train": 7,
                                                                   "n_test": 6, "steps": 2}),
                   model=open_model(str(HMM)))
    assert res.source == "wind tunnel" and res.n_train == 7

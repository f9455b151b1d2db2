"""``bayesgeom dynamics verify``: every identity of spec §2.2 within tolerance on a tiny GQA
Llama and a wind tunnel, its controls far outside, outputs written, bad input refused."""

from __future__ import annotations

import json

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.dynamics.verify.config import DynamicsVerifyConfig
from bayesgeom.analyses.dynamics.verify.findings import findings
from bayesgeom.analyses.dynamics.verify.report import format_summary
from bayesgeom.analyses.dynamics.verify.result import CONTROLS, IDENTITIES
from bayesgeom.analyses.dynamics.verify.run import run_dynamics_verify
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.records import read_json, read_table


def test_tiny_gqa_llama_in_float64_passes_every_identity(text_models, tmp_path):
    res = run_dynamics_verify(DynamicsVerifyConfig(model=str(text_models["llama"]), dtype="float64",
                                  out=tmp_path / "v", progress=False))
    assert res.n_heads > res.n_kv_heads and res.loss_kind == "next-token"
    checks = {c.identity: c for c in res.checks}
    assert set(checks) == {*IDENTITIES, *CONTROLS}
    assert res.all_passed and all(checks[k].max_error <= 1e-6 for k in IDENTITIES)
    # the deliberately wrong laws are far off on the same tensors: the check has power
    assert all(checks[k].max_error > 1e-2 for k in CONTROLS)
    # identity 6 (feedback) is identity 3 at fixed u: labelled a corollary, not counted
    assert checks["feedback"].corollary_of == "value_grad" and checks["feedback"].passed
    assert all(checks[k].corollary_of is None for k in IDENTITIES if k != "feedback")
    assert res.independent_checked == len(IDENTITIES) - 1 == res.independent_passed
    text = format_summary(res)
    assert text.startswith("What was found")
    # the verdict table: both laws survive their deliberately wrong twins, all identities pass
    rows = findings(res)
    assert [f.survives for f in rows[:3]] == [True, True, True]
    assert "routing law" in rows[0].claim and "without" not in rows[0].claim
    assert rows[0].control.startswith("wrong law ∂L/∂s_ij ≈ α_ij b_ij") and rows[3].survives is None
    html = (tmp_path / "v" / "report.html").read_text()
    assert html.index("What was found") < html.index("Every head and layer")
    assert "Look for:" in html
    assert "corollary of 3, not independent" in text
    assert f"all {len(IDENTITIES) - 1}/{len(IDENTITIES) - 1} independent identities pass" in text
    gaps = list(res.value_step.values())  # epsilons 0.1, 0.01, 0.001
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 1e-2
    table = read_table(tmp_path / "v" / "table.parquet")
    assert set(table["identity"]) == {*IDENTITIES, *CONTROLS}
    for f in ("summary.json", "manifest.json", "report.html", "value_step.parquet"):
        assert (tmp_path / "v" / f).is_file()


def test_wind_tunnel_uses_its_task_loss_and_the_cli_prints_json(windtunnel_run, tmp_path,
                                                                capsys):
    code = main(["dynamics", "verify", "--model", str(windtunnel_run), "--out",
                 str(tmp_path / "w"), "--layers", "-1", "--n-sequences", "4", "--json",
                 "--no-progress"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["loss_kind"] == "task" and out["layers"] == [1] and out["all_passed"]
    assert read_json(tmp_path / "w" / "summary.json")["n_prompts"] == 4


def test_bad_settings_are_refused(windtunnel_run, text_models, tmp_path):
    with pytest.raises(ExperimentError, match="drop --prompts"):
        run_dynamics_verify(DynamicsVerifyConfig(model=str(windtunnel_run), prompts=("x y",),
                                out=tmp_path / "a", progress=False))
    with pytest.raises(ExperimentError, match="no wind-tunnel task"):
        run_dynamics_verify(DynamicsVerifyConfig(model=str(text_models["llama"]), loss="task",
                                out=tmp_path / "b", progress=False))
    with pytest.raises(ExperimentError, match="epsilons"):
        run_dynamics_verify(DynamicsVerifyConfig(model=str(text_models["llama"]), epsilons=(2.0,),
                                out=tmp_path / "c", progress=False))

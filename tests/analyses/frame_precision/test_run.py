"""``bayesgeom frame-precision`` on a tiny bijection run with dense checkpoints: the tidy table,
JS divergence 0 at the final step, the step-0 control, the files and the refused runs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.frame_precision.run import FramePrecisionConfig, run_frame_precision
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.probes.plateau import plateau_step
from bayesgeom.windtunnel.training import TrainConfig, train

TINY = dict(task="bijection", task_params={"V": 5}, preset="tiny", batch_size=16, lr=5e-3,
            warmup_steps=1, eval_size=16, final_eval_size=16, eval_every=6, ckpt_every=6)
COLUMNS = ["step", "source", "group", "metric", "layer", "value"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("frame") / "run"
    train(TrainConfig(steps=6, dense_ckpt_until=4, dense_ckpt_every=2, **TINY), out,
          progress=False)
    return out


@pytest.fixture(scope="module")
def done(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("frame") / "fp"
    rc = main(["frame-precision", str(run), "--n", "12", "--n-mae", "16", "--out", str(out),
               "--json", "--no-progress"])
    assert rc == 0
    return out


def test_cli_writes_the_files_and_a_tidy_table(done):
    assert {p.name for p in done.iterdir()} >= {"table.parquet", "summary.json",
                                                  "manifest.json", "report.html"}
    t = pd.read_parquet(done / "table.parquet")
    assert list(t.columns) == COLUMNS
    s = json.loads((done / "summary.json").read_text())
    assert s["steps"] == [0, 2, 4, 6] and s["final_step"] == 6
    assert sorted(t["step"].unique()) == [0, 2, 4, 6]
    assert dict(zip(t["step"], t["source"], strict=True))[0] == "init"
    # per point: 3 per-layer metrics x (2 layers + mean), key |cos| and its control, MAE and
    # its log, 3 value-manifold numbers
    assert len(t) == 4 * (3 * 3 + 2 + 2 + 3)
    assert not t.duplicated(["step", "metric", "layer"]).any()
    js = t[(t["metric"] == "js_to_final_bits")]
    assert (js.loc[js["step"] == 6, "value"] == 0).all()
    assert (js.loc[js["step"] < 6, "value"] > 0).all()
    assert ((js["value"] >= 0) & (js["value"] <= 1)).all()
    # sepvocab without replacement: no feasible position in the context (module doc)
    assert t.loc[t["metric"] == "attn_mass_feasible", "value"].isna().all()
    elim = t.loc[t["metric"] == "attn_mass_eliminated", "value"]
    assert ((elim > 0) & (elim < 1)).all()
    assert s["attn_mass_metric"] == "attn_mass_eliminated"
    assert s["frame_before_precision"] == (s["frame_plateau_step"] < s["precision_plateau_step"])
    assert np.isfinite(s["init_values"]["entropy_mae_bits"])
    html = (done / "report.html").read_text()
    assert "Frame–precision" in html
    assert html.index("What was found") < html.index("The run") < html.index("Look for:")


def test_the_verdict_is_the_runs_own_and_a_planted_dissociation_survives(done):
    from bayesgeom.analyses.frame_precision.report import findings, format_summary
    from bayesgeom.analyses.frame_precision.result import FramePrecisionResult
    from bayesgeom.records import read_result

    s = read_result(FramePrecisionResult, done / "summary.json")
    order = findings(s)[0]
    assert order.survives in (s.frame_before_precision, None)
    assert format_summary(s).startswith("What was found")
    # planted: every frame metric settles at step 100, the precision at 300; keys end below
    # Gaussian keys and their initialisation, the MAE below its initialisation
    s.plateau_steps = {k: 100 for k in s.frame_metrics} | {s.precision_metric: 300}
    s.frame_plateau_step, s.precision_plateau_step, s.frame_before_precision = 100, 300, True
    s.init_values |= {"key_abs_cos": 0.4, "entropy_mae_bits": 1.0}
    s.final_values |= {"key_abs_cos": 0.05, "entropy_mae_bits": 0.01}
    s.key_abs_cos_gaussian = 0.082
    order, keys, mae = findings(s)
    assert (order.survives, order.value, keys.survives, mae.survives) == (True, 100, True, True)
    assert "step 300" in order.control and "Gaussian keys" in keys.control
    s.frame_before_precision = False  # the verdict is the run's, not recomputed
    assert findings(s)[0].survives is False


def test_the_report_table_has_a_row_per_step_and_the_plateaus(done):
    from bayesgeom.analyses.frame_precision.report import headline_table
    from bayesgeom.analyses.frame_precision.result import FramePrecisionResult
    from bayesgeom.records import read_result

    s = read_result(FramePrecisionResult, done / "summary.json")
    wide = headline_table(pd.read_parquet(done / "table.parquet"), s)
    assert wide["source"].tolist() == ["init", "dense", "dense", "final", "plateau step"]
    assert wide.iloc[-1]["log10_entropy_mae_bits"] == s.precision_plateau_step


def test_the_step0_control_is_the_training_initialisation(done):
    from bayesgeom.windtunnel.architectures import build_model
    from bayesgeom.windtunnel.evaluate import evaluate
    from bayesgeom.windtunnel.task_registry import make_token_task

    task = make_token_task("bijection", V=5)
    mae = evaluate(build_model(task, "transformer", "tiny", 0), task, 16, 0,
                   logit_lens=False).entropy_mae_bits
    t = pd.read_parquet(done / "table.parquet")
    got = t.loc[(t["step"] == 0) & (t["metric"] == "entropy_mae_bits"), "value"].item()
    assert got == pytest.approx(mae)


def test_plateau_detection_on_a_synthetic_series():
    steps = np.array([0, 100, 200, 300, 400, 500])
    mae = np.array([5.0, 3.0, 1.0, 0.4, 0.1, 0.0])  # range 5: a band of 0.5, then of 0.25
    assert plateau_step(steps, mae, 0.1) == 300
    assert plateau_step(steps, mae, 0.05) == 400
    assert plateau_step(steps, np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]), 0.1) == 500


def test_a_run_without_dense_checkpoints_is_refused(run, tmp_path, capsys):
    bare = tmp_path / "bare"
    shutil.copytree(run, bare, ignore=shutil.ignore_patterns("dense-*", ".bayesgeom.lock"))
    with pytest.raises(ExperimentError, match=r"no dense checkpoints.*--dense-ckpt-until"):
        run_frame_precision(FramePrecisionConfig(run_dir=str(bare), out=tmp_path / "o",
                                                 progress=False))
    assert main(["frame-precision", str(bare), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bayesgeom: error:") and "dense" in err and len(err.splitlines()) == 1

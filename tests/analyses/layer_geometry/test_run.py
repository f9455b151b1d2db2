"""bayesgeom layer-geometry on tiny HMM runs of the transformer, the LSTM and Mamba (a few
training steps each): the tidy table's rows, the files, the summary, and the CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.layer_geometry.report import findings, format_summary
from bayesgeom.analyses.layer_geometry.result import METRICS, LayerGeometryResult
from bayesgeom.analyses.layer_geometry.run import LayerGeometryConfig, run_layer_geometry
from bayesgeom.records import read_result
from bayesgeom.windtunnel.training import TrainConfig, train

ARCHS = ("transformer", "lstm", "mamba")


@pytest.fixture(scope="module")
def hmm_runs(tmp_path_factory):
    """arch -> a tiny HMM run (K = 6, 2 steps of 4 sequences)."""
    root = tmp_path_factory.mktemp("layer-geometry-runs")
    runs = {}
    for arch in ARCHS:
        cfg = TrainConfig(task="hmm", task_params={"K": 6}, arch=arch, preset="tiny", steps=2,
                          batch_size=4, warmup_steps=1, eval_every=2, eval_size=2,
                          final_eval_size=4, ckpt_every=2, seed=1)
        train(cfg, root / arch, progress=False)
        runs[arch] = root / arch
    return runs


@pytest.mark.parametrize("arch", ARCHS)
def test_table_has_a_row_per_layer_metric_and_condition(hmm_runs, tmp_path, arch):
    out = tmp_path / "lg"
    res = run_layer_geometry(LayerGeometryConfig(model=str(hmm_runs[arch]), out=out,
                                                 n_sequences=12, progress=False))
    n_layers = res.n_layers
    assert res.arch == arch and res.task == "hmm" and res.steps == 2 and res.twin_seed == 1
    assert res.n_rows == 12 * 6 == res.n_sequences * res.n_positions
    table = pd.read_parquet(out / "table.parquet")
    assert len(table) == n_layers * (3 * len(METRICS) + 2)
    assert not table.duplicated(["condition", "layer", "metric"]).any()
    counts = table.groupby("condition").size().to_dict()
    assert counts == {"trained": n_layers * len(METRICS),
                      "random_init": n_layers * len(METRICS),
                      "position_only": n_layers * len(METRICS), "shuffled_target": 2 * n_layers}
    assert sorted(table["layer"].unique()) == list(range(n_layers))
    t = table.set_index(["condition", "layer", "metric"])["value"]
    for c in ("trained", "random_init"):
        assert 0 < t[(c, 0, "pc1_ratio")] <= 1
        assert 1 <= t[(c, n_layers - 1, "max_corr_pc")] <= 5
        assert -1 <= t[(c, n_layers - 1, "silhouette_argmax")] <= 1
    # position only is layer-independent: the same value at every layer
    pos = table[(table.condition == "position_only") & (table.metric == "linear_r2_h")]
    assert pos["value"].nunique() == 1
    for name in ("scatter.parquet", "manifest.json", "report.html"):
        assert (out / name).is_file()
    back = read_result(LayerGeometryResult, out / "summary.json")
    assert set(back.conditions) == {"trained", "random_init", "position_only"}
    assert back.conditions["trained"].entropy_mae_bits is not None
    scatter = pd.read_parquet(out / "scatter.parquet")
    assert set(scatter["condition"]) == {"trained", "random_init"}
    assert len(scatter) == 2 * res.n_rows
    # the verdict table leads: numbers beside every control, and no verdict (no test is run)
    rows = findings(res)
    assert len(rows) == 4 and all(r.survives is None for r in rows)
    assert all("no criterion" in r.evidence for r in rows)
    last = res.conditions["trained"].layers[-1]
    assert rows[0].value == pytest.approx(last.linear_r2_h)
    assert "random-init twin" in rows[0].control and "shuffled target" in rows[0].control
    assert "position only" in rows[1].control
    if arch == "mamba":
        assert "Paper I v3 (mamba, HMM) 0.4" in rows[0].evidence
    assert format_summary(res).startswith("What was found")
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("Summary")
    assert html.count("Look for:") == 2


def test_cli_writes_files_and_refuses_a_missing_model(hmm_runs, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["layer-geometry", "--model", str(hmm_runs["lstm"]), "--out", str(out),
                 "--n-sequences", "10", "--no-progress", "--json"])
    assert code == 0
    got = json.loads(capsys.readouterr().out)
    assert got["arch"] == "lstm" and got["n_sequences"] == 10
    for name in ("table.parquet", "summary.json", "manifest.json", "report.html"):
        assert (out / name).is_file()
    with pytest.raises(ExperimentError, match="--model"):
        LayerGeometryConfig(out=tmp_path / "x").check()

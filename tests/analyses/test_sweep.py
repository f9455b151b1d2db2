"""bayesgeom sweep: a grid of ordinary run directories, aggregated; reruns do no work; a failed
cell is reported, not fatal; the submitit backend (its local executor) gives the same numbers."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.sweep.run import SweepConfig, run_sweep

TINY = dict(tasks=("bijection",), archs=("transformer", "mlp-position"), presets=("tiny",),
            seeds=(0, 1), steps=12, eval_every=12, eval_size=16, batch_size=8,
            task_params={"bijection": {"V": 6}}, progress=False)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "s"
    return out, run_sweep(SweepConfig(out=out, **TINY))


def test_a_grid_of_two_cells_by_two_seeds_is_aggregated(swept):
    out, res = swept
    assert (res.trained, res.reused, res.failed) == (4, 0, 0)
    cells = pd.read_parquet(out / "cells.parquet")
    assert sorted(cells["cell"]) == ["bijection-mlp-position-tiny-s0",
                                     "bijection-mlp-position-tiny-s1",
                                     "bijection-transformer-tiny-s0",
                                     "bijection-transformer-tiny-s1"]
    agg = pd.read_parquet(out / "aggregate.parquet")
    mae = agg[(agg["metric"] == "entropy_mae_bits") & (agg["arch"] == "transformer")].iloc[0]
    runs = cells[cells["arch"] == "transformer"]["entropy_mae_bits"]
    assert mae["n"] == 2 and mae["mean"] == pytest.approx(runs.mean())
    assert mae["sd"] == pytest.approx(runs.std(ddof=1))
    assert mae["ci_low"] < mae["mean"] < mae["ci_high"]
    for c in cells["cell"]:  # each cell is an ordinary, finished run directory
        assert json.loads((out / "cells" / c / "run.json").read_text())["status"] == "done"
    assert (out / "report.html").exists() and (out / "summary.json").exists()


def test_a_rerun_does_no_work(swept):
    out, first = swept
    stamp = {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*/eval.json")}
    again = run_sweep(SweepConfig(out=out, **TINY))
    assert (again.trained, again.reused) == (0, 4)
    assert {p: p.stat().st_mtime_ns for p in stamp} == stamp
    assert again.aggregate == first.aggregate


def test_a_failed_cell_is_reported_not_fatal(tmp_path, capsys):
    out = tmp_path / "s"
    cfg = {**TINY, "archs": ("transformer",)}
    res = run_sweep(SweepConfig(out=out, **cfg))
    assert res.failed == 0
    cell = out / "cells" / "bijection-transformer-tiny-s1"
    (cell / "model" / "model.safetensors").write_bytes(b"0")  # damage one finished cell
    argv = ["sweep", "--archs", "transformer", "--presets", "tiny", "--seeds", "0,1",
            "--steps", "12", "--eval-every", "12", "--eval-size", "16", "--batch-size", "8",
            "--task-params", '{"bijection": {"V": 6}}', "--out", str(out), "--no-progress"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "1 failed" in captured.out and "model.safetensors" in captured.err
    cells = pd.read_parquet(out / "cells.parquet").set_index("cell")
    assert cells.loc["bijection-transformer-tiny-s0", "status"] == "reused"
    assert cells.loc["bijection-transformer-tiny-s1", "status"] == "failed"


@pytest.mark.parametrize("argv, msg", [
    (["--archs", "cnn"], "unknown archs cnn"),
    (["--tasks", "sula"], "is a text task"),
    (["--task-params", "{nope"], "not valid JSON"),
    (["--task-params", '{"hmm": {"K": 20}}'], "task_params for hmm, which is not in tasks"),
    (["--seeds", "-1"], "seeds must be >= 0"),
    (["--eval-params", '{"hmm": [{"K": 30}]}'], "eval_params for hmm, which is not in tasks"),
    (["--tasks", "hmm", "--eval-params", '{"hmm": [{"K": 80}]}'], "do not fit the trained"),
    (["--tasks", "hmm", "--eval-params", '{"hmm": [{"K": 0}]}'], "eval_params hmm"),
    (["--tasks", "hmm", "--eval-params", '{"hmm": {"K": 30}}'], "object of lists"),
])
def test_bad_sweeps_are_one_line(argv, msg, tmp_path, capsys):
    assert main(["sweep", *argv, "--out", str(tmp_path / "X")]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and not (tmp_path / "X").exists()


def test_extra_evaluations_are_added_per_cell_and_cached(tmp_path):
    cfg = dict(tasks=("hmm",), archs=("transformer",), presets=("tiny",), seeds=(0, 1),
               steps=6, eval_every=6, eval_size=8, batch_size=4, progress=False,
               task_params={"hmm": {"K": 3, "max_K": 6}}, eval_params={"hmm": [{"K": 6}]})
    out = tmp_path / "s"
    res = run_sweep(SweepConfig(out=out, **cfg))
    cells = pd.read_parquet(out / "cells.parquet")
    assert res.failed == 0 and cells["entropy_mae_bits@K=6"].notna().all()
    assert (cells["entropy_mae_bits@K=6"] != cells["entropy_mae_bits"]).all()
    agg = pd.read_parquet(out / "aggregate.parquet")
    assert agg[agg["metric"] == "accuracy@K=6"]["n"].tolist() == [2.0]
    cache = out / "cells" / "hmm-transformer-tiny-s0" / "extra_evals.json"
    stamp = cache.stat().st_mtime_ns
    again = run_sweep(SweepConfig(out=out, **cfg))
    assert (again.trained, again.reused) == (0, 2) and cache.stat().st_mtime_ns == stamp
    assert again.aggregate == res.aggregate
    cache.unlink()  # a missing cache is evaluated again; the training is reused
    third = run_sweep(SweepConfig(out=out, **cfg))
    assert third.aggregate == res.aggregate and cache.exists()


def test_a_config_file_gives_options_and_flags_override_it(tmp_path, capsys):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text('archs = ["cnn"]\nseeds = [0]\n')
    assert main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "X")]) == 2
    assert "unknown archs cnn" in capsys.readouterr().err
    cfg.write_text('archz = ["transformer"]\n')
    assert main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "X")]) == 2
    assert "unknown option(s) archz" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("submitit") is None, reason="needs submitit")
def test_the_submitit_backend_gives_the_same_numbers(swept, tmp_path):
    cfg = {**TINY, "archs": ("transformer",), "seeds": (0,)}
    res = run_sweep(SweepConfig(out=tmp_path / "s", backend="submitit", **cfg))
    assert res.trained == 1
    mae = [r["mean"] for r in res.aggregate if r["metric"] == "entropy_mae_bits"]
    first = pd.read_parquet(swept[0] / "cells.parquet").set_index("cell")
    assert mae == [pytest.approx(first.loc["bijection-transformer-tiny-s0",
                                           "entropy_mae_bits"])]


@pytest.mark.parametrize("name, n, archs, presets", [
    ("paper_table", 30, {"llama", "lstm", "mamba", "mlp-position", "mlp-flat"}, {"paper"}),
    ("paper_hmm", 15, {"transformer", "lstm", "mamba", "mlp-position", "mlp-flat"},
     {"paper-hmm"}),
    ("cpu_table", 45, {"transformer", "lstm", "mamba", "mlp-position", "mlp-flat"}, {"small"}),
])
def test_the_table_configs_are_valid_sweeps(name, n, archs, presets):
    from pathlib import Path

    from bayesgeom.analyses.sweep.config_file import read_config
    from bayesgeom.analyses.sweep.run import cells

    path = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / f"{name}.toml"
    cfg = SweepConfig(**read_config(path))
    cfg.check()
    grid = cells(cfg)
    assert len(grid) == n and {c.train.preset for c in grid} == presets
    assert {c.arch for c in grid} == archs

"""bayesgeom sweep: a grid of ordinary run directories, aggregated; reruns do no work; a failed
cell is reported, not fatal; the submitit backend (its local executor) gives the same numbers."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace

import pandas as pd
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.numbers import sig
from bayesgeom.analyses.sweep.report import findings, format_summary
from bayesgeom.analyses.sweep.result import SweepCell, SweepResult
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
    # the chance control is the uniform predictor's MAE on the first seed's sequences
    chance = res.controls["bijection"]["chance"]
    assert 0 < chance <= math.log2(6) and set(res.controls) == {"bijection"}
    rows = findings(res)
    assert len(rows) == 1 and "closest to the exact posterior on bijection" in rows[0].claim
    assert rows[0].value == agg[agg["metric"] == "entropy_mae_bits"]["mean"].min()
    assert f"chance {sig(chance)} bits" in rows[0].control and "runner-up" in rows[0].control
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("Entropy MAE by architecture")
    assert "Look for:" in html and "chance (uniform prediction)" in html
    assert format_summary(res).startswith("What was found")


def _agg(task: str, arch: str, mean: float, half: float, n: int = 3) -> dict:
    return {"task": task, "arch": arch, "preset": "small", "metric": "entropy_mae_bits",
            "n": float(n), "mean": mean, "sd": half, "ci_low": mean - half,
            "ci_high": mean + half}


def test_the_verdict_table_holds_each_task_against_its_controls():
    cells = [SweepCell("x", "hmm", "transformer", "small", 0, "trained")]
    res = SweepResult(cells, [
        _agg("bijection", "transformer", 0.01, 0.005), _agg("bijection", "mlp-flat", 0.5, 0.1),
        _agg("hmm", "lstm", 0.03, 0.01), _agg("hmm", "mlp-flat", 0.2, 0.05),
        _agg("hmm", "transformer", 0.035, 0.01)], 0, 1, 0, "local", 1.0,
        controls={"bijection": {"chance": 1.1},
                  "hmm": {"chance": 0.41, "history-free": 0.08, "window 1": 0.16,
                          "window 2": 0.047}})
    rows = findings(res)
    assert [r.survives for r in rows] == [True, False, True]  # the HMM's two best overlap
    assert rows[0].claim.startswith("transformer (small) is the closest")
    assert rows[1].claim.startswith("lstm (small)") and "runner-up transformer" in rows[1].control
    assert "history-free filter 0.08 bits" in rows[2].control
    assert "lstm, transformer" in rows[2].evidence and "window 1, window 2" in rows[2].evidence
    lone = {**_agg("hmm", "lstm", 0.03, 0.0, n=1), "sd": None, "ci_low": None,
            "ci_high": None}  # one seed, as summary.json holds it (NaN written as null)
    one = SweepResult(cells, [lone], 0, 1, 0, "local", 1.0, controls={})
    assert [r.survives for r in findings(one)] == [None]
    empty = findings(SweepResult([replace(cells[0], status="failed")], [], 0, 0, 1, "local",
                                 1.0))
    assert len(empty) == 1 and empty[0].survives is None
    assert empty[0].value_text() == "undefined: no cell finished"


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
    ("cpu_table", 54, {"transformer", "lstm", "mamba", "mamba2", "mlp-position", "mlp-flat"},
     {"small"}),
])
def test_the_table_configs_are_valid_sweeps(name, n, archs, presets):
    from pathlib import Path

    from bayesgeom.analyses.sweep.config_file import read_config
    from bayesgeom.analyses.sweep.run import cells

    path = Path(__file__).resolve().parents[3] / "examples" / "sweeps" / f"{name}.toml"
    cfg = SweepConfig(**read_config(path))
    cfg.check()
    grid = cells(cfg)
    assert len(grid) == n and {c.train.preset for c in grid} == presets
    assert {c.arch for c in grid} == archs


@pytest.mark.parametrize(("params", "message"), [
    ({"task_params": {"hmm": 3}}, 'task_params for hmm must be like {"K": 20}, got 3'),
    ({"eval_params": {"hmm": {"K": 3}}}, "eval_params for hmm must be like"),
    ({"task_params": {"hmm": {"Q": 1}}}, "task_params hmm: task 'hmm' has no parameter(s) ['Q']"),
    ({"eval_params": {"hmm": [{"K": 0}]}}, "eval_params hmm: task 'hmm': K must be >= 1"),
    # a scalar where a list or a table is declared (they were tracebacks, or split a name
    # into its letters: "unknown archs t, r, a, n, ...")
    ({"seeds": 3}, "seeds must be a list of values (such as [3]), got 3"),
    ({"seeds": 0}, "seeds must be a list of values (such as [0]), got 0"),
    ({"archs": "transformer"}, "archs must be a list of values (such as ['transformer'])"),
    ({"task_params": [1, 2]}, "task_params must be a table of names and values, got [1, 2]"),
    ({"task_params": ["bijection"]}, "task_params must be a table of names and values"),
])
def test_a_config_files_task_parameters_are_checked_by_shape_name_and_range(tmp_path, params,
                                                                            message):
    """What a TOML config can hold that the command line's JSON parsing would have refused is
    answered in one line by the config's check (no traceback, no torch)."""
    from bayesgeom.analyses.kit.errors import ExperimentError

    cfg = SweepConfig(**{"tasks": ("hmm",), "archs": ("transformer",), "out": tmp_path / "s",
                         **params})
    with pytest.raises(ExperimentError) as e:
        cfg.check()
    assert message in str(e.value)


@pytest.mark.parametrize(("toml", "message"), [
    ('archs = "transformer"', "archs must be a list of values (such as ['transformer'])"),
    ("seeds = 3", "seeds must be a list of values (such as [3]), got 3"),
    ("task_params = [1, 2]", "task_params must be a table of names and values"),
])
def test_a_config_files_scalar_for_a_list_is_one_line(tmp_path, capsys, toml, message):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'tasks = ["hmm"]\n{toml}\n', encoding="utf-8")
    assert main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err

"""The plateau-rule sweep: the CPU table preset gives every cell the rule and its caps, and a
cell that stops on the plateau says so in the sweep's table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.sweep.config_file import read_config
from bayesgeom.analyses.sweep.run import SweepConfig, cells, run_sweep

SWEEPS = Path(__file__).resolve().parents[3] / "examples" / "sweeps"
PRESET = SWEEPS / "cpu_table.toml"


def test_the_cpu_table_preset_trains_every_cell_to_its_plateau_or_cap():
    cfg = SweepConfig(**read_config(PRESET))
    cfg.check()
    grid = cells(cfg)
    assert len(grid) == 3 * 6 * 3 and {c.task for c in grid} == {"bijection", "hmm",
                                                                  "assoc_recall"}
    for c in grid:
        t = c.train
        assert (t.plateau_window, t.plateau_tol, t.plateau_metric) == (6, 0.02, "kl_bits")
        assert (t.steps, t.max_minutes, t.eval_every) == (20000, 3.0, 200)
        assert t.ckpt_every == 1000  # resumable within a cell
    recall = next(c for c in grid if c.task == "assoc_recall").train
    task = recall.validate()
    assert (task.N, task.M, task.F, task.n_keys, task.seq_len) == (8, 8, 8, 32, 92)
    assert next(c for c in grid if c.task == "hmm").evals == ({"K": 30}, {"K": 50})


@pytest.mark.slow  # a spawned worker and the sweep's report: about a minute on 2 cores
def test_a_cell_that_plateaus_records_it(tmp_path):
    cfg = SweepConfig(tasks=("bijection",), archs=("transformer",), presets=("tiny",),
                      seeds=(0,), steps=40, batch_size=16, eval_every=2, eval_size=32,
                      plateau_window=1, plateau_tol=0.99, task_params={"bijection": {"V": 6}},
                      out=tmp_path / "s", progress=False)
    res = run_sweep(cfg)
    assert res.trained == 1
    row = pd.read_parquet(tmp_path / "s" / "cells.parquet").iloc[0]
    assert row["stop_reason"] == "plateau" and row["steps"] < 40
    table = pd.read_parquet(tmp_path / "s" / "paper_table.parquet").iloc[0]
    assert table["bijection: stopped"] == "plateau 1"

"""The training-monitor hook of ``train``: it changes nothing of training, its columns join the
metrics log and survive a resume bit for bit, and its options are checked before the run
folder is touched. The monitor here is a plain one (windtunnel never imports the analyses'
monitor; tests/analyses/dynamics/monitor/test_run.py runs that one)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bayesgeom.windtunnel.runs import load_run
from bayesgeom.windtunnel.seeds import Purpose, stream
from bayesgeom.windtunnel.task import TaskConfigError
from bayesgeom.windtunnel.training import TrainConfig, task_loss, train

from ..conftest import Killed, die_at
from ..conftest import tiny_train_config as _cfg


class WeightMonitor:
    """Logs how far the weights moved since its previous call and the loss of its own batch
    (from the monitor stream), reading the model in eval mode and restoring the mode."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.finished: list[str] | None = None

    def check(self, cfg: TrainConfig) -> None:
        if cfg.arch != "transformer":
            raise TaskConfigError("this monitor reads transformers only")

    def start(self, model, task, seed: int, step: int) -> None:
        self.starts.append(step)
        self.task = task
        self.batch = task.sample(8, stream(seed, Purpose.MONITOR, 0))
        self.prev = self._weights(model)

    def _weights(self, model) -> torch.Tensor:
        return torch.cat([p.detach().flatten() for p in model.parameters()]).clone()

    def __call__(self, model, step: int) -> dict[str, float]:
        was = model.training
        model.eval()
        with torch.no_grad():
            loss = float(task_loss(model, self.task, self.batch))
        model.train(was)
        now = self._weights(model)
        moved = float((now - self.prev).norm())
        self.prev = now
        return {"mon.moved": moved, "mon.loss": loss}

    def finish(self, out: Path, log: pd.DataFrame) -> None:
        self.finished = list(log.columns)
        (out / "monitor.txt").write_text(",".join(self.finished))


TRAINING = ["step", "train_loss", "lr", "eval_entropy_mae_bits", "eval_kl_bits", "eval_tvd",
            "eval_accuracy"]


def test_a_monitor_changes_nothing_of_training_and_logs_its_columns(tmp_path):
    plain = train(_cfg(), tmp_path / "plain", progress=False)
    mon = WeightMonitor()
    seen = train(_cfg(monitor_every=5), tmp_path / "seen", progress=False, monitor=mon)
    pd.testing.assert_frame_equal(plain.log[TRAINING], seen.log.dropna(subset=["train_loss"])
                                  [TRAINING].reset_index(drop=True), check_exact=True)
    assert seen.report.entropy_mae_bits == plain.report.entropy_mae_bits
    a, b = (load_run(tmp_path / d).model.state_dict() for d in ("plain", "seen"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows = seen.log.dropna(subset=["mon.moved"])
    assert rows["step"].tolist() == list(range(5, 41, 5)) and (rows["mon.moved"] > 0).all()
    assert mon.starts == [0] and mon.finished[-2:] == ["mon.moved", "mon.loss"]
    assert (tmp_path / "seen" / "monitor.txt").exists()
    assert "mon.loss" in pd.read_parquet(tmp_path / "seen" / "metrics.parquet").columns
    settings = [json.loads((tmp_path / d / "run.json").read_text())["settings"]
                for d in ("plain", "seen")]
    assert "monitor_every" not in settings[0] and settings[1]["monitor_every"] == 5


def test_a_resumed_run_logs_the_monitor_rows_of_an_uninterrupted_one(tmp_path):
    cfg = _cfg(monitor_every=5)
    full = train(cfg, tmp_path / "full", progress=False, monitor=WeightMonitor())

    die = die_at(27)

    with pytest.raises(Killed):
        train(cfg, tmp_path / "cut", on_step=die, progress=False, monitor=WeightMonitor())
    mon = WeightMonitor()
    resumed = train(cfg, tmp_path / "cut", progress=False, monitor=mon)
    assert mon.starts == [20]  # restarted from the checkpoint at step 20, a monitor step
    cols = [c for c in full.log.columns if c != "elapsed_s"]
    assert "mon.moved" in cols
    pd.testing.assert_frame_equal(full.log[cols], resumed.log[cols], check_exact=True)
    moved = resumed.log["mon.moved"].dropna().to_numpy()
    assert np.isfinite(moved).all() and moved.size == 8


def test_monitor_options_are_checked_before_the_folder_is_touched(tmp_path):
    with pytest.raises(TaskConfigError, match=r"needs train\(monitor=\.\.\.\)"):
        train(_cfg(monitor_every=5), tmp_path / "a", progress=False)
    with pytest.raises(TaskConfigError, match=r"needs cfg\.monitor_every > 0"):
        train(_cfg(), tmp_path / "b", progress=False, monitor=WeightMonitor())
    with pytest.raises(TaskConfigError, match=r"--ckpt-every \(10\) must be a multiple of "
                                              r"--monitor-every \(4\)"):
        train(_cfg(monitor_every=4), tmp_path / "c", progress=False, monitor=WeightMonitor())
    with pytest.raises(TaskConfigError, match="reads transformers only"):
        train(_cfg(monitor_every=5, arch="lstm"), tmp_path / "d", progress=False,
              monitor=WeightMonitor())
    with pytest.raises(TaskConfigError, match="monitor_every"):
        train(_cfg(monitor_every=-1), tmp_path / "e", progress=False, monitor=WeightMonitor())
    assert not any((tmp_path / d).exists() for d in "abcde")

"""A full disk inside a checkpoint: torch's zip writer raises a ``RuntimeError`` ("unexpected
pos"), not an ``OSError``. It ends in the one-line disk message (exit 1), nothing damaged is
trusted, and the same command resumes cleanly once there is room."""

from __future__ import annotations

import shutil
from collections import namedtuple

import pytest
import torch

from bayesgeom.records import FileFault, exit_code
from bayesgeom.records.atomic import os_errors
from bayesgeom.windtunnel import checkpoint
from bayesgeom.windtunnel.training import TrainConfig, train

TINY = dict(task="bijection", task_params={"V": 5}, preset="tiny", batch_size=16, lr=5e-3,
            warmup_steps=1, eval_size=16, final_eval_size=16, eval_every=3, ckpt_every=3)
Usage = namedtuple("Usage", "total used free")
TORCH_FULL = "[enforce fail at inline_container.cc:664] . unexpected pos 1088 vs 1024"


def test_the_writer_error_of_a_full_disk_is_the_one_line_disk_message(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(1 << 30, 1 << 30, 0))
    with (pytest.raises(FileFault, match=r"^no space left on the device holding .*x\.pt; free "
                                         r"some space or write to another disk$"),
          os_errors(tmp_path / "x.pt")):
        raise RuntimeError(TORCH_FULL)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(1 << 30, 0, 1 << 30))
    with (pytest.raises(FileFault, match=r"cannot write .*x\.pt: Input/output error"),
          os_errors(tmp_path / "x.pt")):
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")
    with (pytest.raises(RuntimeError, match="something else"),  # other errors stay bugs
          os_errors(tmp_path / "x.pt")):
        raise RuntimeError("something else")


def test_a_disk_full_checkpoint_is_one_line_and_the_run_resumes(tmp_path, monkeypatch):
    out = tmp_path / "run"
    real_save = torch.save

    def full_disk(obj, f, *a, **k):
        raise RuntimeError(TORCH_FULL)

    monkeypatch.setattr(checkpoint.torch, "save", full_disk)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(1 << 30, 1 << 30, 0))
    with pytest.raises(FileFault, match="no space left on the device holding") as e:
        train(TrainConfig(steps=6, seed=1, **TINY), out, progress=False)
    assert exit_code(e.value) == 1 and "\n" not in str(e.value)
    assert not list((out / "checkpoints").glob("step-*")), "a damaged checkpoint was kept"
    monkeypatch.setattr(checkpoint.torch, "save", real_save)
    monkeypatch.undo()
    done = train(TrainConfig(steps=6, seed=1, **TINY), out, progress=False)
    fresh = train(TrainConfig(steps=6, seed=1, **TINY), tmp_path / "fresh", progress=False)
    assert done.report is not None and fresh.report is not None
    assert done.report.entropy_mae_bits == fresh.report.entropy_mae_bits

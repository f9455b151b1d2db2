"""The local pool pins worker *i* to device *i*, one cell per device at a time, and each cell's
row and run record say where it trained. On a machine without GPUs the pinning is tested with
a fake device list, ``--devices cpu,cpu``: two CPU slots, one worker each; the GPU side
(``CUDA_VISIBLE_DEVICES`` given to each worker, mapped through the sweep's own) is checked on
the environment a pinned worker gets."""

from __future__ import annotations

import importlib.util
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pandas as pd
import pytest

from bayesgeom.analyses.sweep.config import SweepConfig
from bayesgeom.analyses.sweep.devices import Slot, default_devices, slots
from bayesgeom.analyses.sweep.guard import start_pool_worker, this_sweep
from bayesgeom.records import physical_device
from bayesgeom.windtunnel.runs import read_run

TINY = dict(tasks=("bijection",), archs=("transformer",), presets=("tiny",), steps=12,
            eval_every=12, eval_size=16, batch_size=8, task_params={"bijection": {"V": 6}},
            progress=False)


def test_each_gpu_is_mapped_through_the_sweeps_own_visible_devices():
    env = {"CUDA_VISIBLE_DEVICES": "2,5,GPU-a1b2"}
    got = slots(("cuda:1", "0", "cuda:2"), env)
    assert [(s.index, s.device, s.visible) for s in got] == [
        (0, "cuda:1", "5"), (1, "cuda:0", "2"), (2, "cuda:2", "GPU-a1b2")]
    assert [s.physical for s in got] == ["cuda:5", "cuda:2", "GPU-a1b2"]
    assert {s.train_device for s in got} == {"cuda:0"}  # each sees its one GPU
    assert [s.visible for s in slots(("0", "1"), {})] == ["0", "1"]  # no variable: indices
    cpu = slots(("cpu",), env)[0]
    assert (cpu.visible, cpu.train_device, cpu.physical) == (None, "cpu", "cpu")


def test_the_default_devices():
    two = {"CUDA_VISIBLE_DEVICES": "3,4"}
    assert default_devices(None, "cuda", two) == ("cuda:0", "cuda:1")
    assert default_devices(None, "cuda", {}) == ("cuda:0",)
    assert default_devices(None, "cuda:1", two) == ("cuda:1",)  # one GPU named: that one
    assert default_devices(None, None, two) is None  # the CPU: workers unpinned
    assert default_devices(None, "cpu", two) is None
    assert default_devices(("0", "cpu"), "cuda", two) == ("cuda:0", "cpu")
    assert SweepConfig(device="cuda", workers=None).worker_count() >= 1
    assert SweepConfig(devices=("0", "1", "2")).worker_count() == 3
    assert SweepConfig(devices=("0", "1", "2"), workers=2).worker_count() == 2
    assert SweepConfig(workers=2).worker_count() == 2  # CPU workers, as before


def test_a_run_records_its_device_as_the_machine_names_it():
    assert physical_device("cuda:0", {"CUDA_VISIBLE_DEVICES": "3"}) == "cuda:3"
    assert physical_device("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-x,GPU-y"}) == "GPU-x"
    assert physical_device("cuda:1", {}) == "cuda:1"
    assert physical_device(None, {"CUDA_VISIBLE_DEVICES": "3"}) == "cpu"


def _visible() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def test_a_pinned_worker_sees_only_its_gpu(monkeypatch):
    """The local pool's initializer gives its process the slot's ``CUDA_VISIBLE_DEVICES``
    (the sweep's own here: 7,9; the worker of cuda:1 sees 9 alone)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7,9")
    slot = slots(("cuda:1",), os.environ)[0]
    with ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=start_pool_worker,
                             initargs=(1, this_sweep(), slot)) as pool:
        assert pool.submit(_visible).result() == "9"
    env: dict[str, str] = {}
    Slot(0, "cpu").pin(env)
    assert env == {}  # a CPU slot sets nothing


def test_two_devices_take_one_cell_each(tmp_path):
    """The acceptance case: two (fake) devices, two cells: both start at once, one on each
    device (a worker per device, each given its cell as soon as it is free); each row and
    each run record names its device."""
    out = tmp_path / "s"
    from bayesgeom.analyses.sweep.run import run_sweep

    res = run_sweep(SweepConfig(out=out, devices=("cpu", "cpu"), seeds=(0, 1), **TINY))
    assert (res.trained, res.failed) == (2, 0)
    table = pd.read_parquet(out / "cells.parquet").set_index("cell")
    assert table["slot"].to_dict() == {"bijection-transformer-tiny-s0": 0,
                                       "bijection-transformer-tiny-s1": 1}
    assert set(table["device"]) == {"cpu"}
    for cell in table.index:
        assert read_run(out / "cells" / cell).record["device"] == "cpu"
    again = run_sweep(SweepConfig(out=out, devices=("cpu", "cpu"), seeds=(0, 1), **TINY))
    assert again.reused == 2  # a rerun reads the device back from each run's record
    assert set(pd.read_parquet(out / "cells.parquet")["device"]) == {"cpu"}


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("submitit") is None, reason="needs submitit")
def test_submitits_local_executor_pins_each_job_in_turn(tmp_path):
    """Without Slurm, submitit runs each job as a local process: job *j* is pinned to device
    *j* mod 2 (submitit itself would show each the same devices)."""
    from bayesgeom.analyses.sweep.run import run_sweep

    out = tmp_path / "s"
    res = run_sweep(SweepConfig(out=out, backend="submitit", devices=("cpu", "cpu"),
                                seeds=(0, 1), **TINY))
    assert res.trained == 2
    table = pd.read_parquet(out / "cells.parquet").set_index("cell")
    assert table["slot"].to_dict() == {"bijection-transformer-tiny-s0": 0,
                                       "bijection-transformer-tiny-s1": 1}
    assert set(table["device"]) == {"cpu"}

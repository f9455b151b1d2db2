"""What the benchmark scripts' tests share: a tiny trained wind tunnel and a script of
``benchmarks/`` loaded as a module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def tiny_tunnel(tmp_path: Path) -> Path:
    """A bijection tunnel (V = 6, tiny preset) trained for 4 steps: not learned, quick."""
    from bayesgeom.windtunnel.training import TrainConfig, train

    run = tmp_path / "run"
    train(TrainConfig(task="bijection", task_params={"V": 6}, arch="transformer", preset="tiny",
                      steps=4, seed=0, batch_size=8, eval_every=4, eval_size=16,
                      final_eval_size=16, ckpt_every=4, warmup_steps=1), run, progress=False)
    return run

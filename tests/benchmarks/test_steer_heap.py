"""The heap benchmark (benchmarks/steer_heap.py) runs a policy on a tiny wind tunnel, in this
process: it counts the edited passes' scored effects and reads the peak resident set, and puts
steer's own trimmer and scoring back afterwards (no memory figure is checked here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bayesgeom.analyses.steer import run as steer_run
from bayesgeom.windtunnel.training import TrainConfig, train

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "steer_heap.py"


def test_a_policy_counts_scored_effects_and_restores_steer(tmp_path):
    run = tmp_path / "run"
    train(TrainConfig(task="bijection", task_params={"V": 6}, arch="transformer", preset="tiny",
                      steps=4, seed=0, batch_size=8, eval_every=4, eval_size=16,
                      final_eval_size=16, ckpt_every=4, warmup_steps=1), run, progress=False)
    spec = importlib.util.spec_from_file_location("steer_heap_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    before = steer_run.HeapTrimmer, steer_run.score
    got = mod.child("trim2", str(run), 2.0)  # 2 s of edited passes, then stopped
    assert (steer_run.HeapTrimmer, steer_run.score) == before
    assert got["policy"] == "trim2" and got["scored_effects"] > 0
    assert got["peak_rss_mb"] >= got["rss_at_end_mb"] > 0 and got["effects_per_s"] > 0

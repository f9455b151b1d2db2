"""The steering benchmark (benchmarks/steer_passes.py) runs on a tiny wind tunnel with --quick
and writes its ratios; it stacks the passes in this tree (no timing is checked here)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

from bayesgeom.windtunnel.training import TrainConfig, train

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "steer_passes.py"


def test_quick_run_writes_the_ratios(tmp_path, monkeypatch):
    run = tmp_path / "run"
    train(TrainConfig(task="bijection", task_params={"V": 6}, arch="transformer", preset="tiny",
                      steps=4, seed=0, batch_size=8, eval_every=4, eval_size=16,
                      final_eval_size=16, ckpt_every=4, warmup_steps=1), run, progress=False)
    spec = importlib.util.spec_from_file_location("steer_passes_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "bench.json"
    monkeypatch.setattr(sys, "argv", ["steer_passes.py", "--quick", "--model", str(run),
                                      "--reps", "1", "--out", str(out)])
    mod.main()
    res = json.loads(out.read_text())["results"]
    assert res["stacked"] and res["quick"] and res["passes_per_condition"] == 4
    assert len(res["edited_pass_s"]) == 3 and len(res["bare_rounds_s"]) == 4
    for k in ("edited_over_bare", "edited_unscored_over_bare"):
        assert math.isfinite(res[k]) and res[k] > 0

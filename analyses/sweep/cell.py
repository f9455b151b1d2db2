"""What a sweep's worker does with one cell: train (or resume) it in its folder, then run its
extra evaluations, and return its row. Imported by a worker only once it has started
(:mod:`analyses.sweep.guard`): importing it imports torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...windtunnel.training import TrainConfig, train
from .evals import evaluate_overrides
from .result import METRICS


def run_cell(train_cfg: dict[str, Any], out: str,
             evals: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """Train (or resume) one cell in ``out``, then run its extra evaluations; the row of its
    metrics."""
    cfg = TrainConfig.from_json(train_cfg)
    res = train(cfg, out, progress=False)
    assert res.report is not None
    rep = res.report.to_dict()
    extra = evaluate_overrides(Path(out), cfg.task, cfg.settings(cfg.validate())["task_params"],
                               cfg.seed, cfg.final_eval_size, list(evals))
    return {**{k: rep[k] for k in METRICS if k in rep}, "params": res.params,
            "steps": res.steps_done, "wall_s": res.wall_s, "stop_reason": res.stop_reason,
            **extra}

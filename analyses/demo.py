"""``bayesgeom demo``: the main job.

Wind-tunnel part: train the small transformer on bijection elimination (V = 20) and an MLP
baseline for the same wall time, evaluate both against the exact posterior, print a table and
write ``table.parquet``, ``summary.json``, ``manifest.json`` and ``report.html`` under ``--out``.
Trained runs are reused on a rerun (training resumes or returns the finished run).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from analyses.report import html_report
from windtunnel.artifacts import run_manifest, write_json, write_table
from windtunnel.training import TrainConfig, TrainResult, train


@dataclass
class DemoConfig:
    out: Path = Path("runs/demo")
    quick: bool = False
    seed: int = 0
    baselines: tuple[str, ...] = ("mlp-position", "mlp-flat")
    progress: bool = True
    preset: str = "small"
    #: transformer steps; the MLP baselines get the transformer's training wall time.
    full_steps: int = 3000
    quick_steps: int = 400
    task_params: dict = field(default_factory=lambda: {"V": 20})


def _transformer_cfg(c: DemoConfig) -> TrainConfig:
    steps = c.quick_steps if c.quick else c.full_steps
    return TrainConfig(
        task="bijection",
        task_params=c.task_params,
        arch="transformer",
        preset=c.preset,
        steps=steps,
        seed=c.seed,
        eval_every=max(100, steps // 8),
        ckpt_every=max(100, steps // 4),
        warmup_steps=min(200, steps // 10),
    )


def _baseline_cfg(c: DemoConfig, arch: str, wall_s: float) -> TrainConfig:
    return TrainConfig(
        task="bijection",
        task_params=c.task_params,
        arch=arch,
        preset=c.preset,
        steps=1_000_000,
        seed=c.seed,
        eval_every=500,
        ckpt_every=1000,
        warmup_steps=200,
        max_minutes=max(0.001, round(wall_s / 60.0, 3)),
    )


def _row(res: TrainResult, arch: str) -> dict:
    summ = json.loads((res.out / "eval.json").read_text())
    return {
        "arch": arch,
        "params": summ["params"],
        "steps": res.steps_done,
        "wall_s": round(res.wall_s, 1),
        "entropy_mae_bits": summ["entropy_mae_bits"],
        "entropy_mae_curve_bits": summ["entropy_mae_curve_bits"],
        "kl_bits": summ["kl_bits"],
        "tvd": summ["tvd"],
        "accuracy": summ["accuracy"],
    }


def run_demo(c: DemoConfig) -> dict:
    out = Path(c.out)
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, TrainResult] = {}
    print("[1/3] training the small transformer on bijection elimination (V = 20)")
    runs["transformer"] = train(
        _transformer_cfg(c), out / "windtunnel" / "transformer", progress=c.progress
    )
    wall = runs["transformer"].wall_s
    for i, arch in enumerate(c.baselines):
        print(
            f"[2/3] training the {arch} baseline for the same wall time ({wall:.0f} s)"
            f" [{i + 1}/{len(c.baselines)}]"
        )
        runs[arch] = train(
            _baseline_cfg(c, arch, wall), out / "windtunnel" / arch, progress=c.progress
        )

    print("[3/3] writing the report")
    table = pd.DataFrame([_row(r, a) for a, r in runs.items()])
    write_table(out / "table.parquet", table)
    manifest = run_manifest(seed=c.seed, dtype="float32", demo=asdict(c) | {"out": str(out)})
    write_json(out / "manifest.json", manifest)
    summary = {
        "windtunnel": {
            "task": "bijection",
            "V": c.task_params["V"],
            "rows": table.to_dict("records"),
        }
    }
    write_json(out / "summary.json", summary)

    fig_h = go.Figure()
    bayes = runs["transformer"].report.per_position["h_bayes_bits"]
    fig_h.add_scatter(y=bayes, name="exact Bayes", mode="lines+markers")
    for a, r in runs.items():
        fig_h.add_scatter(
            y=r.report.per_position["h_model_bits"], name=a, mode="lines", line={"dash": "dash"}
        )
    fig_h.update_layout(
        xaxis_title="key position k",
        yaxis_title="predictive entropy (bits)",
        template="plotly_white",
    )
    fig_l = go.Figure()
    for a, r in runs.items():
        ev = r.log.dropna(subset=["eval_entropy_mae_bits"])
        fig_l.add_scatter(
            x=ev["elapsed_s"], y=ev["eval_entropy_mae_bits"], name=a, mode="lines+markers"
        )
    fig_l.update_layout(
        xaxis_title="training wall time (s)",
        yaxis_title="entropy MAE (bits)",
        yaxis_type="log",
        template="plotly_white",
    )
    html_report(
        out / "report.html",
        "bayesgeom demo",
        [
            ("Wind tunnel: bijection elimination, V = 20", table),
            ("Entropy calibration per position (held-out)", fig_h),
            ("Held-out entropy MAE during training", fig_l),
        ],
        manifest,
    )

    with pd.option_context("display.float_format", lambda x: f"{x:.4g}", "display.width", 120):
        print(table.to_string(index=False))
    print(f"report: {out / 'report.html'}")
    return summary

"""The sweep's aggregate (mean, sd, 95 % t-interval over seeds per cell and metric), its figure,
its offline report and its terminal summary.

Example:
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"task": ["b", "b"], "arch": ["t", "t"], "preset": ["s", "s"],
    ...                       "status": ["trained", "reused"], "entropy_mae_bits": [0.1, 0.3]})
    >>> a = aggregate(cells, metrics=("entropy_mae_bits",))
    >>> a[["n", "mean"]].round(3).values.tolist()
    [[2.0, 0.2]]
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from scipy import stats

from ..kit.html import COLORS, html_report
from .result import SweepResult

GROUP = ("task", "arch", "preset")
#: metrics of a cell, with what each is (the report's and the summary's labels)
LABELS = {
    "entropy_mae_bits": "entropy MAE, per-sample mean |H_model - H_Bayes| (bits, Paper I)",
    "entropy_mae_curve_bits": "entropy MAE of the position curve (bits)",
    "kl_bits": "KL(model ‖ Bayes) (bits)",
    "tvd": "total variation to the posterior",
    "accuracy": "accuracy (argmax = true answer)",
    "params": "parameters",
    "steps": "steps trained",
    "wall_s": "training wall time (s)",
}


def aggregate(cells: pd.DataFrame, metrics: tuple[str, ...] = tuple(LABELS)) -> pd.DataFrame:
    """Tidy rows (task, arch, preset, metric, n, mean, sd, ci_low, ci_high) over the finished
    cells (trained or reused); the interval is the 95 % t-interval of the mean (NaN for n < 2)."""
    ok = cells[cells["status"].isin(["trained", "reused"])]
    rows = []
    for key, g in ok.groupby(list(GROUP), sort=False):
        for m in metrics:
            if m not in g:
                continue
            x = pd.to_numeric(g[m], errors="coerce").dropna().to_numpy(dtype=float)
            n = len(x)
            mean = float(x.mean()) if n else math.nan
            sd = float(x.std(ddof=1)) if n > 1 else math.nan
            half = float(stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)) if n > 1 else math.nan
            rows.append({**dict(zip(GROUP, key, strict=True)), "metric": m, "n": float(n),
                         "mean": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half})
    return pd.DataFrame(rows, columns=[*GROUP, "metric", "n", "mean", "sd", "ci_low",
                                       "ci_high"])


def mae_figure(agg: pd.DataFrame) -> go.Figure:
    """Entropy MAE (bits, log scale) per task and architecture: the mean over seeds with its
    95 % interval as the error bar."""
    fig = go.Figure()
    a = agg[agg["metric"] == "entropy_mae_bits"]
    for i, (arch, g) in enumerate(a.groupby("arch", sort=False)):
        x = [f"{t} · {p}" for t, p in zip(g["task"], g["preset"], strict=True)]
        err = (g["ci_high"] - g["mean"]).fillna(0).to_numpy()
        fig.add_bar(name=str(arch), x=x, y=g["mean"], marker_color=COLORS[i % len(COLORS)],
                    error_y={"type": "data", "array": err, "visible": True})
    fig.update_layout(barmode="group", yaxis_type="log", yaxis_title=LABELS["entropy_mae_bits"],
                      title="entropy MAE against the exact posterior: mean over seeds, 95 % CI")
    return fig


def wide(agg: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, arch, preset): ``mean ± sd (n)`` of each metric."""
    def cell(r: pd.Series) -> str:
        if pd.isna(r["mean"]):
            return "n/a"
        if r["metric"] in ("params", "steps"):
            return f"{r['mean']:,.0f}"
        sd = "" if pd.isna(r["sd"]) else f" ± {r['sd']:.2g}"
        return f"{r['mean']:.4g}{sd} (n={r['n']:.0f})"

    if agg.empty:
        return pd.DataFrame(columns=list(GROUP))
    t = agg.assign(text=agg.apply(cell, axis=1))
    return t.pivot_table(index=list(GROUP), columns="metric", values="text",
                         aggfunc="first", sort=False).reset_index()


def write_report(path: Path, result: SweepResult, cells: pd.DataFrame, agg: pd.DataFrame,
                 manifest: dict) -> Path:
    sections: list[tuple[str, object]] = [
        ("entropy MAE by architecture", mae_figure(agg)),
        ("per cell: mean ± sd over seeds (n)", wide(agg)),
        ("aggregate (tidy)", agg),
        ("every run", cells),
    ]
    if result.failed:
        sections.insert(0, ("failed cells", "; ".join(
            f"{c.name}: {c.error}" for c in result.cells if c.status == "failed")))
    return html_report(path, "bayesgeom sweep", sections, manifest)


def format_summary(result: SweepResult) -> str:
    agg = pd.DataFrame(result.aggregate)
    lines = [f"{len(result.cells)} cells ({result.backend}): {result.trained} trained, "
             f"{result.reused} reused, {result.failed} failed, in {result.wall_s:.0f} s"]
    if not agg.empty:
        show = wide(agg)
        keep = [c for c in (*GROUP, "params", "entropy_mae_bits", "kl_bits", "accuracy")
                if c in show]
        keep += [c for c in show if str(c).startswith("entropy_mae_bits@")]
        lines.append(show[keep].to_string(index=False))
    lines += [f"failed: {c.name}: {c.error}" for c in result.cells if c.status == "failed"]
    return "\n".join(lines)

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

from ...windtunnel.baselines import CHANCE, HISTORY_FREE
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig
from .result import SweepResult

GROUP = ("task", "arch", "preset")
#: the headline metric: Paper I's per-sample entropy MAE against the exact posterior
MAE = "entropy_mae_bits"
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


def mae_figure(agg: pd.DataFrame, controls: dict[str, dict[str, float]] | None = None,
               ) -> go.Figure:
    """Entropy MAE (bits, log scale) per task and architecture: the mean over seeds with its
    95 % interval as the error bar; each task's chance and history-free controls as marks."""
    fig = go.Figure()
    a = agg[agg["metric"] == MAE]
    for i, (arch, g) in enumerate(a.groupby("arch", sort=False)):
        x = [f"{t} · {p}" for t, p in zip(g["task"], g["preset"], strict=True)]
        err = (g["ci_high"] - g["mean"]).fillna(0).to_numpy()
        fig.add_bar(name=str(arch), x=x, y=g["mean"], marker_color=COLORS[i % len(COLORS)],
                    error_y={"type": "data", "array": err, "visible": True})
    keys = a[["task", "preset"]].drop_duplicates()
    for name, key, symbol in (("chance (uniform prediction)", CHANCE, "line-ew"),
                              ("history-free filter (HMM)", HISTORY_FREE, "x-thin")):
        pts = [(f"{t} · {p}", (controls or {}).get(t, {}).get(key))
               for t, p in zip(keys["task"], keys["preset"], strict=True)]
        pts = [(x, y) for x, y in pts if y is not None and y > 0]
        if pts:
            fig.add_scatter(x=[x for x, _ in pts], y=[y for _, y in pts], mode="markers",
                            name=name, marker={"symbol": symbol, "size": 40, "color": "#444",
                                               "line": {"width": 3, "color": "#444"}})
    fig.update_layout(barmode="group", yaxis_type="log", yaxis_title=LABELS[MAE],
                      title="entropy MAE against the exact posterior: mean over seeds, 95 % CI")
    return fig


def _rows(result: SweepResult) -> pd.DataFrame:
    """The aggregate's rows of the headline metric over cells with at least one seed."""
    agg = pd.DataFrame(result.aggregate)
    if agg.empty:
        return agg
    for c in ("n", "mean", "sd", "ci_low", "ci_high"):  # JSON wrote NaN as null
        agg[c] = pd.to_numeric(agg[c], errors="coerce").astype(float)
    agg = agg[(agg["metric"] == MAE) & (agg["n"] > 0)]
    return agg[agg["mean"].notna()]


def _ci(r: pd.Series) -> str:
    return f"[{sig(r['ci_low'])}, {sig(r['ci_high'])}]"


def _task_finding(task: str, g: pd.DataFrame, controls: dict[str, float]) -> list[Finding]:
    """One task: its closest cell against chance and the runner-up; on the HMM, against the
    history-free filter and the window ladder."""
    g = g.sort_values("mean", kind="stable")
    best = g.iloc[0]
    name = f"{best['arch']} ({best['preset']})"
    chance = controls.get(CHANCE)
    ctl = [f"chance {sig(chance)} bits" if chance is not None else "chance not recorded"]
    ctl += ([f"runner-up {g.iloc[1]['arch']} ({g.iloc[1]['preset']}) "
             f"{sig(g.iloc[1]['mean'])} bits"] if len(g) > 1 else [])
    n = int(best["n"])
    checks: list[tuple[str, bool | None]] = [
        ("below chance", None if chance is None else bool(best["ci_high"] < chance))]
    if len(g) > 1:
        low = g.iloc[1]["ci_low"]
        checks.append(("apart from the runner-up's interval " + _ci(g.iloc[1]),
                       None if pd.isna(low) else bool(best["ci_high"] < low)))
    if n < 2:
        ok: bool | None = None
        why = "one seed: no 95 % interval to decide with"
    else:
        got = [c for _, c in checks]
        ok = None if None in got else all(got)
        why = "; ".join(f"{t}: {'yes' if c else 'no' if c is not None else 'undefined'}"
                        for t, c in checks)
    out = [Finding(
        f"{name} is the closest to the exact posterior on {task} (Paper I per-sample entropy "
        f"MAE, mean over {n} seed{'s' if n != 1 else ''})", best["mean"], unit="bits",
        control="; ".join(ctl), survives=ok,
        evidence=why if n < 2 else f"95 % t-interval over seeds {_ci(best)}; {why}",
        undefined="no finished seed")]
    hf = controls.get(HISTORY_FREE)
    if hf is not None:
        ladder = {k: v for k, v in controls.items() if k.startswith("window ")}
        beats = [a for a, hi in zip(g["arch"], g["ci_high"], strict=True) if hi < hf]
        worse = [k for k, v in ladder.items() if v > best["mean"]]
        out.append(Finding(
            f"{name} uses the observation history on {task} (per-sample entropy MAE below "
            "the history-free filter's)", best["mean"], unit="bits",
            control=f"history-free filter {sig(hf)} bits; "
                    + ", ".join(f"{k} {sig(v)}" for k, v in ladder.items()),
            survives=None if n < 2 else bool(best["ci_high"] < hf),
            evidence=(f"95 % interval {_ci(best)}" if n >= 2 else "one seed: no interval")
            + f"; beats the filters of {', '.join(worse) or 'no window'}; architectures "
              f"whose interval lies below the history-free filter: "
              f"{', '.join(map(str, beats)) or 'none'}",
            undefined="no finished seed"))
    return out


def findings(result: SweepResult) -> list[Finding]:
    """The verdict table: per task, which architecture comes closest to the exact posterior,
    held against chance and the runner-up (and, on the HMM, the history-free filter), decided
    by the cells' own 95 % t-intervals over seeds; one row without a verdict when no cell
    finished."""
    rows = _rows(result)
    if rows.empty:
        tasks = sorted({c.task for c in result.cells})
        archs = sorted({c.arch for c in result.cells})
        return [Finding(
            f"a sweep of {len(result.cells)} cells ({', '.join(tasks)} × {', '.join(archs)}) "
            "reaches the exact posterior", None, survives=None,
            evidence=f"{result.failed} failed, nothing to compare",
            undefined="no cell finished")]
    out: list[Finding] = []
    for task, g in rows.groupby("task", sort=False):
        out += _task_finding(str(task), g, result.controls.get(str(task), {}))
    return out


def wide(agg: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, arch, preset): ``mean ± sd (n)`` of each metric."""
    def cell(r: pd.Series) -> str:
        if pd.isna(r["mean"]):
            return "undefined: no finished seed"
        if r["metric"] in ("params", "steps"):
            return f"{r['mean']:,.0f}"
        sd = "" if pd.isna(r["sd"]) else f" ± {sig(r['sd'])}"
        return f"{sig(r['mean'])}{sd} (n={r['n']:.0f})"

    if agg.empty:
        return pd.DataFrame(columns=list(GROUP))
    t = agg.assign(text=agg.apply(cell, axis=1))
    return t.pivot_table(index=list(GROUP), columns="metric", values="text",
                         aggfunc="first", sort=False).reset_index()


def controls_table(result: SweepResult) -> pd.DataFrame:
    """One row per task and control: its per-sample entropy MAE (bits)."""
    return pd.DataFrame([{"task": t, "control": k, "entropy_mae_bits": v}
                         for t, c in result.controls.items() for k, v in c.items()],
                        columns=["task", "control", "entropy_mae_bits"])


def write_report(path: Path, result: SweepResult, cells: pd.DataFrame, agg: pd.DataFrame,
                 paper: pd.DataFrame, manifest: dict) -> Path:
    """``report.html``: the verdict table, the figure, Paper I's table (``paper``:
    :func:`analyses.sweep.paper_table.paper_table`), the per-cell table, the controls, every
    run."""
    sections: list[tuple[str, object] | tuple[str, object, str]] = [
        ("Entropy MAE by architecture", mae_figure(agg, result.controls),
         "Look for: on each task, the lowest bar (architectures in the legend) and whether its "
         "95 % error bar stays under the chance mark (uniform prediction) and, on the HMM, the "
         "history-free filter's cross; lower is closer to the exact posterior (log scale)."),
        ("Paper I's table: per architecture, each task's headline over seeds, the steps and "
         "training time each seed took and why it stopped", paper),
        ("Per cell: mean ± sd over seeds (n)", wide(agg)),
        ("Controls: untrained predictors on the held-out sequences of the first seed",
         controls_table(result)),
        ("Aggregate (tidy)", agg),
        ("Every run", cells),
    ]
    if result.failed:
        sections.insert(0, ("Failed cells", "; ".join(
            f"{c.name}: {c.error}" for c in result.cells if c.status == "failed")))
    return html_report(path, "bayesgeom sweep", findings(result), sections, manifest)


def format_summary(result: SweepResult) -> str:
    """The verdict table, the counts, the per-cell table and any failure."""
    agg = pd.DataFrame(result.aggregate)
    lines = [findings_text(findings(result)), "",
             f"{len(result.cells)} cells ({result.backend}): {result.trained} trained, "
             f"{result.reused} reused, {result.failed} failed, in {result.wall_s:.0f} s"]
    if not agg.empty:
        show = wide(agg)
        keep = [c for c in (*GROUP, "params", "entropy_mae_bits", "kl_bits", "accuracy")
                if c in show]
        keep += [c for c in show if str(c).startswith("entropy_mae_bits@")]
        lines.append(show[keep].to_string(index=False))
    lines += [f"failed: {c.name}: {c.error}" for c in result.cells if c.status == "failed"]
    return "\n".join(lines)

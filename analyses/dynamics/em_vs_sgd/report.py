"""Terminal summary, tables, figure and report of ``bayesgeom dynamics em-vs-sgd``
(:mod:`analyses.dynamics.em_vs_sgd.run`; its result, :class:`EmVsSgdResult`, is in
:mod:`.result`, its verdict table in :mod:`.findings`). All losses and entropies are in nats;
the floor H_min is the authors' (spec §2.3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ...kit.findings import findings_text
from ...kit.html import COLORS, html_report
from ...kit.numbers import num, times
from .findings import findings
from .result import EmVsSgdResult, ProtocolSummary


def _pm(m: float, s: float, nd: int = 4) -> str:
    return num(m, nd) if not np.isfinite(s) else f"{num(m, nd)} ± {num(s, nd)}"


def _mean_sd(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else float("nan")


def _rows(r: EmVsSgdResult) -> list[ProtocolSummary]:
    return [*r.protocols.values(), *([r.deep] if r.deep is not None else [])]


def summary_table(r: EmVsSgdResult) -> pd.DataFrame:
    """One row per protocol (deep last): the headline numbers of :func:`format_summary`."""
    return pd.DataFrame([{
        "protocol": s.protocol, "label": s.label,
        "setting": f"{s.param} {s.value:g}" if s.param else "untuned", "seeds": s.n_seeds,
        "final loss": _pm(s.final_loss_mean, s.final_loss_sd),
        "loss - H_min": _pm(s.gap_loss_mean, s.gap_loss_sd),
        "entropy": _pm(s.entropy_mean, s.entropy_sd),
        "accuracy": _pm(s.accuracy_mean, s.accuracy_sd, 3),
        "steps to tuned-SGD final": (f"{_pm(s.steps_to_tuned_mean, s.steps_to_tuned_sd, 0)} "
                                     f"({s.reached}/{s.n_seeds})"),
        "speed-up (steps)": times(s.speedup),
        "wall to tuned-SGD final (s)": num(s.wall_to_tuned_mean, 2),
        "speed-up (wall)": times(s.speedup_wall),
        "paired t vs tuned SGD": num(s.t_vs_tuned, 2),
        "p (Holm)": ("" if not np.isfinite(s.p_vs_tuned)
                     else f"{s.p_vs_tuned:.2g} ({s.p_holm:.2g})"),
        "survives": {None: "", True: "yes", False: "no"}[s.survives],
        "steps to SGD(0.01) mean final": (f"{_pm(s.steps_to_sgd_mean, s.steps_to_sgd_sd, 0)} "
                                          f"({s.reached_sgd}/{s.n_seeds})"),
        "authors' speed-up": times(s.speedup_sgd)} for s in _rows(r)])


def tuning_table(r: EmVsSgdResult) -> pd.DataFrame:
    """One row per tuned protocol: grid, pilot losses, choice, edge flag, cost."""
    return pd.DataFrame([{
        "protocol": t.protocol, "param": t.param, "grid": ", ".join(f"{v:g}" for v in t.grid),
        "pilot final losses": ", ".join(num(v, 4) for v in t.pilot_losses),
        "chosen": f"{t.chosen:g}", "at grid edge": "yes" if t.at_edge else "",
        "trials' wall time (s)": t.wall_s} for t in r.tuning.values()])


def format_summary(r: EmVsSgdResult) -> str:
    """Terminal view: the verdict table, then :func:`details_text`."""
    return findings_text(findings(r)) + "\n\n" + details_text(r)


def details_text(r: EmVsSgdResult) -> str:
    """The verdict sentences, then the set-up, the tuning, one block per protocol, the
    references and the notes."""
    cost = sum(t.wall_s for t in r.tuning.values())
    lines = [*r.verdict, "",
             f"{'QUICK (not a result): ' if r.quick else ''}EM-like vs SGD on the sticky "
             f"Markov chain · seeds {r.seeds} · {r.steps} full-batch steps · nats · "
             f"{r.threads} torch thread(s) · {r.wall_s:.0f} s",
             f"P row 0 = {[round(v, 4) for v in r.p_row0]} (self-transition "
             f"{r.self_transition:.4f}); floor H_min = {r.floor_nats:.4f}; {r.n_params} params; "
             f"mean final loss: SGD lr 0.01 {num(r.sgd_final_mean, 4)}, tuned SGD "
             f"{num(r.tuned_sgd_final_mean, 4)}",
             f"tuning on pilot seed {r.pilot_seed} at {r.steps} steps "
             f"({cost:.0f} s of training):"]
    for t in r.tuning.values():
        lines.append(f"  {t.protocol:<15} {t.param:<4} " + "  ".join(
            f"{v:g}:{num(loss, 4)}" for v, loss in zip(t.grid, t.pilot_losses, strict=True))
            + f"  -> {t.chosen:g}{' (grid edge)' if t.at_edge else ''}")
    for s in _rows(r):
        lines.append(f"{s.protocol} — {s.label} ({s.n_seeds} seeds"
                     + (f", {s.param} {s.value:g})" if s.param else ")"))
        lines.append(f"  final loss {_pm(s.final_loss_mean, s.final_loss_sd)}  entropy "
                     f"{_pm(s.entropy_mean, s.entropy_sd)}  accuracy "
                     f"{_pm(s.accuracy_mean, s.accuracy_sd)}  loss−H_min "
                     f"{_pm(s.gap_loss_mean, s.gap_loss_sd)}")
        if s.protocol == "deep_adamw":
            lines.append(f"  (test sequence: seed + 10000, dropout off; {r.deep_n_params:,} "
                         f"params, 64 of them an unused token table; {r.deep_steps} AdamW "
                         "steps, cosine over them; train loss "
                         f"{_pm(*_mean_sd([c.train_loss for c in r.deep_cells]))})")
            continue
        test = ("" if not np.isfinite(s.p_vs_tuned) else
                f"; paired t vs tuned SGD {s.t_vs_tuned:.2f}, p {s.p_vs_tuned:.3g} "
                f"(Holm {s.p_holm:.3g})")
        lines.append(f"  to tuned-SGD final: {_pm(s.steps_to_tuned_mean, s.steps_to_tuned_sd, 0)}"
                     f" steps ({s.reached}/{s.n_seeds}), {times(s.speedup)}; wall "
                     f"{num(s.wall_to_tuned_mean, 2)} s, {times(s.speedup_wall)} "
                     f"({s.s_per_step * 1e3:.1f} ms/step){test}")
        lines.append(f"  authors' measure (to SGD lr 0.01's mean final): "
                     f"{_pm(s.steps_to_sgd_mean, s.steps_to_sgd_sd, 0)} steps "
                     f"({s.reached_sgd}/{s.n_seeds}), {times(s.speedup_sgd)}")
    lines += [f"reference — {v}" for v in r.references.values()]
    lines += [f"note — {v}" for v in r.notes]
    return "\n".join(lines)


def curve_figure(curves: pd.DataFrame, floor: float) -> go.Figure:
    """Loss against step: per protocol the mean over seeds and a ±1 sd band; the floor H_min
    dashed. ``curves``: the tidy table (protocol, seed, step, loss)."""
    fig = go.Figure()
    for i, (_, g) in enumerate(curves.groupby("protocol", sort=False)):
        w = g.pivot(index="step", columns="seed", values="loss")
        m, sd = w.mean(axis=1), w.std(axis=1, ddof=1).fillna(0.0)
        x, colour = w.index.to_numpy(), COLORS[i % len(COLORS)]
        dash = ("solid", "dot", "dashdot")[i // len(COLORS) % 3]  # a repeated colour differs
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[m + sd, (m - sd)[::-1]],
                                 fill="toself", fillcolor=colour, opacity=0.2, line_width=0,
                                 hoverinfo="skip", showlegend=False))
        fig.add_trace(go.Scatter(x=x, y=m, name=str(g["label"].iloc[0]),
                                 line={"color": colour, "dash": dash}))
    fig.add_hline(y=floor, line_dash="dash", annotation_text=f"floor H_min = {floor:.4f}")
    fig.update_layout(xaxis_title="full-batch step", yaxis_title="training loss (nats)",
                      height=520, margin={"t": 30})
    return fig


def write_report(path: Path, r: EmVsSgdResult, curves: pd.DataFrame, cells: pd.DataFrame,
                 trials: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    """``report.html``: the verdict table, the run's verdict sentences and set-up, the tables
    and the loss curves (a quick run is labelled as such by :func:`html_report`)."""
    sections: list[tuple[str, object] | tuple[str, object, str]] = [
        ("Verdict in words, set-up and every protocol", details_text(r)),
        ("Per protocol (mean ± sd over seeds; tests against tuned SGD)", summary_table(r)),
        (f"Tuning on pilot seed {r.pilot_seed}", tuning_table(r)),
        ("Training loss (mean ± sd over seeds)",
         curve_figure(curves[curves["protocol"] != "deep_adamw"], r.floor_nats),
         "Look for: where each protocol's line (legend) crosses tuned SGD's final level and "
         "how low it ends against the dashed floor H_min; the shaded bands are ±1 sd over "
         "seeds. A line that drops sooner but ends at the same level is a speed-up, not a "
         "better fit.")]
    if r.deep is not None:
        sections.append(("Deep variant: training loss",
                         curve_figure(curves[curves["protocol"] == "deep_adamw"], r.floor_nats),
                         "Look for: the deep model's training loss against the dashed floor "
                         "H_min (its held-out loss is in the table above)."))
    sections += [("Tuning trials", trials), ("Per seed", cells)]
    title = "EM-like vs SGD, tuned baselines — sticky Markov chain (Paper II §2.3)"
    return html_report(path, title, findings(r), sections, manifest, quick=r.quick)

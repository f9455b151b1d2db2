"""The figures of a steering run (:mod:`analyses.steer.run`): the axis edits against their
control directions per condition kind (:func:`dose_response`), and the model's entropy per
group under the headline edits (:func:`per_group`).

Both read the run's tidy ``table.parquet``. Every panel of :func:`dose_response` is a kind of
edit the run made (cut, keep-only, shift), so a run with one cut fraction and one shift -- the
demo's quick mode -- draws two columns of single points with their control ranges, never an
empty panel.

Example:
    >>> import pandas as pd
    >>> rows = [dict(condition="clean", kind="clean", param=float("nan"), direction="clean",
    ...              effect="clean", metric="kl_bayes", group=None, value=0.5)]
    >>> rows += [dict(condition="cut+1", kind="cut", param=1.0, direction=d, effect="total",
    ...               metric="kl_bayes", group=None, value=v)
    ...          for d, v in (("axis", 0.9), ("r0", 0.6), ("r1", 0.55))]
    >>> fig = dose_response(pd.DataFrame(rows))
    >>> [a.text for a in fig.layout.annotations if a.text], fig.layout.yaxis.title.text
    (['full cut'], 'Δ KL(Bayes ‖ model) (bits)')
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import COLORS
from .passes import EFFECTS
from .result import SteerResult
from .scores import RELATIVE_METRICS

#: what to look for in :func:`dose_response`
DOSE_CAPTION = ("Look for: the entropy-axis markers (one colour per effect; solid total, "
                "dotted norm-frozen, dashed direct-path) outside the range of the same colour "
                "where 90 % of the control edits fall (a shaded band across doses, a bar at a "
                "single dose); inside it the axis edit does no more than an edit of equal "
                "energy along a control direction. The top row is the primary test's metric.")
#: what to look for in :func:`per_group`
GROUP_CAPTION = ("Look for: the dashed axis-edit lines moving away from the clean model's "
                 "line, and towards or away from the black exact-Bayes line; lines on top of "
                 "the clean one mean the edit leaves the model's uncertainty as it was.")

#: the primary metric (top row) and each kind's second metric (bottom row), with y labels
PRIMARY_PANEL = ("kl_bayes", "Δ KL(Bayes ‖ model) (bits)")
SECOND_PANEL = {"cut": ("kl_clean", "KL(clean ‖ edited) (bits)"),
                "keep_only": ("kl_clean", "KL(clean ‖ edited) (bits)"),
                "shift": ("h_model", "Δ mean H_model (bits)")}
#: each kind's column title and x axis
KIND_AXIS = {"cut": "fraction removed", "keep_only": "", "shift": "shift δ (σ)"}
DASHES = ("solid", "dot", "dash")


def change(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Overall rows of ``metric`` with ``change`` = value minus the clean value (or the value
    itself for metrics already relative to the clean pass); the clean rows dropped."""
    t = table[(table["metric"] == metric) & table["group"].isna()].copy()
    clean = t[t["condition"] == "clean"]["value"]
    ref = float(clean.iloc[0]) if metric not in RELATIVE_METRICS and len(clean) else 0.0
    t["change"] = t["value"] - ref
    return t[t["condition"] != "clean"]


def _kind_title(kind: str, params: np.ndarray) -> str:
    if kind == "keep_only":
        return "keep only the axis"
    if len(params) == 1:
        v = float(params[0])
        return ("full cut" if kind == "cut" and v == 1 else
                f"cut {100 * v:g} %" if kind == "cut" else f"shift {v:+g}σ")
    return "cuts" if kind == "cut" else "shifts"


def _panel(fig: go.Figure, e: pd.DataFrame, row: int, col: int, j: int, eff: str,
           legend: bool) -> None:
    """One effect's controls (band or bar: 5–95 %) and axis line in one panel."""
    color = COLORS[j % len(COLORS)]
    null = e[e["direction"] != "axis"].groupby("param")["change"]
    lo, hi, mid = null.quantile(0.05), null.quantile(0.95), null.median()
    xs = lo.index.to_numpy(float)
    if len(xs) > 1:
        fig.add_scatter(x=np.r_[xs, xs[::-1]], y=np.r_[hi.to_numpy(), lo.to_numpy()[::-1]],
                        fill="toself", line={"width": 0, "color": color}, fillcolor=color,
                        opacity=0.25, name=f"controls 5–95 % ({eff})",
                        legendgroup=f"null-{eff}", showlegend=legend, row=row, col=col)
    elif len(xs) == 1:
        fig.add_scatter(x=xs, y=mid.to_numpy(), mode="markers",
                        marker={"color": color, "symbol": "line-ew-open", "size": 14},
                        error_y={"type": "data", "symmetric": False, "color": color,
                                 "array": hi.to_numpy() - mid.to_numpy(),
                                 "arrayminus": mid.to_numpy() - lo.to_numpy()},
                        opacity=0.5, name=f"controls 5–95 % ({eff})",
                        legendgroup=f"null-{eff}", showlegend=legend, row=row, col=col)
    a = e[e["direction"] == "axis"].sort_values("param")
    fig.add_scatter(x=a["param"], y=a["change"], mode="lines+markers",
                    line={"dash": DASHES[j % len(DASHES)], "color": color},
                    marker={"size": 10}, name=f"entropy axis ({eff})",
                    legendgroup=f"axis-{eff}", showlegend=legend, row=row, col=col)


def dose_response(table: pd.DataFrame) -> go.Figure:
    """Axis effect (each effect: total, norm_frozen, direct_path) against the control
    directions' 5–95 % range: one column per kind of edit the run made, the primary metric
    (Δ KL to the exact posterior) on top and the kind's second metric below."""
    kinds = [k for k in SECOND_PANEL if k in set(table["kind"])]
    if not kinds:
        return go.Figure().update_layout(template="plotly_white",
                                         title="no edited pass in this run")
    prim = change(table, PRIMARY_PANEL[0])
    params = {k: np.unique(prim[prim["kind"] == k]["param"].to_numpy(float)) for k in kinds}
    n = len(kinds)
    fig = make_subplots(rows=2, cols=n, vertical_spacing=0.14, horizontal_spacing=0.1,
                        subplot_titles=[*(_kind_title(k, params[k]) for k in kinds),
                                        *([""] * n)])
    for c, kind in enumerate(kinds, start=1):
        for r, (metric, label) in ((1, PRIMARY_PANEL), (2, SECOND_PANEL[kind])):
            t = change(table, metric)
            t = t[t["kind"] == kind].fillna({"param": 0.0})  # keep-only: one dose, no value
            for j, eff in enumerate(EFFECTS):
                e = t[t["effect"] == eff]
                if not e.empty:
                    _panel(fig, e, r, c, j, eff, legend=(r, c) == (1, 1))
            fig.update_yaxes(title_text=label, title_font={"size": 11}, row=r, col=c)
            fig.update_xaxes(title_text=KIND_AXIS[kind] if r == 2 else "", row=r, col=c,
                             showticklabels=kind != "keep_only")
    fig.update_layout(template="plotly_white", height=640, legend={"orientation": "h",
                                                                   "y": -0.12})
    return fig


def per_group(table: pd.DataFrame, result: SteerResult) -> go.Figure:
    """Mean model entropy per group (SULA: k) on the clean pass and under the headline axis
    edits (total effect), with the exact Bayes entropy."""
    g = result.group_name
    fig = go.Figure()
    clean = result.clean.per_group
    ks = sorted(int(k) for k in clean)
    fig.add_scatter(x=ks, y=[clean[str(k)].h_bayes for k in ks], name="exact Bayes",
                    mode="lines+markers", line={"color": "black"})
    fig.add_scatter(x=ks, y=[clean[str(k)].h_model for k in ks], name="model (clean)",
                    mode="lines+markers", line={"color": COLORS[0]})
    metric = f"h_model_by_{g}"
    for i, cond in enumerate(("cut+1", "keep_only", "shift-1", "shift+1"), start=1):
        t = table[(table["condition"] == cond) & (table["direction"] == "axis")
                  & (table["effect"] == "total") & (table["metric"] == metric)]
        if not t.empty:
            t = t.sort_values("group")
            fig.add_scatter(x=t["group"].astype(int), y=t["value"], name=f"axis {cond}",
                            mode="lines+markers",
                            line={"dash": "dash", "color": COLORS[i % len(COLORS)]})
    fig.update_layout(template="plotly_white", xaxis_title=g,
                      yaxis_title="mean entropy over the hypotheses (bits)")
    return fig

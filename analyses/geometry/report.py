"""Figures, tables and the terminal summary of a geometry run (:mod:`analyses.geometry.run`).

Everything here reads the typed :class:`~analyses.geometry.result.GeometryResult` and, for the
per-layer curves and the table of further measures, its generic metric rows with the metric
catalogue (:func:`analyses.geometry.probes.catalogue`): a newly registered measure is drawn
and tabulated without an edit here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes import Interval
from ...probes.bootstrap import EXCLUDES_NOTE, METHOD_NAMES, excludes
from ..kit.findings import findings_text
from ..kit.html import COLORS, html_report, legend_names
from .findings import findings
from .measures import CORE_SPECS, MetricSpec
from .probes import catalogue
from .result import GeometryResult, MetricRow, SetSummary, abs_interval, metrics_table

CORE = {s.name for s in CORE_SPECS}

#: what to look for in :func:`pca_scatter`
SCATTER_CAPTION = ("Look for: the colour (next-token entropy) changing steadily along PC1, the "
                   "ordering Paper III reports; colours scattered at random along PC1 mean it "
                   "does not track entropy. Hover a point for its prompt.")
#: what to look for in :func:`layer_curves`
CURVES_CAPTION = ("Look for: each solid line (the trained model, shaded 95 % interval) against "
                  "the dotted line of the same colour (the same analysis on its random-init "
                  "twin) and the dashed one (position alone); only a gap over both is the "
                  "model's own. A line with a ✕ has intervals that exclude their estimate "
                  "(marked ✕, not evidence) and no shading. In the key panel lower is more "
                  "orthogonal; the grey lines are chance references and Paper III's criterion.")


def pca_scatter(prompts: pd.DataFrame, prompt_set: str, layer: int) -> go.Figure:
    """PC1 vs PC2 of the final-token values at ``layer``, one marker per prompt, coloured by
    next-token entropy (bits). ``prompts`` needs ``pc1``, ``pc2``, ``entropy_bits``, ``text``."""
    hover = [t if len(t) <= 90 else t[:87] + "..." for t in prompts["text"].astype(str)]
    fig = go.Figure(go.Scatter(
        x=prompts["pc1"], y=prompts["pc2"], mode="markers", text=hover,
        marker={"color": prompts["entropy_bits"], "colorscale": "Viridis", "size": 8,
                "colorbar": {"title": "entropy (bits)"}},
        hovertemplate="%{text}<br>H = %{marker.color:.2f} bits<extra></extra>",
    ))
    fig.update_layout(title=f"{prompt_set}: values at layer {layer}, standardised PCA",
                      xaxis_title="PC1", yaxis_title="PC2", template="plotly_white",
                      height=450)
    return fig


def curve_metrics(table: pd.DataFrame) -> list[MetricSpec]:
    """The per-layer metrics of ``table`` that reports draw as curves, in catalogue order."""
    present = set(table.loc[table["layer"].notna(), "metric"])
    return [s for s in catalogue().values()
            if s.per_layer and s.curve and s.name in present]


def _lines(table: pd.DataFrame, metric: str) -> list[tuple[str, str, pd.DataFrame]]:
    """(legend name of the model's line, reference, rows by layer) per prompt set, target and
    reference of one per-layer metric."""
    t = table[(table["metric"] == metric) & table["layer"].notna()]
    out = []
    for (pset, target, ref), g in t.groupby([t["prompt_set"].fillna("model"),
                                             t["target"].fillna(""), t["reference"]],
                                            sort=False):
        out.append((pset if not target else f"{pset} · {target}", ref, g.sort_values("layer")))
    return out


def _position_lines(fig: go.Figure, table: pd.DataFrame, metric: str, colors: dict[str, str],
                    x: tuple[int, int], row: int, col: int) -> None:
    """Horizontal dashed lines: what position alone gives for ``metric`` (per set, target)."""
    t = table[(table["metric"] == metric) & (table["reference"] == "position")]
    for r in t.to_dict("records"):
        base = r["prompt_set"] if not r["target"] else f"{r['prompt_set']} · {r['target']}"
        name = f"{base} · position only"
        fig.add_scatter(x=list(x), y=[r["value"]] * 2, mode="lines", name=name,
                        legendgroup=name, showlegend=name not in legend_names(fig),
                        line={"dash": "dash", "color": colors.get(base, "gray")},
                        row=row, col=col)


def layer_curves(result: GeometryResult) -> go.Figure:
    """One panel per per-layer metric (CIs where the run has them); dotted: the same analysis
    on the random-initialisation twin; dashed: position alone; the key-orthogonality panel
    carries its Gaussian reference and Paper III's criterion."""
    table = metrics_table(result.metrics)
    specs = curve_metrics(table)
    rows = -(-len(specs) // 2)
    fig = make_subplots(rows=rows, cols=2, subplot_titles=[s.label for s in specs])
    names: dict[str, str] = {}
    for i, spec in enumerate(specs):
        r, c = divmod(i, 2)
        for base, ref, g in _lines(table, spec.name):
            color = names.setdefault(base, COLORS[len(names) % len(COLORS)])
            name = base if ref == "model" else f"{base} · {ref.replace('_', ' ')}"
            fig.add_scatter(x=g["layer"], y=g["value"], mode="lines+markers", name=name,
                            legendgroup=name, showlegend=name not in legend_names(fig),
                            line={"color": color, "dash": "solid" if ref == "model" else "dot"},
                            row=r + 1, col=c + 1)
            bad = _excluding(g)
            if ref == "model" and g["low"].notna().any() and not bad.any():
                fig.add_scatter(x=[*g["layer"], *g["layer"][::-1]],
                                y=[*g["high"], *g["low"][::-1]], fill="toself",
                                line={"width": 0}, fillcolor=color, opacity=0.15,
                                hoverinfo="skip", showlegend=False, legendgroup=name,
                                row=r + 1, col=c + 1)
            if bad.any():
                fig.add_scatter(x=g["layer"][bad], y=g["value"][bad], mode="markers",
                                name=EXCLUDES_NOTE, legendgroup=EXCLUDES_NOTE,
                                showlegend=EXCLUDES_NOTE not in legend_names(fig),
                                marker={"symbol": "x", "size": 9, "color": color},
                                hovertext=EXCLUDES_NOTE, row=r + 1, col=c + 1)
        _position_lines(fig, table, spec.name, names, (min(result.layers), max(result.layers)),
                        r + 1, c + 1)
        if spec.name == "key_mean_abs_cos":
            _key_baselines(fig, result, r + 1, c + 1)
    fig.update_xaxes(title_text="layer")
    fig.update_layout(template="plotly_white", height=300 * rows)
    return fig


def _excluding(g: pd.DataFrame) -> pd.Series:
    """Per row of metric rows: does its interval exclude its value (:data:`EXCLUDES_NOTE`)?"""
    return pd.Series([excludes(v, lo, hi) for v, lo, hi in zip(g["value"], g["low"], g["high"],
                                                               strict=True)], index=g.index,
                     dtype=bool)


def _key_baselines(fig: go.Figure, result: GeometryResult, row: int, col: int) -> None:
    k = result.key_orthogonality
    lo, hi = min(result.layers), max(result.layers)
    for y, name, dash in ((k.gaussian_baseline, "Gaussian √(2/(π·d_model))", "dash"),
                          (k.random_init_baseline.mean_abs_cos, "i.i.d. Gaussian W_K", "dot"),
                          (k.threshold, f"Paper III criterion {k.threshold:.2f}", "dashdot")):
        fig.add_scatter(x=[lo, hi], y=[y, y], mode="lines", name=name,
                        line={"dash": dash, "color": "gray"}, row=row, col=col)


def table1(result: GeometryResult) -> pd.DataFrame:
    """Paper III Table 1 (and |ρ|, probe R², focusing) as a display table, shares in %; each
    prompt set's row is followed by its random-initialisation twin's and position alone's.
    An interval that excludes its estimate carries :data:`EXCLUDES_NOTE` in its cell; the
    bootstrap means are Paper III's reported numbers, labelled so."""
    def ci(iv: Interval, scale: float = 100.0, fmt: str = ".1f") -> str:
        text = f"({scale * iv.low:{fmt}}, {scale * iv.high:{fmt}})"
        return f"{text} {EXCLUDES_NOTE}" if iv.excludes_estimate else text

    def row(name: str, s: SetSummary) -> dict[str, Any]:
        rho = s.rho_pc1_entropy
        return {
            "prompt set": name, "n": s.n_prompts,
            "PC1 %": 100 * s.pc1.estimate,
            "PC1 bootstrap mean % (Paper III's number)": 100 * s.pc1.bootstrap_mean,
            "PC1 95% CI": ci(s.pc1), "PC1+PC2 %": 100 * s.pc1_pc2.estimate,
            "PC1+PC2 bootstrap mean % (Paper III's number)": 100 * s.pc1_pc2.bootstrap_mean,
            "PC1+PC2 95% CI": ci(s.pc1_pc2),
            "|ρ(PC1, H)|": rho.abs, "|ρ| 95% CI": "({:.2f}, {:.2f})".format(
                *abs_interval(rho.low, rho.high)) + (f" {EXCLUDES_NOTE}"
                                                     if rho.excludes_estimate else ""),
            "probe R²": s.probe_r2_at(result.layer),
            "focusing %": None if s.attention_focusing is None
            else 100 * s.attention_focusing.estimate,
            "criteria": s.criteria_met,
        }

    rows = []
    init = result.random_init.prompt_sets if result.random_init is not None else {}
    for name, s in result.prompt_sets.items():
        rows.append(row(name, s))
        if name in init:
            rows.append(row(f"{name} @ random init", init[name]))
        pc = s.position_control("entropy")
        if pc is not None:
            rows.append({"prompt set": f"{name} @ position only ({pc.design})",
                         "n": s.n_prompts, "|ρ(PC1, H)|": pc.abs_rho, "probe R²": pc.probe_r2})
            rows.append({"prompt set": f"{name} given position (partial |ρ|; R² of the "
                         "position residual)", "n": s.n_prompts,
                         "|ρ(PC1, H)|": pc.partial_abs_rho_pc1,
                         "probe R²": pc.probe_r2_beyond_position})
    return pd.DataFrame(rows)


def measures_table(result: GeometryResult) -> pd.DataFrame:
    """Every registered measure's numbers at the Table-1 layer (per-layer metrics) or as
    measured (set- and model-level ones), with the definition each follows."""
    cat = catalogue()
    keep = [r for r in result.metrics if r.metric not in CORE
            and (r.layer is None or r.layer == result.layer
                 or (r.metric in cat and not cat[r.metric].per_layer))]  # e.g. Paper I's layer 0
    return pd.DataFrame([_measure_row(r, cat) for r in keep],
                        columns=["measure", "prompt set", "layer", "target", "reference",
                                 "value", "low", "high", "interval", "definition"])


def _measure_row(r: MetricRow, cat: dict[str, MetricSpec]) -> dict[str, Any]:
    spec = cat.get(r.metric)
    return {"measure": spec.label if spec else r.metric, "prompt set": r.prompt_set or "model",
            "layer": r.layer, "target": r.target, "reference": r.reference.replace("_", " "),
            "value": r.value, "low": r.low, "high": r.high,
            "interval": EXCLUDES_NOTE if excludes(r.value, r.low, r.high) else "",
            "definition": spec.definition if spec else ""}


def key_text(result: GeometryResult) -> str:
    k = result.key_orthogonality
    init = "" if k.init_mean_abs_cos is None else (
        f"; the random-initialisation twin (the family's own init) {k.init_mean_abs_cos:.3f}, "
        f"layers more orthogonal than the twin's: {100 * (k.fraction_layers_below_init or 0):.0f}"
        " %")
    return (f"mean |cos| over layers {k.mean_abs_cos:.3f} (Paper III: W_K columns per head)"
            f"{init}; layers below Paper III's {k.threshold:.2f}: "
            f"{100 * k.fraction_layers_below:.0f} % (a fixed threshold means a different "
            f"multiple of chance at each width); Gaussian √(2/(π·d_model)) = "
            f"{k.gaussian_baseline:.3f} (d_model = {k.d_model}), with d_k = {k.d_head}: "
            f"{k.gaussian_baseline_d_head:.3f}; i.i.d. Gaussian W_K "
            f"{k.random_init_baseline.mean_abs_cos:.3f}")


def write_report(path: Path, result: GeometryResult, prompts: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    sections: list[tuple[str, object] | tuple[str, object, str]] = [
        (f"Table 1: final-token values at layer {result.layer} ({result.model})",
         table1(result)),
        ("Bootstrap note", bootstrap_note(result)),
        ("Key orthogonality", key_text(result)),
        *(("Confound", n) for n in result.notes),
    ]
    for s in result.prompt_sets:
        sections.append((f"PCA scatter: {s}", pca_scatter(prompts[prompts["prompt_set"] == s],
                                                          s, result.layer), SCATTER_CAPTION))
    sections.append(("Per-layer curves", layer_curves(result), CURVES_CAPTION))
    extra = measures_table(result)
    if len(extra):
        sections.append((f"Further measures (layer {result.layer}, or as measured)", extra))
    if result.pool.skipped_sources:
        sections.append(("Skipped corpora", "; ".join(result.pool.skipped_sources)))
    return html_report(path, f"bayesgeom geometry: {result.model}", findings(result), sections,
                       manifest)


def _intervals(result: GeometryResult) -> list[tuple[str, Interval]]:
    """(name, interval) of every interval the headline tables and verdicts print: per prompt
    set (and its twin's) PC1, PC1+PC2, ρ(PC1, entropy), ρ(PC1, Bayes entropy) where measured,
    and focusing."""
    sets = list(result.prompt_sets.items())
    if result.random_init is not None:
        sets += [(f"{n} @ init", s) for n, s in result.random_init.prompt_sets.items()]
    out: list[tuple[str, Interval]] = []
    for n, s in sets:
        out += [(f"{n} PC1", s.pc1), (f"{n} PC1+PC2", s.pc1_pc2),
                (f"{n} ρ(PC1, H)", s.rho_pc1_entropy)]
        if s.rho_pc1_bayes_entropy is not None:
            out.append((f"{n} ρ(PC1, H_Bayes)", s.rho_pc1_bayes_entropy))
        if s.attention_focusing is not None:
            out.append((f"{n} focusing", s.attention_focusing))
    return out


def excluding_intervals(result: GeometryResult) -> list[str]:
    """Names of the headline intervals that exclude their estimates (:data:`EXCLUDES_NOTE`)."""
    return [n for n, iv in _intervals(result) if iv.excludes_estimate]


def bootstrap_note(result: GeometryResult) -> str:
    """How the run's intervals were made, and which of them exclude their estimates."""
    methods = sorted({METHOD_NAMES.get(iv.method, iv.method) for _, iv in _intervals(result)})
    bad = excluding_intervals(result)
    flag = (f" {len(bad)} interval(s) exclude their estimate and are not evidence (no "
            f"verdict rests on them): {', '.join(bad)}." if bad else
            " Every headline interval contains its estimate.")
    return ("Intervals are bias-corrected and accelerated (BCa) bootstrap intervals over "
            "prompts (PCA refitted on each resample and on each leave-one-out sample; "
            f"methods used: {', '.join(methods)}; 'percentile' where every replicate lies on "
            "one side of the estimate and no correction is defined). With fewer prompts than "
            "dimensions a resample's repeated rows concentrate the spectrum, so bootstrap "
            "shares run above the full-sample estimate; where nearly all do, a percentile "
            "interval lies above the estimate and a BCa interval below it: either excludes "
            "the estimate." + flag + " Paper III reports the bootstrap mean (labelled).")


def format_summary(result: GeometryResult) -> str:
    """The verdict table (:func:`findings`), then a few human-readable lines (the CLI prints
    these without --json)."""
    lines = [findings_text(findings(result)),
             f"{result.model}: final-token values at layer {result.layer} ({result.site}), "
             f"{result.entropy_target}",
             f"  {'set':<11}{'n':>4}  {'PC1 % [95% CI]':<22}{'PC1+PC2 % [95% CI]':<22}"
             f"{'|rho(PC1,H)|':>13}{'probe R2':>10}{'focus %':>9}  criteria"]
    init = result.random_init.prompt_sets if result.random_init is not None else {}
    for name, s in result.prompt_sets.items():
        lines.append(_set_line(name, s, result.layer))
        if name in init:
            lines.append(_set_line("  @ init", init[name], result.layer))
        for pc in s.position:
            lines.append(f"    {pc.target}: position alone |rho| {pc.abs_rho:.3f}, probe R2 "
                         f"{pc.probe_r2:.3f} ({pc.design}); given position: |rho(PC1)| "
                         f"{pc.partial_abs_rho_pc1:.3f}, probe R2 "
                         f"{pc.probe_r2_beyond_position:.3f}")
    bad = excluding_intervals(result)
    if bad:
        lines.append(f"  ! {EXCLUDES_NOTE}: {', '.join(bad)}")
    lines.append(f"  key orthogonality: {key_text(result)}")
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def _set_line(name: str, s: SetSummary, layer: int) -> str:
    foc = s.attention_focusing
    focus = "-" if foc is None else f"{100 * foc.estimate:.1f}"
    return (f"  {name:<11}{s.n_prompts:>4}  {_pct(s.pc1):<22}{_pct(s.pc1_pc2):<22}"
            f"{s.rho_pc1_entropy.abs:>13.3f}{s.probe_r2_at(layer):>10.3f}{focus:>9}  "
            f"{s.criteria_met}")


def _pct(iv: Interval) -> str:
    """'18.2 [19.2, 29.3]!' (the ! when the interval excludes its estimate)."""
    mark = "!" if iv.excludes_estimate else ""
    return f"{100 * iv.estimate:.1f} [{100 * iv.low:.1f}, {100 * iv.high:.1f}]{mark}"

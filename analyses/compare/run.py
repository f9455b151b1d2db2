"""``bayesgeom compare``: the same geometry metrics on several models, side by side.

Every model -- a wind-tunnel run directory, a Hub name, a local directory or the embedded
SmolLM2 -- goes through :func:`analyses.geometry.run.run_geometry` with the same
:class:`~analyses.geometry.run.GeometryConfig` (its own prompt sets: ``task`` for a wind tunnel,
``prompts`` for a text model) into ``out/<label>/``. The comparison reads each typed result:
the Table-1 headline, key orthogonality and criteria, plus every registered measure flagged
for comparison (:mod:`analyses.geometry.probes`); and the per-layer curves on a depth axis
normalised to [0, 1], so models of different depth line up.

Writes ``table.parquet`` (tidy: label, model, prompt_set, metric, value, low, high),
``side_by_side.csv`` (metrics × model columns), ``curves.parquet``, ``summary.json`` (the
:class:`CompareResult`), ``manifest.json`` and ``report.html``. A model whose folder already
holds a finished geometry run with the same settings and weights is not rerun.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ... import interp
from ...records import Parts, expect_config, fingerprint, read_result
from ...windtunnel.learned import LearnedCheck
from ..geometry.probes import catalogue
from ..geometry.result import GeometryResult, MetricRow, SetSummary, abs_interval
from ..geometry.run import check_config, run_geometry
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import open_model
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import DEFAULT_MODEL, CompareConfig, _label  # noqa: F401 (re-exported)
from .result import ComparedModel, CompareResult


def geometry_for(cfg: CompareConfig, label: str, model: interp.InterpModel,
                 spec: str | None) -> tuple[GeometryResult, bool]:
    """(geometry result, reused) for one model, run into ``out/label`` unless a finished run
    with the same settings and weights is there."""
    out = Path(cfg.out) / label
    g = replace(cfg.geometry, model=spec, out=out, restart=True,  # compare owns out/<label>
                prompts=None if model.task is not None else cfg.geometry.prompts)
    settings = {k: v for k, v in asdict(g).items()
                if k not in ("out", "progress", "batch_size", "score_batch_size")}
    fp = fingerprint(settings, model.weights_digest(), model.info.dtype)
    parts = Parts(out)
    if parts.get("compare", fp) is not None:
        return read_result(GeometryResult, out / "summary.json"), True
    try:
        result = run_geometry(g, model=model)
    except ExperimentError as e:
        raise ExperimentError(f"{label}: {e}") from e
    parts.mark("compare", fp, ["summary.json", "table.parquet"])
    return result, False


# ---------------------------------------------------------------- comparison rows
def headline_rows(r: GeometryResult) -> list[MetricRow]:
    """The compared headline of one geometry result: per set at the Table-1 layer (PC shares,
    participation ratio, |ρ| and probe R² per target, focusing, criteria met) and model-wide
    (key orthogonality, its baselines, depth); each beside its controls -- ``@random_init``
    (the same analysis on the random-initialisation twin), ``@position`` (position alone) and
    ``|position`` (partial |ρ| given position; probe R² of the position residual)."""
    rows: list[MetricRow] = []
    init = r.random_init.prompt_sets if r.random_init is not None else {}
    for name, s in r.prompt_sets.items():
        twin = init.get(name)
        for metric in ("pc1", "pc1_pc2"):
            for suffix, src in (("", s), ("@random_init", twin)):
                if src is not None:
                    iv = getattr(src, metric)
                    rows.append(MetricRow(name, r.layer, metric + suffix, None, iv.estimate,
                                          iv.low, iv.high))
        rows.append(MetricRow(name, r.layer, "participation_ratio", None, s.participation_ratio))
        for target in ("entropy", "bayes_entropy"):
            rows += _target_rows(r, name, s, twin, target)
        for suffix, src in (("", s), ("@random_init", twin)):
            foc = None if src is None else src.attention_focusing
            if foc is not None:
                rows.append(MetricRow(name, None, "attention_focusing" + suffix, None,
                                      foc.estimate, foc.low, foc.high))
        rows.append(MetricRow(name, None, "criteria_met", None, float(s.criteria.n_met)))
    k = r.key_orthogonality
    rows += [MetricRow(None, None, "key_orthogonality", None, k.mean_abs_cos),
             MetricRow(None, None, "key_fraction_below_0.20", None, k.fraction_layers_below)]
    if k.init_mean_abs_cos is not None:
        rows += [MetricRow(None, None, "key_orthogonality@random_init", None,
                           k.init_mean_abs_cos),
                 MetricRow(None, None, "key_fraction_below_init", None,
                           float(k.fraction_layers_below_init or 0.0))]
    rows += [MetricRow(None, None, "key_gaussian", None, k.random_init_baseline.mean_abs_cos),
             MetricRow(None, None, "n_layers", None, float(r.n_layers))]
    return rows


def _target_rows(r: GeometryResult, name: str, s: SetSummary, twin: SetSummary | None,
                 target: str) -> list[MetricRow]:
    """|ρ(PC1, target)| and the probe R² of ``target`` with their controls."""
    rho = s.rho(target)
    if rho is None:
        return []
    probe = "probe_r2" if target == "entropy" else f"probe_r2_{target}"
    rows = [MetricRow(name, r.layer, f"abs_rho_pc1_{target}", None, rho.abs,
                      *abs_interval(rho.low, rho.high)),
            MetricRow(name, r.layer, probe, None, s.probe_r2_at(r.layer, target))]
    t_rho = None if twin is None else twin.rho(target)
    if twin is not None and t_rho is not None:
        rows += [MetricRow(name, r.layer, f"abs_rho_pc1_{target}@random_init", None, t_rho.abs,
                           *abs_interval(t_rho.low, t_rho.high)),
                 MetricRow(name, r.layer, f"{probe}@random_init", None,
                           twin.probe_r2_at(r.layer, target))]
    pc = s.position_control(target)
    if pc is not None:
        rows += [MetricRow(name, None, f"abs_rho_pc1_{target}@position", None, pc.abs_rho),
                 MetricRow(name, None, f"{probe}@position", None, pc.probe_r2),
                 MetricRow(name, r.layer, f"abs_rho_pc1_{target}|position", None,
                           pc.partial_abs_rho_pc1),
                 MetricRow(name, r.layer, f"{probe}|position", None,
                           pc.probe_r2_beyond_position)]
    return rows


def measure_rows(r: GeometryResult) -> list[MetricRow]:
    """Rows of registered measures flagged for comparison, at the Table-1 layer when
    per-layer; the target, if any, is appended to the metric name (``name[target]``), and a
    control's reference after it (``name[target]@random_init``)."""
    cat = catalogue()
    out = []
    for row in r.metrics:
        spec = cat.get(row.metric)
        if spec is None or not spec.compare or (spec.per_layer and row.layer != r.layer):
            continue
        name = row.metric if row.target is None else f"{row.metric}[{row.target}]"
        if row.reference != "model":
            name += f"@{row.reference}"
        out.append(replace(row, metric=name, target=None, reference="model"))
    return out


def tidy(label: str, r: GeometryResult) -> pd.DataFrame:
    """The compared rows of one model as a table (label, model, prompt_set, metric, ...)."""
    return pd.DataFrame([{"label": label, "model": r.model, "prompt_set": x.prompt_set,
                          "metric": x.metric, "value": x.value, "low": x.low, "high": x.high}
                         for x in headline_rows(r) + measure_rows(r)])


def metric_values(r: GeometryResult) -> dict[str, float]:
    """``"<prompt set or model>.<metric>"`` -> value of every compared row."""
    return {f"{x.prompt_set or 'model'}.{x.metric}": x.value
            for x in headline_rows(r) + measure_rows(r)}


def curves(label: str, r: GeometryResult) -> pd.DataFrame:
    """Per-layer curves of one geometry result on a normalised depth axis (layer / (L − 1))."""
    from ..geometry.report import curve_metrics

    t = pd.DataFrame([x.__dict__ for x in r.metrics])
    t = t[t["layer"].notna()]
    names = [s.name for s in curve_metrics(t)]
    t = t[t["metric"].isin(names)].copy()
    t["layer"] = t["layer"].astype(int)
    t.insert(0, "label", label)
    t["depth"] = t["layer"] / max(r.n_layers - 1, 1)
    return t.reset_index(drop=True)


# ---------------------------------------------------------------- the run
def run_compare(cfg: CompareConfig, models: list[interp.InterpModel | None] | None = None,
                ) -> CompareResult:
    """Run (or reuse) every model's geometry, then write the comparison (module doc).
    ``models``: already-loaded models in the order of ``cfg.models`` (None entries load)."""
    t0 = time.perf_counter()
    expect_config(cfg, CompareConfig, "run_compare")
    cfg.check()
    check_config(cfg.geometry)
    labels = cfg.resolved_labels()
    if models is not None and len(models) != len(cfg.models):
        raise ExperimentError(f"{len(models)} loaded models for {len(cfg.models)} model names")
    with claim(cfg) as rd:
        result = _compare(cfg, labels, models, rd.out, t0)
        rd.finish()
    return result


def _compare(cfg: CompareConfig, labels: list[str],
             models: list[interp.InterpModel | None] | None, out: Path, t0: float,
             ) -> CompareResult:
    results: dict[str, GeometryResult] = {}
    reused: list[str] = []
    infos: dict[str, Any] = {}
    learned: dict[str, LearnedCheck] = {}
    for i, (label, spec) in enumerate(zip(labels, cfg.models, strict=True)):
        spec = None if spec == DEFAULT_MODEL else spec
        m = models[i] if models is not None and models[i] is not None else \
            open_model(spec, dtype=cfg.geometry.dtype,
                       allow_pickle=cfg.geometry.allow_pickle)
        results[label], hit = geometry_for(cfg, label, m, spec)
        infos[label] = m.info.to_dict()
        check = results[label].learned or learned_of(m, progress=cfg.progress)
        if check is not None:
            learned[label] = check
        if hit:
            reused.append(label)
    table = pd.concat([tidy(lab, r) for lab, r in results.items()], ignore_index=True)
    curve_table = pd.concat([curves(lab, r) for lab, r in results.items()], ignore_index=True)
    result = CompareResult(
        labels=labels,
        models={lab: ComparedModel(r.model, list(r.prompt_sets), r.n_layers, r.layer,
                                   str(out / lab)) for lab, r in results.items()},
        metrics={lab: metric_values(r) for lab, r in results.items()},
        reused=reused, wall_s=round(time.perf_counter() - t0, 2), results=results,
        learned=learned)
    from .report import side_by_side, write_report

    write_run(cfg, result, seed=cfg.geometry.seed, dtype=cfg.geometry.dtype, models=infos,
              tables={"table.parquet": table, "curves.parquet": curve_table,
                      "side_by_side.csv": side_by_side(table)},
              report=lambda path, manifest: write_report(path, result, table, curve_table,
                                                         manifest))
    return result

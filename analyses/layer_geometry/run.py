"""``bayesgeom layer-geometry``: the per-layer geometry of a wind-tunnel model's residual stream
against the exact posterior (spec §1.9 "Mamba and LSTM geometry"; Paper I v3's Mamba "5
clusters" on HMM), for any architecture -- transformer, LSTM, Mamba, MLP -- since it reads only
``resid_post.L`` (a block's output; the LSTM's layer output; Mamba's block output), so the
same numbers compare across architectures.

``n_sequences`` held-out sequences of the run's own task (the stream of its first evaluation
batch at ``seed``, never trained on) are read through :func:`interp.capture` at every
prediction position: rows [N = n_sequences × Q, d_model] per layer, with the exact posterior
entropy H_Bayes (bits) and the argmax of the exact posterior (the paper colours by it, not by
the true state) at each row. Per layer (:func:`layer_metrics`):

* centred PCA: PC1 and PC2 variance ratios, the dimension holding 90 % of the variance;
* max over i ≤ 5 of |corr(PC_i, H_Bayes)| (Pearson) and which i;
* linear R² of H_Bayes from the full representation (``LinearRegression``, 80/20 split:
  :func:`probes.value_manifold_summary`);
* silhouette of the argmax-posterior labels on the top-10-PC projection
  (:func:`probes.cluster_separation.label_silhouette`).

Conditions (the table's ``condition``): ``trained``; ``random_init`` -- the same analysis on
the random-initialisation twin (:func:`interp.random_init_twin`, seeded by the run's training
seed), read against the same posteriors; ``position_only`` -- the same analysis with the
one-hot prediction index as the representation (layer-independent, repeated per layer): what
position alone gives; ``shuffled_target`` -- the trained representation with H_Bayes and the
argmax labels permuted (R² and silhouette only): chance level.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import interp
from ...probes import fit_pca, position_design, value_manifold_summary
from ...probes.cluster_separation import label_silhouette
from ...records.options import expect_config
from ...windtunnel import TokenTask
from ...windtunnel.runs import find_run
from ...windtunnel.seeds import Purpose, stream
from ..kit.errors import ExperimentError
from ..kit.model_facts import check_with
from ..kit.models import open_model
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import LayerGeometryConfig
from .result import METRICS, ConditionGeometry, LayerGeometryResult, LayerMetrics

SCATTER_POINTS = 2000


@dataclass(frozen=True, eq=False)
class Rows:
    """The analysed rows: ``h`` [N] H_Bayes (bits), ``labels`` [N] argmax of the exact
    posterior, ``query`` [N] prediction index, ``tokens`` the [n, T] id batch read."""

    tokens: torch.Tensor
    positions: tuple[int, ...]
    h: np.ndarray
    labels: np.ndarray
    query: np.ndarray


# ---------------------------------------------------------------- numbers
def layer_metrics(layer: int, x: np.ndarray, h: np.ndarray, labels: np.ndarray,
                  cfg: LayerGeometryConfig) -> LayerMetrics:
    """The module doc's numbers for representation ``x`` [N, d] against ``h`` [N] (bits) and
    ``labels`` [N]; the shuffles are seeded by (``cfg.seed``, ``layer``)."""
    s = value_manifold_summary(x, h, seed=cfg.seed)
    corr = np.abs(np.asarray(s.corr_pc_entropy, dtype=np.float64))
    best = int(np.nanargmax(corr)) if np.isfinite(corr).any() else -1
    rng = np.random.default_rng([cfg.seed, layer + 1])
    shuffled_h = value_manifold_summary(x, rng.permutation(h), seed=cfg.seed).linear_r2

    def sil(lab: np.ndarray) -> float:
        return label_silhouette(x, lab, cfg.silhouette_pcs, cfg.silhouette_samples, cfg.seed)

    return LayerMetrics(layer=layer, pc1_ratio=s.pc1, pc2_ratio=s.pc2, dim90=s.dim90,
                        max_abs_corr_pc_h=float(corr[best]) if best >= 0 else float("nan"),
                        max_corr_pc=best + 1, linear_r2_h=s.linear_r2,
                        silhouette_argmax=sil(labels), linear_r2_h_shuffled=shuffled_h,
                        silhouette_argmax_shuffled=sil(rng.permutation(labels)))


def draw_rows(task: TokenTask, cfg: LayerGeometryConfig) -> Rows:
    """``cfg.n_sequences`` held-out sequences of ``task`` and their rows (:class:`Rows`),
    prompt-major then prediction order (the order :func:`interp.capture` returns)."""
    b = task.sample(cfg.n_sequences, stream(cfg.seed, Purpose.EVAL, 0))
    q = b.query_pos.numel()
    return Rows(tokens=b.input_ids, positions=tuple(int(p) for p in b.query_pos),
                h=b.entropy_bits.double().numpy().reshape(-1),
                labels=b.dense_posterior().argmax(-1).numpy().reshape(-1),
                query=np.tile(np.arange(q), b.n))


def capture_layers(m: interp.InterpModel, rows: Rows, cfg: LayerGeometryConfig,
                   ) -> tuple[list[np.ndarray], np.ndarray]:
    """``resid_post.L`` rows [N, d_model] for every layer L, and the model's next-token entropy
    over the hypothesis slice [N] (bits), read at ``rows.positions``."""
    sites = [interp.site_name("resid_post", L) for L in range(m.n_layers)]
    st = interp.capture(m, rows.tokens, sites, positions=rows.positions,
                        batch_size=cfg.batch_size, progress=cfg.progress, seed=cfg.seed)
    want = np.repeat(np.arange(len(rows.tokens)), len(rows.positions))
    if not np.array_equal(st.prompt_index.numpy(), want):
        raise AssertionError("capture returned rows out of prompt-major order")
    return [st[s].double().numpy() for s in sites], st.entropy_bits.double().numpy()


def scatter_frame(xs: dict[str, np.ndarray], rows: Rows, seed: int) -> pd.DataFrame:
    """2-D centred PCA of each condition's last-layer rows ``xs[c]`` [N, d] on a seeded subset
    of at most :data:`SCATTER_POINTS` rows: condition, pc1, pc2, argmax_state, h_bayes_bits,
    query."""
    n = rows.h.size
    keep = np.sort(np.random.default_rng(seed).choice(n, size=min(n, SCATTER_POINTS),
                                                      replace=False))
    out = []
    for c, x in xs.items():
        z = fit_pca(x, n_components=2).transform(x[keep], n_components=2)
        out.append(pd.DataFrame({"condition": c, "pc1": z[:, 0],
                                 "pc2": z[:, 1] if z.shape[1] > 1 else 0.0,
                                 "argmax_state": rows.labels[keep],
                                 "h_bayes_bits": rows.h[keep], "query": rows.query[keep]}))
    return pd.concat(out, ignore_index=True)


def tidy_table(res: LayerGeometryResult) -> pd.DataFrame:
    """One row per condition × layer × metric (``value``); ``position_only`` repeated at every
    layer, ``shuffled_target`` from the trained rows' shuffled controls."""
    recs = []
    layers = res.conditions["trained"].layers
    for c in ("trained", "random_init", "position_only"):
        per = res.conditions[c].layers
        for i, lm in enumerate(layers):
            src = per[0] if c == "position_only" else per[i]
            recs += [{"condition": c, "layer": lm.layer, "metric": k,
                      "value": float(getattr(src, k))} for k in METRICS]
    for lm in layers:
        recs += [{"condition": "shuffled_target", "layer": lm.layer, "metric": k,
                  "value": float(getattr(lm, f"{k}_shuffled"))}
                 for k in ("linear_r2_h", "silhouette_argmax")]
    df = pd.DataFrame(recs)
    return df.assign(model=res.model, arch=res.arch, task=res.task)


# ---------------------------------------------------------------- the run
def _run_record(path: Path) -> tuple[str | None, int | None, int | None]:
    """(arch, training seed, steps done) from the record of the wind-tunnel run holding
    ``path`` (the run, its ``model/`` or one of its checkpoints) where there is one."""
    rec = find_run(path)
    return (None, None, None) if rec is None else (rec.arch, rec.seed, rec.steps_done)


def run_layer_geometry(cfg: LayerGeometryConfig,
                       model: interp.InterpModel | None = None) -> LayerGeometryResult:
    """Run the analysis (module doc); write table.parquet, scatter.parquet, summary.json,
    manifest.json and report.html under ``cfg.out``; return the result."""
    expect_config(cfg, LayerGeometryConfig, "run_layer_geometry")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model)
    if getattr(getattr(m, "task", None), "hyp_slice", None) is None:
        raise ExperimentError(f"{cfg.model} is not a wind-tunnel model with its task; this "
                                 "analysis needs the exact posterior of a wind tunnel")
    arch, run_seed, steps = _run_record(Path(str(cfg.model)))
    twin_seed = int(run_seed) if isinstance(run_seed, int) else cfg.seed
    with claim(cfg, m) as rd:
        result = _analyse(cfg, m, arch or m.info.family, steps, twin_seed, t0)
        rd.finish()
    return result


def _analyse(cfg: LayerGeometryConfig, m: interp.InterpModel, arch: str, steps: int | None,
             twin_seed: int, t0: float) -> LayerGeometryResult:
    rows = draw_rows(m.task, cfg)
    twin = interp.random_init_twin(m, seed=twin_seed)
    reps: dict[str, list[np.ndarray]] = {}
    mae: dict[str, float] = {}
    for c, model in (("trained", m), ("random_init", twin)):
        reps[c], ent = capture_layers(model, rows, cfg)
        mae[c] = float(np.abs(ent - rows.h).mean())
    reps["position_only"] = [position_design(rows.query)[0]]
    conds = {}
    bar = tqdm(total=2 * m.n_layers + 1, desc="layer geometry", disable=not cfg.progress)
    for c, xs in reps.items():
        per = []
        for L, x in enumerate(xs):
            per.append(layer_metrics(L if c != "position_only" else -1, x, rows.h, rows.labels,
                                     cfg))
            bar.update()
        conds[c] = ConditionGeometry(
            source={"trained": m.info.name, "random_init": twin.info.name}.get(
                c, "one-hot prediction index"), layers=per, entropy_mae_bits=mae.get(c))
    bar.close()
    res = LayerGeometryResult(
        model=m.info.name, task=m.task.name, arch=arch, steps=steps,
        params=sum(p.numel() for p in m.hf.parameters()), n_layers=m.n_layers,
        d_model=m.d_model, n_sequences=cfg.n_sequences, n_positions=len(rows.positions),
        n_rows=int(rows.h.size), n_states=int(m.task.n_hypotheses), seed=cfg.seed,
        twin_seed=twin_seed, silhouette_pcs=cfg.silhouette_pcs,
        silhouette_samples=cfg.silhouette_samples, conditions=conds,
        wall_s=round(time.perf_counter() - t0, 2))
    _write(cfg, m, res, scatter_frame({c: reps[c][-1] for c in ("trained", "random_init")},
                                      rows, cfg.seed))
    return res


def _write(cfg: LayerGeometryConfig, m: interp.InterpModel, res: LayerGeometryResult,
           scatter: pd.DataFrame) -> None:
    from .report import write_report

    table = tidy_table(res)
    write_run(cfg, res, model=m,
              tables={"table.parquet": table, "scatter.parquet": scatter},
              report=lambda path, manifest: write_report(path, res, table, scatter, manifest))

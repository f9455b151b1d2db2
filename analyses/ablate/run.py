"""Paper I's ablation protocols (spec §1.9) on a wind-tunnel model, as interventions through
:mod:`interp.ablations` -- the model's code and weights are never edited.

Every condition is evaluated against the exact posterior with
:func:`windtunnel.evaluate.evaluate` on the same held-out sequences as the clean model, and is
reported as its entropy MAE (bits) and ΔMAE = MAE(ablated) − MAE(clean):

Conditions a model has no site for are left out (a recurrent model: no heads and no
zero-attention rows; an LSTM: no zero-FFN either -- its blocks have no sublayer).

* ``heads``: each head of layer 0 zeroed alone (``attn.0.z``); the *frame head* is the argmax of
  ΔMAE (the paper's "hypothesis-frame head"), with its ratio to the second-strongest head.
* ``layers``: per layer L, ``bypass`` (block output := block input), ``zero_attn``
  (``attn_out.L`` := 0) and ``zero_ffn`` (``mlp_out.L`` := 0).
* ``cumulative``: layers 0..L bypassed, for each L (the last row is the embedding-only model).

    from bayesgeom.analyses.ablate.run import run_ablations
    res = run_ablations("runs/bijection")      # a run directory, or an interp.InterpModel
    print(res.table())

The experiment ``bayesgeom ablate RUN_DIR`` (:class:`AblateConfig`, :func:`run_ablate`)
runs the same conditions -- the heads of every layer with ``--all-layer-heads``, each task
size in ``--K`` -- and puts every number beside two controls: the clean model's MAE, and a
**mean-ablation** of the same head or sublayer (its output replaced by its per-position mean
over the first held-out batch, :mod:`analyses.ablate.controls`). Zeroing removes both the
information a component carries and its average offset; mean-ablation removes only the
information, so ΔMAE(zero) ≫ ΔMAE(mean) says the damage is an off-distribution shift, not lost
computation. For the heads, the ΔMAE spread over all heads is the further comparison.
``--retrain-without-top-attention N`` adds the retrained variant
(:mod:`analyses.ablate.retrain`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ... import interp
from ...interp.ablations import Ablation, BypassLayer, ZeroHead, ZeroSublayer, ablate
from ...records.options import expect_config
from ...windtunnel.evaluate import evaluate
from ...windtunnel.task import TokenTask
from ..kit.errors import ExperimentError
from ..kit.model_facts import check_with
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import CONDITIONS, AblateConfig  # noqa: F401 (re-exported)
from .controls import eval_task, has_site, mean_replaced, measure, site_means
from .result import AblateResult, AblationResult

__all__ = [
    "AblateConfig",
    "AblationResult",
    "evaluate_ablated",
    "run_ablate",
    "run_ablations",
]


def evaluate_ablated(model: interp.InterpModel, task: TokenTask, *ablations: Ablation,
                     n: int = 2000, seed: int = 0) -> float:
    """Entropy MAE (bits) of ``model`` with ``ablations`` active (none: the clean model)."""
    if not ablations:
        return evaluate(model.hf, task, n=n, seed=seed, logit_lens=False).entropy_mae_bits
    with ablate(model, *ablations):
        return evaluate(model.hf, task, n=n, seed=seed, logit_lens=False).entropy_mae_bits


_has_site = has_site


def run_ablations(spec: str | Path | interp.InterpModel, task: TokenTask | None = None, *,
                  n: int = 2000, seed: int = 0, heads: bool = True, layers: bool = True,
                  cumulative: bool = True) -> AblationResult:
    """Run the protocol on a wind-tunnel run directory (or a loaded model with its task)."""
    from ..kit.models import open_model

    model = open_model(spec)
    task = task or getattr(model, "task", None)
    if task is None:
        raise interp.InterpError(f"{model.info.name}: no task attached; pass task=")
    clean = evaluate_ablated(model, task, n=n, seed=seed)
    res = AblationResult(str(getattr(model.info, "name", spec)), n, seed, clean)
    n_layers = model.n_layers
    attn = _has_site(model, "attn_out.0")
    if heads and attn and _has_site(model, "attn.0.z"):
        n_heads = model.geometry.n_heads
        for h in range(n_heads):
            mae = evaluate_ablated(model, task, ZeroHead("attn.0.z", h), n=n, seed=seed)
            res.heads.append({"head": h, "mae_bits": mae, "delta_mae_bits": mae - clean})
        deltas = sorted(((r["delta_mae_bits"], r["head"]) for r in res.heads), reverse=True)
        res.frame_head = deltas[0][1]
        if len(deltas) > 1 and deltas[1][0] > 0:
            res.frame_ratio = deltas[0][0] / deltas[1][0]
    if layers:
        mlp = _has_site(model, "mlp_out.0")
        for L in range(n_layers):
            row: dict[str, Any] = {"layer": L}
            row["bypass"] = evaluate_ablated(model, task, BypassLayer(L), n=n, seed=seed)
            row["zero_attn"] = (evaluate_ablated(model, task, ZeroSublayer(f"attn_out.{L}"),
                                                 n=n, seed=seed) if attn else None)
            row["zero_ffn"] = (evaluate_ablated(model, task, ZeroSublayer(f"mlp_out.{L}"),
                                                n=n, seed=seed) if mlp else None)
            res.layers.append(row)
    if cumulative:
        for L in range(n_layers):
            mae = evaluate_ablated(model, task, BypassLayer(list(range(L + 1))), n=n, seed=seed)
            res.cumulative.append({"through": L, "mae_bits": mae, "delta_mae_bits": mae - clean})
    return res


def head_label(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def _evaluate_one(m: interp.InterpModel, task: TokenTask, cfg: AblateConfig,
                  label: str) -> list[dict[str, Any]]:
    """Tidy rows (one per condition) of one task size; ``label`` names it ("K=20")."""
    n, seed = cfg.n, cfg.seed
    clean = measure(m, task, (), n, seed)
    rows: list[dict[str, Any]] = []

    def add(family: str, condition: str, rep: Any, layer: int | None = None,
            head: int | None = None, through: int | None = None) -> None:
        c = clean.entropy_mae_bits
        rows.append({"eval": label, "family": family, "condition": condition, "layer": layer,
                     "head": head, "through": through, "mae_bits": rep.entropy_mae_bits,
                     "accuracy": rep.accuracy, "clean_mae_bits": c,
                     "delta_mae_bits": rep.entropy_mae_bits - c,
                     "ratio": rep.entropy_mae_bits / c if c > 0 else float("inf")})

    add("clean", "clean", clean)
    attn, mlp = _has_site(m, "attn_out.0"), _has_site(m, "mlp_out.0")
    mean = cfg.control == "mean"
    sites = [f"attn.{L}.z" for L in range(m.n_layers)] if attn else []
    sites += [f"{k}.{L}" for L in range(m.n_layers) for k, ok in
              (("attn_out", attn), ("mlp_out", mlp)) if ok]
    means = site_means(m, task, sites, seed) if mean and sites else {}
    if "heads" in cfg.conditions and attn and _has_site(m, "attn.0.z"):
        layers = range(m.n_layers) if cfg.all_layer_heads else range(1)
        for L in layers:
            for h in range(m.geometry.n_heads):
                add("head", "zero", measure(m, task, (ZeroHead(f"attn.{L}.z", h),), n, seed),
                    L, h)
                if mean:
                    with mean_replaced(m, f"attn.{L}.z", means[f"attn.{L}.z"], h):
                        add("head", "mean", measure(m, task, (), n, seed), L, h)
    if "layers" in cfg.conditions:
        for L in range(m.n_layers):
            add("layer", "bypass", measure(m, task, (BypassLayer(L),), n, seed), L)
            for kind, name, ok in (("attn_out", "attn", attn), ("mlp_out", "ffn", mlp)):
                if not ok:
                    continue
                site = f"{kind}.{L}"
                add("layer", f"zero_{name}", measure(m, task, (ZeroSublayer(site),), n, seed), L)
                if mean:
                    with mean_replaced(m, site, means[site]):
                        add("layer", f"mean_{name}", measure(m, task, (), n, seed), L)
    if "cumulative" in cfg.conditions:
        for L in range(m.n_layers):
            rep = measure(m, task, (BypassLayer(list(range(L + 1))),), n, seed)
            add("cumulative", "bypass", rep, through=L)
    return rows


def run_ablate(cfg: AblateConfig, model: interp.InterpModel | None = None) -> AblateResult:
    """Run every condition at every K (and the retrain when asked); write table.parquet (one
    row per condition and K), summary.json, manifest.json and report.html under ``cfg.out``."""
    import pandas as pd

    from ..kit.models import open_model
    from .report import summarise, write_report
    from .retrain import check_retrain, run_retrain

    expect_config(cfg, AblateConfig, "run_ablate")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.run_dir)
    task = getattr(m, "task", None)
    if task is None:
        raise ExperimentError(f"{m.info.name} is not a wind tunnel (no task with an exact "
                            "posterior); give a run directory written by bayesgeom windtunnel")
    evals = [(f"K={k}", eval_task(task, k)) for k in cfg.ks] or [("trained", task)]
    retrain_tasks = [(k, eval_task(task, k)) for k in cfg.retrain_ks or cfg.ks] or [(None, task)]
    if cfg.retrain_top_attention:
        check_retrain(cfg, m)  # before anything is written
    with claim(cfg, m) as rd:
        rows = [] if cfg.conditions in ((), ("none",)) else \
            [r for label, t in evals for r in _evaluate_one(m, t, cfg, label)]
        table = pd.DataFrame(rows).astype({"layer": "Int64", "head": "Int64", "through": "Int64"}) \
            if rows else pd.DataFrame()
        retrain = run_retrain(cfg, m, retrain_tasks) if cfg.retrain_top_attention else None
        result = summarise(cfg, m, task, table, retrain, time.perf_counter() - t0)
        write_run(cfg, result, model=m, tables={"table.parquet": table},
                  report=lambda path, manifest: write_report(path, result, table, manifest))
        rd.finish()
    return result

"""``bayesgeom dynamics verify``: Paper II's gradient identities (spec §2.2) in every attention
head of a model -- a wind tunnel or any supported Hugging Face causal LM, GQA included --
predicted from the forward tensors and compared with autograd.

One batch (an LLM: ``--prompts``, by default :data:`DEFAULT_PROMPTS`; a wind tunnel:
``--n-sequences`` held-out sequences of its task) and one loss (``--loss``: ``task`` -- the wind
tunnel's own loss on the logits it was trained on, soft targets for HMM -- or ``next-token``
cross-entropy; ``auto`` picks ``task`` for a wind tunnel) go through
:func:`interp.attention_taps.attention_gradients`, which reads α, q, k, v, z and their autograd
gradients (∂L/∂s through a zero probe on the kernel's mask) from the family's own eager
attention. :mod:`probes.routing_law` predicts each gradient; the error of a prediction is
max |pred − autograd| / max |autograd| per head (query heads, or kv heads for v and k) and
layer (:func:`probes.routing_law.relative_error`). The value step (identity 5) is re-run
through the site ``attn.L.v`` at step sizes η = ε·L/‖g‖² (a first-order loss change of ε·L) for
each ε of ``--epsilons``; |1 − ratio| should shrink with ε.

Identity 6 (``feedback``: Δb_ij = −η u_iᵀ Σ_i' α_i'j u_i') is u_iᵀ times identity 3's value
gradient at fixed u, so it follows from identity 3 and is no independent check: it is reported
as a corollary of identity 3 (``corollary_of``) and not counted among the independent passes
(``all_passed``, ``independent_passed``).

Controls (rows ``control: True``): the same checks with a deliberately wrong law -- the routing
law without its baseline (∂L/∂s ≈ α ⊙ b) and the value gradient without the responsibilities
(Σ_i u_i for every j) -- show the size of error a false identity gives on these tensors.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from .... import interp
from ....interp.attention_taps import (
    AttentionGradients,
    HeadTensors,
    attention_gradients,
    loss_after_value_step,
    next_token_loss,
)
from ....probes import routing_law as rl
from ....records.options import expect_config
from ....records.progress import tqdm
from ....windtunnel.seeds import Purpose, stream
from ....windtunnel.training import task_loss
from ...kit.errors import ExperimentError
from ...kit.model_facts import check_with
from ...kit.models import open_model
from ...kit.out_dirs import claim
from ...kit.writer import write_run
from .config import DynamicsVerifyConfig
from .result import CONTROLS, COROLLARIES, IDENTITIES, DynamicsVerifyResult, IdentityCheck

DEFAULT_PROMPTS = (
    "The capital of France is Paris, and the capital of Italy is",
    "A posterior is a prior updated by the evidence, so",
    "def add(a, b):\n    return a +",
    "After the rain stopped, the children ran outside to",
)
FEEDBACK_ETA = 0.1


def _np(x: torch.Tensor) -> np.ndarray:
    return x.numpy().astype(np.float64)


def head_errors(t: HeadTensors, geo: interp.AttentionGeometry) -> dict[str, np.ndarray]:
    """Identity (and control) -> error per head [H] or [Hkv] for one layer's taps."""
    kvq, nkv = geo.kv_head_of_query, geo.n_kv_heads
    A, U, V, gs = _np(t.pattern), _np(t.z_grad), _np(t.v), _np(t.score_grad)
    b = rl.compatibilities(U, V, kvq)
    allowed = np.broadcast_to(t.allowed.numpy(), A.shape)
    masked = np.broadcast_to(allowed.any(-1, keepdims=True), A.shape) & ~allowed
    off = np.where(masked, np.maximum(np.abs(A), np.abs(gs)), 0.0)
    measured_db = rl.compatibilities(U, -FEEDBACK_ETA * _np(t.v_grad), kvq)
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = np.abs(gs.sum(-1)).max(axis=(0, 2)) / np.abs(gs).max(axis=(0, 2, 3))
    return {
        "attention_weight_grad": rl.relative_error(b, _np(t.pattern_grad)),
        "routing_law": rl.relative_error(rl.score_gradient(A, b), gs),
        "score_rows_sum_zero": np.nan_to_num(rows, nan=0.0),
        "value_grad": rl.relative_error(rl.value_gradient(A, U, kvq, nkv), _np(t.v_grad)),
        "query_grad": rl.relative_error(rl.query_gradient(gs, _np(t.k), t.scaling, kvq),
                                        _np(t.q_grad)),
        "key_grad": rl.relative_error(rl.key_gradient(gs, _np(t.q), t.scaling, kvq, nkv),
                                      _np(t.k_grad)),
        "feedback": rl.relative_error(rl.feedback_change(A, U, FEEDBACK_ETA, kvq, nkv),
                                      measured_db),
        "masked_entries": off.max(axis=(0, 2, 3)),
        "routing_law_without_baseline": rl.relative_error(A * b, gs),
        "value_grad_without_responsibilities": rl.relative_error(
            rl.value_gradient(np.ones_like(A), U, kvq, nkv), _np(t.v_grad)),
    }


def _batch_and_loss(m: interp.InterpModel, cfg: DynamicsVerifyConfig):
    """(loss function, loss kind, number of prompts, real tokens)."""
    task = getattr(m, "task", None)
    kind = cfg.loss if cfg.loss != "auto" else ("task" if task is not None else "next-token")
    if task is not None:
        if cfg.prompts:
            raise ExperimentError("a wind tunnel is checked on its own task sequences; drop "
                              "--prompts (use --n-sequences)")
        tb = task.sample(cfg.n_sequences, stream(cfg.seed, Purpose.EVAL, 0))
        n_tok = int(tb.input_ids.numel())
        if kind == "task":
            return (lambda: task_loss(m.hf, task, tb)), kind, tb.n, n_tok
        batch = m.batch(tb.input_ids.tolist())
        return (lambda: next_token_loss(m, batch)), kind, tb.n, n_tok
    if kind == "task":
        raise ExperimentError(f"{m.info.name} has no wind-tunnel task: use --loss next-token")
    tokens, _ = m.encode(list(cfg.prompts or DEFAULT_PROMPTS))
    if m.n_ctx is not None and max(map(len, tokens)) > m.n_ctx:
        raise ExperimentError(f"a prompt has {max(map(len, tokens))} tokens; the model reads at "
                          f"most {m.n_ctx}")
    batch = m.batch(tokens)
    return (lambda: next_token_loss(m, batch)), kind, len(tokens), sum(map(len, tokens))


def value_step_gaps(m: interp.InterpModel, g: AttentionGradients, loss_fn,
                    epsilons: tuple[float, ...], progress: bool) -> pd.DataFrame:
    """Identity 5 per layer and ε: layer, epsilon, eta, ratio, gap = |1 − ratio|."""
    rows = []
    bar = tqdm(total=len(g.layers) * len(epsilons), desc="value steps", disable=not progress)
    for L, t in g.layers.items():
        gv = t.v_grad
        sq = float((gv.double() ** 2).sum())
        for eps in epsilons:
            eta = eps * abs(g.loss) / sq if sq > 0 else 0.0
            after = loss_after_value_step(m, loss_fn, L, -eta * gv) if sq > 0 else g.loss
            r = rl.first_order_ratio(g.loss, after, eta, sq) if sq > 0 else float("nan")
            rows.append({"layer": L, "epsilon": eps, "eta": eta, "ratio": r,
                         "gap": abs(1 - r)})
            bar.update()
    bar.close()
    return pd.DataFrame(rows)


def run_dynamics_verify(cfg: DynamicsVerifyConfig, model: interp.InterpModel | None = None,
                        ) -> DynamicsVerifyResult:
    """Run the check (module doc); write table.parquet, value_step.parquet, summary.json,
    manifest.json and report.html under ``cfg.out``."""
    expect_config(cfg, DynamicsVerifyConfig, "run_dynamics_verify")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model, dtype=cfg.dtype)
    if m.info.dtype != cfg.dtype:
        raise ExperimentError(f"the model is {m.info.dtype}; the check was asked for {cfg.dtype}")
    loss_fn, kind, n_prompts, n_tok = _batch_and_loss(m, cfg)
    with claim(cfg, m) as rd:
        g = attention_gradients(m, layers=cfg.layers, loss_fn=loss_fn)
        recs = []
        for L, t in g.layers.items():
            for name, errs in head_errors(t, g.geometry).items():
                recs += [{"layer": L, "head": h, "identity": name, "error": float(e),
                          "control": name in CONTROLS} for h, e in enumerate(errs)]
        table = pd.DataFrame(recs)
        steps = value_step_gaps(m, g, loss_fn, cfg.epsilons, cfg.progress)
        res = _summarise(cfg, m, g, table, steps, kind, n_prompts, n_tok, t0)
        _write(cfg, m, res, table, steps)
        rd.finish()
    return res


def _summarise(cfg: DynamicsVerifyConfig, m: interp.InterpModel, g: AttentionGradients,
               table: pd.DataFrame, steps: pd.DataFrame, kind: str, n_prompts: int,
               n_tok: int, t0: float) -> DynamicsVerifyResult:
    checks = []
    for name, (formula, per, item) in {**IDENTITIES, **CONTROLS}.items():
        sub = table[table["identity"] == name]
        worst = sub.loc[sub["error"].idxmax()]
        control = name in CONTROLS
        checks.append(IdentityCheck(
            identity=name, formula=formula, per=per, spec_item=item, control=control,
            max_error=float(worst["error"]), worst_layer=int(worst["layer"]),
            worst_head=int(worst["head"]),
            passed=None if control else bool(worst["error"] <= cfg.bound),
            corollary_of=COROLLARIES.get(name)))
    independent = [c for c in checks if not c.control and c.corollary_of is None]
    vs = {f"{e:g}": float(steps.loc[steps["epsilon"] == e, "gap"].max())
          for e in cfg.epsilons}
    return DynamicsVerifyResult(
        model=m.info.name, family=m.info.family, dtype=cfg.dtype, loss_kind=kind,
        loss=g.loss, n_prompts=n_prompts, n_tokens=n_tok, layers=sorted(g.layers),
        n_heads=g.geometry.n_heads, n_kv_heads=g.geometry.n_kv_heads, tolerance=cfg.bound,
        checks=checks, value_step=vs,
        all_passed=all(c.passed for c in independent),
        independent_passed=sum(bool(c.passed) for c in independent),
        independent_checked=len(independent),
        wall_s=round(time.perf_counter() - t0, 2))


def _write(cfg: DynamicsVerifyConfig, m: interp.InterpModel, res: DynamicsVerifyResult,
           table: pd.DataFrame, steps: pd.DataFrame) -> None:
    from .report import write_report

    write_run(cfg, res, model=m, dtype=cfg.dtype,
              tables={"table.parquet": table.assign(model=res.model),
                      "value_step.parquet": steps.assign(model=res.model)},
              report=lambda path, manifest: write_report(path, res, table, steps, manifest))

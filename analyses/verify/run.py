"""``bayesgeom verify``: is a model Bayesian-consistent on a task with an exact posterior? Do
its attention heads weigh the hypotheses as the posterior does (the headline), and how well
calibrated is its output (beside it, under its own name)?

Prompts: a wind tunnel's own task (``--n-prompts`` cut at prediction positions, grouped by the
prediction index q) or, for a text model, SULA's main condition (``--n-per-k`` per k, grouped
by k) -- each with the exact posterior over its K hypothesis tokens
(:func:`analyses.prompts.sula.model_posterior_prompts`). At each prompt's final position
(:func:`interp.capture`, positions ``last``):

* **attention–posterior consistency** (headline; :mod:`probes.posterior_consistency` defines
  it): per head, the attention mass on the occurrences of each hypothesis token the prompt
  shows, renormalised over those hypotheses, against the exact posterior renormalised over the
  same hypotheses; per head 1 − mean TV over the prompts where it is defined (≥ 2 hypotheses
  shown, some posterior on them); the headline is the best head's, with the best head per
  layer and the quantiles over heads (the distribution of deviations), and the quantiles of
  each head's per-prompt TV. NaN with the reason where no prompt is defined (bijection: every
  shown value has posterior 0). Controls: the random-init twin's best head (the same
  selection over as many heads) and attention spread evenly over the prompt.
* **output calibration** (beside it): next-token probabilities renormalised over the K
  hypothesis tokens (only the logits a task model was trained on), against the posterior:
  TV, KL(p_Bayes ‖ p_model) in bits, and 1 − mean TV; per group, the mean and quantiles of TV.
* **posterior tracking** (per head): the Pearson correlation of its attention per occurrence
  with the posterior over the (prompt, hypothesis) pairs whose token the prompt shows
  (undefined on bijection too). Its p-value comes from ``--n-null`` permutations of the
  posterior rows within groups, Holm-adjusted over all heads; a head **carries the
  posterior** when p_Holm < ``--alpha`` and |r| ≥ ``--min-r``.

Controls beside every number: the random-init twin (seeded by a wind-tunnel run's training
seed unless ``--twin-seed`` is given, so it is the run's step 0), and for the output the
*group-mean* baseline -- predicting for every prompt the mean posterior of its group (what
position or k alone tells).
"""

from __future__ import annotations

import time
from dataclasses import asdict

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import interp
from ...probes.multiple_testing import holm
from ...probes.null_test import null_test
from ...probes.posterior_consistency import (
    attention_posterior_tv,
    defined_prompts,
    hypothesis_mass,
    output_deviation,
    permuted_within_groups,
    tracking_correlation,
    undefined_reason,
    uniform_attention_tv,
)
from ...windtunnel import PosteriorPrompts, TaskConfigError
from ...windtunnel.sula import ALPHA, KS
from ..kit.errors import ExperimentError
from ..kit.models import open_model, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.sula import model_posterior_prompts
from .config import SULA_ONLY, ConsistencyConfig  # noqa: F401 (re-exported)
from .result import AttentionConsistency, ConsistencyResult, HeadTracking, OutputScore


def prompts_for(m: interp.InterpModel, cfg: ConsistencyConfig) -> PosteriorPrompts:
    try:
        return model_posterior_prompts(m, task=cfg.task, n_prompts=cfg.n_prompts,
                                       seed=cfg.seed, labels=cfg.labels, n_per_k=cfg.n_per_k,
                                       sula_seed=cfg.sula_seed, ks=KS, alpha=ALPHA)
    except TaskConfigError as e:
        raise ExperimentError(str(e)) from e


def read_model(m: interp.InterpModel, pp: PosteriorPrompts, layers: list[int],
               cfg: ConsistencyConfig) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """(p_model [N, K] over the hypothesis tokens, patterns [N, H, W] per layer, tokens
    [N, W] padded with −1)."""
    tokens, _ = m.encode(pp.prompts)
    sites = ["logits", *[interp.site_name("attn.pattern", L) for L in layers]]
    st = interp.capture(m, tokens, sites, positions="last", batch_size=cfg.batch_size,
                        progress=cfg.progress, seed=cfg.seed)
    hyp = torch.as_tensor(pp.hyp_ids)  # [N, K]: only these logits are widened to float64
    p_model = torch.softmax(st["logits"].gather(1, hyp).double(), dim=1).numpy()
    width = max(map(len, tokens))
    tok = np.full((len(tokens), width), -1, dtype=np.int64)
    for i, t in enumerate(tokens):
        tok[i, :len(t)] = t
    pats = [st[s].double().numpy() for s in sites[1:]]
    return p_model, pats, tok


def _q(x: np.ndarray) -> list[float]:
    """10/50/90 % quantiles of the finite values of ``x`` (NaN where none is)."""
    x = x[np.isfinite(x)]
    return np.quantile(x, [0.1, 0.5, 0.9]).tolist() if x.size else [np.nan] * 3


def _score(tv: np.ndarray) -> np.ndarray:
    """1 − mean TV over the defined prompts, per head: ``tv`` [N, H] -> [H] (NaN: none)."""
    ok = np.isfinite(tv)
    with np.errstate(invalid="ignore"):
        return 1.0 - np.where(ok, tv, 0.0).sum(0) / np.where(ok.any(0), ok.sum(0), np.nan)


def head_tracking(pats: list[np.ndarray], pats_twin: list[np.ndarray], tok: np.ndarray,
                  pp: PosteriorPrompts, layers: list[int], cfg: ConsistencyConfig,
                  ) -> tuple[list[HeadTracking], np.ndarray]:
    """(one row per head, the per-prompt attention TV of every head [N, L·H] in row order)."""
    rng = np.random.default_rng(cfg.seed)
    nulls = [permuted_within_groups(pp.bayes, pp.group, rng) for _ in range(cfg.n_null)]
    rows, tvs = [], []
    for L, a, a0 in tqdm(list(zip(layers, pats, pats_twin, strict=True)), desc="heads",
                         disable=not cfg.progress):
        mass, count = hypothesis_mass(a, tok, pp.hyp_ids)
        mass0 = hypothesis_mass(a0, tok, pp.hyp_ids)[0]
        tv = attention_posterior_tv(mass, count, pp.bayes)  # [N, H]
        c, c0 = _score(tv), _score(attention_posterior_tv(mass0, count, pp.bayes))
        r = tracking_correlation(mass, count, pp.bayes)
        r0 = tracking_correlation(mass0, count, pp.bayes)
        null = np.stack([tracking_correlation(mass, count, b) for b in nulls])  # [n_null, H]
        for h in range(mass.shape[1]):
            p = null_test(float(r[h]), null[:, h]).p if np.isfinite(r[h]) else 1.0
            q = _q(tv[:, h])
            rows.append(HeadTracking(layer=L, head=h, consistency=float(c[h]), tv_p10=q[0],
                                     tv_p50=q[1], tv_p90=q[2],
                                     consistency_random_init=float(c0[h]), r=float(r[h]),
                                     p=p, p_holm=1.0, r_random_init=float(r0[h]),
                                     mean_mass=float(mass[:, h].sum(-1).mean()),
                                     carries=False))
        tvs.append(tv)
    adj = holm(np.array([x.p for x in rows]))
    for x, q in zip(rows, adj, strict=True):
        x.p_holm = float(q)
        x.carries = bool(q < cfg.alpha and np.isfinite(x.r) and abs(x.r) >= cfg.min_r)
    return rows, np.concatenate(tvs, axis=1)


def _best(values: list[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.nanmax(v)) if np.isfinite(v).any() else float("nan")


def attention_summary(heads: list[HeadTracking], pp: PosteriorPrompts, tok: np.ndarray,
                      layers: list[int]) -> tuple[AttentionConsistency, int | None]:
    """(the headline over ``heads``, the index of the best head in ``heads`` or None)."""
    count = (tok[:, :, None] == np.asarray(pp.hyp_ids)[:, None, :]).sum(1)
    ok = defined_prompts(count, pp.bayes)
    shown = ((pp.bayes * (count > 0)).sum(1))[ok]
    c = np.array([h.consistency for h in heads])
    best = int(np.nanargmax(c)) if np.isfinite(c).any() else None
    uni = uniform_attention_tv(count, pp.bayes)
    return AttentionConsistency(
        consistency=float(c[best]) if best is not None else float("nan"),
        best_head="" if best is None else f"L{heads[best].layer}.H{heads[best].head}",
        random_init=_best([h.consistency_random_init for h in heads]),
        uniform=float(1 - np.nanmean(uni)) if ok.any() else float("nan"),
        n_defined=int(ok.sum()),
        shown_posterior_mass=float(shown.mean()) if ok.any() else float("nan"),
        layers=list(layers),
        layer_best=[_best([h.consistency for h in heads if h.layer == L]) for L in layers],
        head_quantiles=_q(c), reason=undefined_reason(count, pp.bayes)), best


def group_mean_baseline(pp: PosteriorPrompts) -> np.ndarray:
    """[N, K]: each prompt's group's mean posterior."""
    out = np.empty_like(pp.bayes)
    for g in np.unique(pp.group):
        sel = pp.group == g
        out[sel] = pp.bayes[sel].mean(0)
    return out


def score(source: str, bayes: np.ndarray, p: np.ndarray) -> OutputScore:
    """Output calibration of ``p`` [N, K] against ``bayes`` [N, K]."""
    tv, kl = output_deviation(bayes, p)
    return OutputScore(source=source, calibration=float(1 - tv.mean()), mean_tv=float(tv.mean()),
                       mean_kl_bits=float(kl.mean()))


def run_consistency(cfg: ConsistencyConfig,
                    model: interp.InterpModel | None = None) -> ConsistencyResult:
    """Run the verifier (module doc); write heads.parquet, groups.parquet, summary.json,
    manifest.json and report.html under ``cfg.out``."""
    cfg.check()
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model)
    if m.modules.adapter.attention is None:
        raise ExperimentError(f"{m.info.name} has no attention heads to verify")
    layers = interp.resolve_layers(cfg.layers, m.n_layers)
    pp = prompts_for(m, cfg)
    with claim(cfg, m) as rd:
        p_model, pats, tok = read_model(m, pp, layers, cfg)
        tseed = twin_seed(cfg.model, cfg.twin_seed, cfg.seed)
        # a model this run opened is done with: free it before its twin is built
        twin = interp.random_init_twin(m, seed=tseed, release_model=model is None)
        p_twin, pats_twin, _ = read_model(twin, pp, layers, cfg)
        heads, attn_tv = head_tracking(pats, pats_twin, tok, pp, layers, cfg)
        attention, best = attention_summary(heads, pp, tok, layers)
        count = (tok[:, :, None] == np.asarray(pp.hyp_ids)[:, None, :]).sum(1)
        tv, kl = output_deviation(pp.bayes, p_model)
        per_prompt = pp.table().assign(
            tv=tv, kl_bits=kl, uniform_attn_tv=uniform_attention_tv(count, pp.bayes),
            best_head_attn_tv=attn_tv[:, best] if best is not None else np.nan)
        groups = per_prompt.groupby(pp.group_name)[
            ["best_head_attn_tv", "uniform_attn_tv", "tv", "kl_bits", "h_bayes_bits"]].describe(
            percentiles=[0.1, 0.5, 0.9])
        groups.columns = ["_".join(c) for c in groups.columns]
        res = ConsistencyResult(
            model=m.info.name, task=pp.name, group_name=pp.group_name, n_prompts=len(pp),
            n_hypotheses=int(pp.bayes.shape[1]), attention=attention,
            outputs=[score("model", pp.bayes, p_model), score("random_init", pp.bayes, p_twin),
                     score("group_mean_baseline", pp.bayes, group_mean_baseline(pp))],
            heads=heads, carriers=[f"L{h.layer}.H{h.head}" for h in heads if h.carries],
            twin_seed=tseed, wall_s=round(time.perf_counter() - t0, 2))
        _write(cfg, m, res, groups.reset_index())
        rd.finish()
    return res


def _write(cfg: ConsistencyConfig, m: interp.InterpModel, res: ConsistencyResult,
           groups: pd.DataFrame) -> None:
    from .report import write_report

    heads = pd.DataFrame([asdict(h) for h in res.heads]).assign(model=res.model)
    write_run(cfg, res, model=m, tables={"heads.parquet": heads, "groups.parquet": groups},
              report=lambda path, manifest: write_report(path, res, heads, groups, manifest))

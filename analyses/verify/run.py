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
  shown value has posterior 0). Beside each head's score, its attention *share* on the
  hypothesis tokens (the un-renormalised mass the score is computed from: a head can match the
  posterior in proportion while reading almost nothing there).
* **selection-aware controls** of the headline (:mod:`probes.selection_control`; they make its
  verdict, :func:`analyses.verify.report.headline_verdict`): the best of H heads is a maximum,
  and a maximum of H unrelated heads beats their mean. (a) Cross-fitted selection: over
  ``--n-splits`` seeded two-half splits of the prompts that count (balanced within groups), the
  head chosen on one half is scored on the other and vice versa; the held-out score must beat
  uniform attention and the twin's heads cross-fitted on the same splits. (b) The best of as
  many random heads on the same prompts, ``--n-random`` draws each: random Dirichlet heads
  (flat over the hypothesis occurrences, centred on uniform attention) and the model's own heads
  with their weights re-dealt among each prompt's hypothesis occurrences (each head's
  concentration kept); the observed best must lie above both at ``--alpha``. The in-sample
  controls stay beside them: the random-init twin's best head and attention spread evenly over
  the prompt.
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
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import interp
from ...probes import posterior_consistency as pc
from ...probes import selection_control as sc
from ...probes.multiple_testing import holm
from ...probes.null_test import null_test
from ...records.options import expect_config
from ...windtunnel import PosteriorPrompts, TaskConfigError
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import heads_model_of, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.sula import model_posterior_prompts
from .config import SULA_ONLY, VerifyConfig  # noqa: F401 (re-exported)
from .result import AttentionConsistency, HeadTracking, MaxControl, OutputScore, VerifyResult


def prompts_for(m: interp.InterpModel, cfg: VerifyConfig) -> PosteriorPrompts:
    try:
        return model_posterior_prompts(m, cfg)
    except TaskConfigError as e:
        raise ExperimentError(str(e)) from e


def read_model(m: interp.InterpModel, pp: PosteriorPrompts, layers: list[int],
               cfg: VerifyConfig) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
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


@dataclass
class HeadReadings:
    """What the selection-aware controls read, every head in row order (layer-major):
    ``tv`` and ``tv_twin`` [N, L·H] the per-prompt attention TV of the model's and the twin's
    heads; ``weights`` [N, L·H, O] each head's attention on each hypothesis occurrence and
    ``hyp`` [N, O] the hypothesis there (:func:`probes.selection_control.occurrence_weights`)."""

    tv: np.ndarray
    tv_twin: np.ndarray
    weights: np.ndarray
    hyp: np.ndarray


def head_tracking(pats: list[np.ndarray], pats_twin: list[np.ndarray], tok: np.ndarray,
                  pp: PosteriorPrompts, layers: list[int], cfg: VerifyConfig,
                  ) -> tuple[list[HeadTracking], HeadReadings]:
    """(one row per head, what the selection-aware controls read: :class:`HeadReadings`)."""
    rng = np.random.default_rng(cfg.seed)
    nulls = [pc.permuted_within_groups(pp.bayes, pp.group, rng) for _ in range(cfg.n_null)]
    rows, tvs, tvs0, ws = [], [], [], []
    hyp = np.zeros((len(tok), 1), dtype=np.int64)
    for L, a, a0 in tqdm(list(zip(layers, pats, pats_twin, strict=True)), desc="heads",
                         disable=not cfg.progress):
        mass, count = pc.hypothesis_mass(a, tok, pp.hyp_ids)
        mass0 = pc.hypothesis_mass(a0, tok, pp.hyp_ids)[0]
        ok = pc.defined_prompts(count, pp.bayes)
        tv = pc.attention_posterior_tv(mass, count, pp.bayes)  # [N, H]
        tv0 = pc.attention_posterior_tv(mass0, count, pp.bayes)
        c, c0 = sc.head_posterior_scores(tv), sc.head_posterior_scores(tv0)
        r = pc.tracking_correlation(mass, count, pp.bayes)
        r0 = pc.tracking_correlation(mass0, count, pp.bayes)
        null = np.stack([pc.tracking_correlation(mass, count, b) for b in nulls])  # [n_null, H]
        share = mass.sum(-1)  # [N, H]: the un-renormalised share on hypothesis tokens
        for h in range(mass.shape[1]):
            p = null_test(float(r[h]), null[:, h]).p if np.isfinite(r[h]) else 1.0
            q = _q(tv[:, h])
            rows.append(HeadTracking(layer=L, head=h, consistency=float(c[h]), tv_p10=q[0],
                                     tv_p50=q[1], tv_p90=q[2],
                                     consistency_random_init=float(c0[h]), r=float(r[h]),
                                     p=p, p_holm=1.0, r_random_init=float(r0[h]),
                                     mean_mass=float(share[:, h].mean()), carries=False,
                                     mass_defined=float(share[ok, h].mean()) if ok.any()
                                     else float("nan")))
        w, hyp = sc.occurrence_weights(a, tok, pp.hyp_ids)
        tvs.append(tv)
        tvs0.append(tv0)
        ws.append(w)
    adj = holm(np.array([x.p for x in rows]))
    for x, q in zip(rows, adj, strict=True):
        x.p_holm = float(q)
        x.carries = bool(q < cfg.alpha and np.isfinite(x.r) and abs(x.r) >= cfg.min_r)
    return rows, HeadReadings(np.concatenate(tvs, axis=1), np.concatenate(tvs0, axis=1),
                              np.concatenate(ws, axis=1), hyp)


def _best(values: list[float]) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.nanmax(v)) if np.isfinite(v).any() else float("nan")


def _range(x: np.ndarray) -> list[float]:
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    return [float(x.min()), float(x.max())] if x.size else []


def selection_controls(heads: list[HeadTracking], rd: HeadReadings, pp: PosteriorPrompts,
                       count: np.ndarray, best: int, cfg: VerifyConfig) -> dict:
    """The selection-aware controls of the best head ``best`` (:mod:`probes.selection_control`):
    cross-fitted selection on the model's and the twin's heads (the same seeded splits,
    balanced within groups), and the best of as many random Dirichlet heads and of the model's
    heads re-dealt, as fields of :class:`AttentionConsistency`."""
    observed = heads[best].consistency
    n_heads = rd.tv.shape[1]
    cf = sc.cross_fit(rd.tv, pp.group, cfg.n_splits, cfg.seed)
    cf0 = sc.cross_fit(rd.tv_twin, pp.group, cfg.n_splits, cfg.seed)
    uni = pc.uniform_attention_tv(count, pp.bayes)
    picks = cf.picks[cf.picks >= 0]
    nulls = []
    for name, maxima in (
            ("random Dirichlet heads", sc.random_heads_max(count, pp.bayes, n_heads, cfg.n_random,
                                                        cfg.seed)),
            ("re-dealt heads", sc.shuffled_heads_max(rd.weights, rd.hyp, count,
                                                              pp.bayes, cfg.n_random,
                                                              cfg.seed + 1))):
        mn = sc.max_null(name, maxima, observed, n_heads, cfg.alpha)
        nulls.append(MaxControl(null=name, n_heads=n_heads, n_draws=mn.n_draws, mean=mn.mean,
                                sd=mn.sd, quantile=mn.quantile, p=mn.p))
    held, held0 = cf.held_out, cf0.held_out
    return {"held_out": float(np.nanmean(held)) if np.isfinite(held).any() else float("nan"),
            "held_out_range": _range(held),
            "held_out_twin": float(np.nanmean(held0)) if np.isfinite(held0).any()
            else float("nan"),
            "held_out_gaps": _range(cf.fold_gaps(uni)), "n_splits": cfg.n_splits,
            "pick_agreement": float((picks == best).mean()) if picks.size else float("nan"),
            "random_heads": nulls[0], "shuffled_heads": nulls[1], "alpha": cfg.alpha}


def attention_summary(heads: list[HeadTracking], rd: HeadReadings, pp: PosteriorPrompts,
                      tok: np.ndarray, layers: list[int], cfg: VerifyConfig,
                      ) -> tuple[AttentionConsistency, int | None]:
    """(the headline over ``heads`` with its selection-aware controls, the index of the best
    head in ``heads`` or None)."""
    count = (tok[:, :, None] == np.asarray(pp.hyp_ids)[:, None, :]).sum(1)
    ok = pc.defined_prompts(count, pp.bayes)
    shown = ((pp.bayes * (count > 0)).sum(1))[ok]
    c = np.array([h.consistency for h in heads])
    best = int(np.nanargmax(c)) if np.isfinite(c).any() else None
    uni = pc.uniform_attention_tv(count, pp.bayes)
    length = (tok >= 0).sum(1)
    extra = {} if best is None else {
        **selection_controls(heads, rd, pp, count, best, cfg),
        "best_head_mass": heads[best].mass_defined,
        "uniform_mass": float((count.sum(1) / np.maximum(length, 1))[ok].mean())}
    return AttentionConsistency(
        consistency=float(c[best]) if best is not None else float("nan"),
        best_head="" if best is None else f"L{heads[best].layer}.H{heads[best].head}",
        random_init=_best([h.consistency_random_init for h in heads]),
        uniform=float(1 - np.nanmean(uni)) if ok.any() else float("nan"),
        n_defined=int(ok.sum()),
        shown_posterior_mass=float(shown.mean()) if ok.any() else float("nan"),
        layers=list(layers),
        layer_best=[_best([h.consistency for h in heads if h.layer == L]) for L in layers],
        head_quantiles=_q(c), reason=pc.undefined_reason(count, pp.bayes), **extra), best


def group_mean_baseline(pp: PosteriorPrompts) -> np.ndarray:
    """[N, K]: each prompt's group's mean posterior."""
    out = np.empty_like(pp.bayes)
    for g in np.unique(pp.group):
        sel = pp.group == g
        out[sel] = pp.bayes[sel].mean(0)
    return out


def score(source: str, bayes: np.ndarray, p: np.ndarray) -> OutputScore:
    """Output calibration of ``p`` [N, K] against ``bayes`` [N, K]."""
    tv, kl = pc.output_deviation(bayes, p)
    return OutputScore(source=source, calibration=float(1 - tv.mean()), mean_tv=float(tv.mean()),
                       mean_kl_bits=float(kl.mean()))


def run_verify(cfg: VerifyConfig,
                    model: interp.InterpModel | None = None) -> VerifyResult:
    """Run the verifier (module doc); write heads.parquet, groups.parquet, summary.json,
    manifest.json and report.html under ``cfg.out``."""
    expect_config(cfg, VerifyConfig, "run_verify")
    t0 = time.perf_counter()
    m = heads_model_of(cfg, model, " to verify")  # an open one: its kind and layers checked
    layers = interp.resolve_layers(cfg.layers, m.n_layers)
    pp = prompts_for(m, cfg)
    with claim(cfg, m) as rd:
        learned = learned_of(m, progress=cfg.progress)  # a tunnel's verdicts stand behind it
        p_model, pats, tok = read_model(m, pp, layers, cfg)
        tseed = twin_seed(cfg.model, cfg.twin_seed, cfg.seed)
        # a model this run opened is done with: free it before its twin is built
        twin = interp.random_init_twin(m, seed=tseed, release_model=model is None)
        p_twin, pats_twin, _ = read_model(twin, pp, layers, cfg)
        heads, readings = head_tracking(pats, pats_twin, tok, pp, layers, cfg)
        attention, best = attention_summary(heads, readings, pp, tok, layers, cfg)
        attn_tv = readings.tv
        count = (tok[:, :, None] == np.asarray(pp.hyp_ids)[:, None, :]).sum(1)
        tv, kl = pc.output_deviation(pp.bayes, p_model)
        per_prompt = pp.table().assign(
            tv=tv, kl_bits=kl, uniform_attn_tv=pc.uniform_attention_tv(count, pp.bayes),
            best_head_attn_tv=attn_tv[:, best] if best is not None else np.nan)
        groups = per_prompt.groupby(pp.group_name)[
            ["best_head_attn_tv", "uniform_attn_tv", "tv", "kl_bits", "h_bayes_bits"]].describe(
            percentiles=[0.1, 0.5, 0.9])
        groups.columns = ["_".join(c) for c in groups.columns]
        res = VerifyResult(
            model=m.info.name, task=pp.name, group_name=pp.group_name, n_prompts=len(pp),
            n_hypotheses=int(pp.bayes.shape[1]), attention=attention,
            outputs=[score("model", pp.bayes, p_model), score("random_init", pp.bayes, p_twin),
                     score("group_mean_baseline", pp.bayes, group_mean_baseline(pp))],
            heads=heads, carriers=[f"L{h.layer}.H{h.head}" for h in heads if h.carries],
            twin_seed=tseed, wall_s=round(time.perf_counter() - t0, 2), learned=learned)
        _write(cfg, m, res, groups.reset_index())
        rd.finish()
    return res


def _write(cfg: VerifyConfig, m: interp.InterpModel, res: VerifyResult,
           groups: pd.DataFrame) -> None:
    from .report import write_report

    heads = pd.DataFrame([asdict(h) for h in res.heads]).assign(model=res.model)
    write_run(cfg, res, model=m, tables={"heads.parquet": heads, "groups.parquet": groups},
              report=lambda path, manifest: write_report(path, res, heads, groups, manifest))

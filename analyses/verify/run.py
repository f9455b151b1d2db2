"""``bayesgeom verify``: is a model Bayesian-consistent on a task with an exact posterior? Its
output against the posterior, and which attention heads read the hypotheses' evidence.

Prompts: a wind tunnel's own task (``--n-prompts`` cut at prediction positions, grouped by the
prediction index q) or, for a text model, SULA's main condition (``--n-per-k`` per k, grouped
by k) -- each with the exact posterior over its K hypothesis tokens
(:func:`analyses.prompts.sula.model_posterior_prompts`). At each prompt's final position
(:func:`interp.capture`, positions ``last``):

* the output: next-token probabilities renormalised over the K hypothesis tokens (only the
  logits a task model was trained on), against the posterior: TV, KL(p_Bayes ‖ p_model) in
  bits, and the **consistency score** 1 − mean TV (:mod:`probes.posterior_consistency`);
  per group, the mean and quantiles of TV (the distribution of deviations per position);
* each head (``attn.L.pattern``): its attention on the positions holding each hypothesis
  token, per occurrence, and the Pearson correlation of that with the posterior over the
  (prompt, hypothesis) pairs whose token the prompt shows (:mod:`probes.posterior_consistency`
  says why per occurrence and why shown only; on bijection it is undefined, since every shown
  value has posterior 0). Its p-value comes from ``--n-null`` permutations of the posterior
  rows within groups, Holm-adjusted over all heads; a head **carries the posterior** when
  p_Holm < ``--alpha`` and |r| ≥ ``--min-r``.

Controls beside every number: the random-init twin (output score and per-head r), and the
*group-mean* baseline -- predicting for every prompt the mean posterior of its group (what
position or k alone tells).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from ... import interp
from ...probes.multiple_testing import holm
from ...probes.null_test import null_test
from ...probes.posterior_consistency import (
    hypothesis_mass,
    output_deviation,
    permuted_within_groups,
    tracking_correlation,
)
from ...records import option, seed_option
from ...windtunnel import PosteriorPrompts, TaskConfigError, is_windtunnel_dir
from ...windtunnel.sula import ALPHA, KS
from ..kit.errors import ExperimentError
from ..kit.models import open_model
from ..kit.options import layers_option
from ..kit.out_dirs import claim
from ..kit.run_options import Batched, ModelOptions, RunOptions, Seeded, changed_options
from ..kit.writer import write_run
from ..prompts.sula import model_posterior_prompts
from .result import ConsistencyResult, HeadTracking, OutputScore


@dataclass
class ConsistencyConfig(ModelOptions, Batched, Seeded, RunOptions,
                        experiment="verify", batch_size=32):
    """One verification (``model``: a Hub name, local directory or wind-tunnel run)."""

    task: str | None = option(None, "the task (default: a wind tunnel's own, sula for text)")
    n_prompts: int = option(256, "wind-tunnel prompts (cut at prediction positions)", min=4)
    n_per_k: int = option(20, "SULA prompts per k", min=2)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip (default: "
                                            "picked)")
    layers: tuple[int, ...] | None = layers_option("layers whose heads are read")
    n_null: int = option(200, "within-group permutations per head's null", min=10)
    alpha: float = option(0.05, "Holm-adjusted level for 'carries the posterior'", above=0,
                          max=1)
    min_r: float = option(0.3, "smallest |r| for 'carries the posterior'", min=0, max=1)
    sula_seed: int = seed_option(42, "seed of SULA's draws")

    def check(self) -> None:
        """The shared checks, and no SULA option given for a wind tunnel (it reads its own
        task's sequences, so ``labels``, ``n_per_k`` and ``sula_seed`` would be ignored)."""
        super().check()
        sula_only = changed_options(self, SULA_ONLY)
        if sula_only and self.model is not None and is_windtunnel_dir(Path(self.model)):
            raise self.error(f"{', '.join('--' + o.replace('_', '-') for o in sula_only)} "
                             f"appl{'ies' if len(sula_only) == 1 else 'y'} to text models (SULA "
                             f"prompts); {self.model} is a wind tunnel, read on its own task")


#: the options only SULA prompts (a text model's) read
SULA_ONLY = ("labels", "n_per_k", "sula_seed")


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
    logits = st["logits"].double()  # [N, V]
    hyp = torch.as_tensor(pp.hyp_ids)
    p_model = torch.softmax(logits.gather(1, hyp), dim=1).numpy()
    width = max(map(len, tokens))
    tok = np.full((len(tokens), width), -1, dtype=np.int64)
    for i, t in enumerate(tokens):
        tok[i, :len(t)] = t
    pats = [st[s].double().numpy() for s in sites[1:]]
    return p_model, pats, tok


def head_tracking(pats: list[np.ndarray], pats_twin: list[np.ndarray], tok: np.ndarray,
                  pp: PosteriorPrompts, layers: list[int], cfg: ConsistencyConfig,
                  ) -> list[HeadTracking]:
    rng = np.random.default_rng(cfg.seed)
    nulls = [permuted_within_groups(pp.bayes, pp.group, rng) for _ in range(cfg.n_null)]
    rows = []
    for L, a, a0 in tqdm(list(zip(layers, pats, pats_twin, strict=True)), desc="heads",
                         disable=not cfg.progress):
        mass, count = hypothesis_mass(a, tok, pp.hyp_ids)
        r = tracking_correlation(mass, count, pp.bayes)
        r0 = tracking_correlation(hypothesis_mass(a0, tok, pp.hyp_ids)[0], count, pp.bayes)
        null = np.stack([tracking_correlation(mass, count, b) for b in nulls])  # [n_null, H]
        for h in range(mass.shape[1]):
            p = null_test(float(r[h]), null[:, h]).p if np.isfinite(r[h]) else 1.0
            rows.append(HeadTracking(layer=L, head=h, r=float(r[h]), p=p, p_holm=1.0,
                                     r_random_init=float(r0[h]),
                                     mean_mass=float(mass[:, h].sum(-1).mean()),
                                     carries=False))
    adj = holm(np.array([x.p for x in rows]))
    for x, q in zip(rows, adj, strict=True):
        x.p_holm = float(q)
        x.carries = bool(q < cfg.alpha and np.isfinite(x.r) and abs(x.r) >= cfg.min_r)
    return rows


def group_mean_baseline(pp: PosteriorPrompts) -> np.ndarray:
    """[N, K]: each prompt's group's mean posterior."""
    out = np.empty_like(pp.bayes)
    for g in np.unique(pp.group):
        sel = pp.group == g
        out[sel] = pp.bayes[sel].mean(0)
    return out


def score(source: str, bayes: np.ndarray, p: np.ndarray) -> OutputScore:
    tv, kl = output_deviation(bayes, p)
    return OutputScore(source=source, consistency=float(1 - tv.mean()), mean_tv=float(tv.mean()),
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
        twin = interp.random_init_twin(m, seed=cfg.seed)
        p_twin, pats_twin, _ = read_model(twin, pp, layers, cfg)
        heads = head_tracking(pats, pats_twin, tok, pp, layers, cfg)
        tv, kl = output_deviation(pp.bayes, p_model)
        groups = pp.table().assign(tv=tv, kl_bits=kl).groupby(pp.group_name)[
            ["tv", "kl_bits", "h_bayes_bits"]].describe(percentiles=[0.1, 0.5, 0.9])
        groups.columns = ["_".join(c) for c in groups.columns]
        res = ConsistencyResult(
            model=m.info.name, task=pp.name, group_name=pp.group_name, n_prompts=len(pp),
            n_hypotheses=int(pp.bayes.shape[1]),
            outputs=[score("model", pp.bayes, p_model), score("random_init", pp.bayes, p_twin),
                     score("group_mean_baseline", pp.bayes, group_mean_baseline(pp))],
            heads=heads, carriers=[f"L{h.layer}.H{h.head}" for h in heads if h.carries],
            wall_s=round(time.perf_counter() - t0, 2))
        _write(cfg, m, res, groups.reset_index())
        rd.finish()
    return res


def _write(cfg: ConsistencyConfig, m: interp.InterpModel, res: ConsistencyResult,
           groups: pd.DataFrame) -> None:
    from .report import write_report

    heads = pd.DataFrame([asdict(h) for h in res.heads]).assign(model=res.model)
    write_run(cfg, res, model=m, tables={"heads.parquet": heads, "groups.parquet": groups},
              report=lambda path, manifest: write_report(path, res, heads, groups, manifest))

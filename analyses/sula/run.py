"""``bayesgeom sula``: is a pretrained LLM's in-context uncertainty calibrated to the exact
Bayes posterior? (Paper III §5.2, with its three controls.)

Per condition (:mod:`windtunnel.sula`: main, lexical remap, shuffled labels, evidence ablation)
and k, the model's posterior is its next-token probability over the two label tokens,
renormalised; H_model is its binary entropy (bits). Reported, overall and per k: calibration
MAE |H_model − H_Bayes| and Pearson corr(H_model, H_Bayes) (:func:`infotheory.calibration`);
the probability mass the model puts on the two labels at all; and the geometry of the
last-layer values at the final token -- PC1 of a PCA fitted on all conditions together (shared
basis, standardised), its |Spearman ρ| with H_Bayes and with H_model, and ρ(k, PC1).

Each condition's scores are a finished part (:class:`records.Parts`) keyed by model weights and
prompts, so a rerun (or the demo's) reuses them.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ... import interp
from ...infotheory import calibration, calibration_by_group, entropy_bits_from_probs
from ...probes import fit_pca, spearman
from ...records import Parts, fingerprint
from ...records.options import expect_config
from ...windtunnel import PosteriorPrompts, SulaError
from ...windtunnel.sula import expected_entropy_bits
from ..kit.model_facts import check_with
from ..kit.models import open_model
from ..kit.out_dirs import claim
from ..kit.posteriors import model_posterior
from ..kit.writer import write_run
from ..prompts.sula import pick_labels, sula_prompts
from .config import SulaConfig
from .result import SulaCondition, SulaResult

#: Paper III's SULA calibration MAE (bits, main condition, 250 prompts)
PAPER3_MAE = {"Pythia-410M": 0.44, "Llama-3.2-1B": 0.36, "Phi-2": 0.31}


# ---------------------------------------------------------------- scoring
def score_condition(m: interp.InterpModel, pp: PosteriorPrompts, site: str, weights: str,
                    batch_size: int, progress: bool, parts: Parts,
                    ) -> tuple[pd.DataFrame, np.ndarray, bool]:
    """Per-prompt scores (``pp.table()`` + p_model_1, h_model_bits, label_mass, p_bayes_1) and
    the final-token activations [N, F] of ``site``, a finished part of ``parts``; returns
    reused=True on a hit."""
    cond = str(pp.meta["condition"].iloc[0])
    fp = fingerprint(weights, m.info.dtype, site, list(pp.prompts), pp.hyp_ids)
    hit = parts.get(cond, fp)
    if hit is not None:
        return hit["table"], hit["acts"], True
    store = interp.capture(m, list(pp.prompts), [site, "logits"], positions="last",
                           batch_size=batch_size, progress=progress)
    logits = store["logits"]
    post = model_posterior(logits, pp.hyp_ids)
    mass = torch.softmax(logits.double(), -1).gather(
        1, torch.as_tensor(pp.hyp_ids)).sum(1).numpy()
    acts = store[site].float().flatten(1).numpy()
    df = pp.table().assign(p_model_1=post[:, 0], h_model_bits=entropy_bits_from_probs(post),
                           label_mass=mass, p_bayes_1=pp.bayes[:, 0])
    parts.put(cond, fp, table=df, acts=acts)
    return df, acts, False


def _abs_spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(abs(spearman(a, b, min_n=3)))


def shared_pc1(per: dict[str, pd.DataFrame], acts: dict[str, np.ndarray],
               ) -> tuple[dict[str, dict[str, float]], list[float]]:
    """Shared-basis PC1 (standardised PCA over every condition's activations) per prompt, and
    per condition |ρ(PC1, H_Bayes)|, |ρ(PC1, H_model)|, ρ(k, PC1) (Spearman; PC1's sign is
    oriented so that ρ(PC1, H_model) over all prompts is ≥ 0). Adds ``pc1`` to each table."""
    conds = list(per)
    x = np.concatenate([acts[c] for c in conds]).astype(np.float64)
    pca = fit_pca(x, standardize=True, n_components=2)
    z = pca.transform(x)[:, 0]
    h_all = np.concatenate([per[c]["h_model_bits"].to_numpy() for c in conds])
    if np.ptp(h_all) > 0 and float(spearman(z, h_all)) < 0:
        z = -z
    out: dict[str, dict[str, float]] = {}
    lo = 0
    for c in conds:
        pc = z[lo:lo + len(per[c])]
        lo += len(per[c])
        per[c]["pc1"] = pc
        out[c] = {"abs_rho_pc1_h_bayes": _abs_spearman(pc, per[c]["h_bayes_bits"].to_numpy()),
                  "abs_rho_pc1_h_model": _abs_spearman(pc, per[c]["h_model_bits"].to_numpy()),
                  "rho_k_pc1": float(spearman(per[c]["k"].to_numpy(), pc))}
    return out, [float(r) for r in pca.explained_variance_ratio[:2]]


# ---------------------------------------------------------------- the run
def run_sula(cfg: SulaConfig, model: interp.InterpModel | None = None) -> SulaResult:
    """Run every condition (module doc); write table.parquet (one row per prompt), per_k.parquet,
    summary.json, manifest.json and report.html under ``cfg.out``; return the result."""
    expect_config(cfg, SulaConfig, "run_sula")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model, dtype=cfg.dtype,
                                                   allow_pickle=cfg.allow_pickle)
    if m.tokenizer is None:
        raise SulaError("SULA needs a text model with a tokenizer; a wind-tunnel model runs "
                        "its own task (bayesgeom steer --model RUN)")
    lab, rem, ids = pick_labels(m.tokenizer, cfg.labels, cfg.remap_labels)
    site = interp.site_name(cfg.site, m.n_layers - 1)
    resolved = replace(cfg, labels=lab, remap_labels=rem)
    with claim(cfg, m) as rd:
        result = _score(cfg, resolved, m, site, lab, rem, ids, t0)
        rd.finish()
    return result


def _score(cfg: SulaConfig, resolved: SulaConfig, m: interp.InterpModel, site: str,
           lab: tuple[str, str], rem: tuple[str, str], ids: dict[str, int], t0: float,
           ) -> SulaResult:
    out = Path(cfg.out)
    weights = m.weights_digest()
    parts = Parts(out / "parts")

    per: dict[str, pd.DataFrame] = {}
    acts: dict[str, np.ndarray] = {}
    reused = []
    for cond in cfg.conditions:
        pp = sula_prompts(cond, ks=cfg.ks, n_per_k=cfg.n_per_k, alpha=cfg.alpha, seed=cfg.seed,
                          labels=lab, remap_labels=rem, ids=ids)
        per[cond], acts[cond], hit = score_condition(m, pp, site, weights, cfg.batch_size,
                                                     cfg.progress, parts)
        if hit:
            reused.append(cond)
    geo, evr = shared_pc1(per, acts)
    conditions = {}
    for c in cfg.conditions:
        hm, hb, k = (per[c][col].to_numpy() for col in ("h_model_bits", "h_bayes_bits", "k"))
        cal = calibration(hm, hb)
        conditions[c] = SulaCondition(
            mae=cal.mae, corr=cal.corr, n=cal.n, h_model=cal.h_model, h_bayes=cal.h_bayes,
            label_mass=float(per[c]["label_mass"].mean()),
            per_k=calibration_by_group(hm, hb, k), **geo[c])
    result = SulaResult(
        model=m.info.name, model_info=m.info, site=site, labels=lab,
        remap_labels=rem, label_token_ids=ids, ks=tuple(cfg.ks), n_per_k=cfg.n_per_k,
        alpha=cfg.alpha, seed=cfg.seed,
        expected_h_bayes_bits={str(k): expected_entropy_bits(k, cfg.alpha) for k in cfg.ks},
        conditions=conditions, pc_explained_variance_ratio=evr, paper3_mae_bits=PAPER3_MAE,
        reused_conditions=reused, wall_s=round(time.perf_counter() - t0, 2))
    table = pd.concat([per[c] for c in cfg.conditions], ignore_index=True)
    from .report import per_k_table, write_report

    per_k = per_k_table(table)
    write_run(resolved, result, model=m,
              tables={"table.parquet": table, "per_k.parquet": per_k},
              report=lambda path, manifest: write_report(path, result, per_k, manifest))
    return result

"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, each
check beside its threshold and its control, composed from the other experiments' runs.

Checks (thresholds are options; ``>`` means strictly above, as in the checklist):

* **key orthogonality** > 0.9: ``bayesgeom detect``'s orthogonality score 1 − mean |cos| over
  pairs of the unit-length keys of the frame (Paper I's mean off-diagonal |cos|, no centring;
  1 = pairwise orthogonal; :mod:`probes.key_frame`) at the *best layer*, as the mean over that
  layer's kv heads. Frame: a wind tunnel's hypothesis tokens, an LLM's most frequent tokens of
  built-in text. Control: the random-init twin at the same layer; reference: random Gaussian
  vectors of the frame's shape, 1 − E|cos| (≈ 0.90 at d = 64, so the threshold is near
  chance there). With more keys than dimensions the note gives the Welch ceiling.
* **hypothesis-space coverage** > 0.8: per prompt of ``bayesgeom verify``, the posterior mass
  on hypotheses the model keeps alive, Σ_h p_Bayes(h)·[p_model(h) ≥ ½·p_Bayes(h)] (p_model
  renormalised over the K hypothesis tokens), averaged over prompts: 1 for a model that
  outputs the exact posterior, or one that never gives a hypothesis less than half its
  posterior probability; it drops as the model rules out hypotheses the evidence keeps.
  Controls: the random-init twin, and the uniform distribution over the K hypotheses.
* **domain-manifold separation** > 0.7 (language models): the mean principal angle between
  two domains' 90 %-variance value subspaces at the last layer (``bayesgeom geometry``'s
  ``manifold_mean_angle_deg``), divided by 90°: 0 = the same subspace, 1 = orthogonal ones.
  Run on a small geometry configuration (``--geometry-per-quintile`` prompts per entropy
  quintile, a ``--geometry-pool`` candidate pool, ``--geometry-bootstrap`` resamples).
  Controls: the random-init twin, and random subspaces of the same dimensions. A wind tunnel
  has one domain, so it is not measurable there.
* **posterior KL of the output** < 0.01 bits: ``bayesgeom verify``'s mean KL(p_Bayes ‖ p_model)
  of the model's *output* (next-token distribution renormalised over the hypotheses) at each
  prompt's final position (a wind tunnel's own task; SULA for a text model) -- output
  calibration, not attention; verify's attention–posterior consistency is quoted in the row's
  note, not judged. Controls: the random-init twin, and the group-mean baseline (position or
  k alone).
* **extrapolation ratio** > 100: read from a finished ``bayesgeom extrapolate`` run
  (``--extrapolation``) when the model is one of its trained models
  (``RUN/train/<arch>``): the largest length multiple whose accuracy stays within that run's
  tolerance of the accuracy at the training length. Control: the same run's learned-absolute
  (``llama``) scheme.
* **convergence speed** ≤ 2,000 steps: the first logged evaluation step at which a wind
  tunnel's held-out per-sample entropy MAE (``eval_entropy_mae_bits`` in its
  ``metrics.parquet``) is ≤ ``--convergence-mae-bits`` (0.05 bits); resolution: the run's
  eval interval. A pretrained model has no training log here.

Each sub-run lives in its own folder under ``--out`` (``detect``, ``verify``, ``geometry``)
with its own report; a finished sub-run with the same settings and weights is reused, so a
rerun with other thresholds only re-judges the table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ... import interp
from ...probes.posterior_consistency import coverage
from ...records import Parts, fingerprint, from_json, run_settings
from ...records.options import expect_config
from ..detect.result import DetectResult
from ..detect.run import DetectConfig, run_detect
from ..geometry.result import GeometryResult
from ..geometry.run import GeometryConfig, check_config, run_geometry
from ..kit.errors import ExperimentError
from ..kit.model_facts import check_with
from ..kit.models import open_model, twin_seed
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.pool import PoolError
from ..verify.result import VerifyResult
from ..verify.run import VerifyConfig, prompts_for, read_model, run_verify
from .checks import (
    convergence_row,
    extrapolation_row,
    key_row,
    posterior_rows,
    separation_row,
    unmeasurable_posterior_rows,
)
from .config import THRESHOLDS, MonitorConfig, _threshold  # noqa: F401 (re-exported)
from .result import CheckRow, MonitorResult

T = TypeVar("T")


def _reused(parts: Parts, name: str, sub: Any, m: interp.InterpModel, cls: type[T],
            run: Callable[..., T], restart: bool) -> T:
    """The typed result of sub-run ``name`` (config ``sub``, whose ``out`` is under
    ``parts.root``): reused when a finished one with the same settings and weights is there,
    else run by ``run(sub, model=m)`` and marked finished."""
    fp = fingerprint(run_settings(sub), m.weights_digest(), m.info.dtype)
    got = None if restart else parts.get(name, fp)
    if got is not None:
        return from_json(cls, got["summary.json"])
    res = run(sub, model=m)
    parts.mark(name, fp, [Path(name) / "summary.json"])
    return res


def _coverages(parts: Parts, m: interp.InterpModel, vcfg: VerifyConfig,
               restart: bool) -> dict[str, float]:
    """Mean coverage of the model, its random-init twin and the uniform distribution on
    verify's prompts (the logits at each prompt's last position, read once and kept)."""
    fp = fingerprint(run_settings(vcfg), m.weights_digest(), m.info.dtype, "coverage")
    got = None if restart else parts.get("coverage", fp)
    if got is None:
        pp = prompts_for(m, vcfg)
        p_model = read_model(m, pp, [], vcfg)[0]
        twin = interp.random_init_twin(m, seed=twin_seed(vcfg.model, vcfg.twin_seed, vcfg.seed))
        p_twin = read_model(twin, pp, [], vcfg)[0]
        uniform = np.full_like(pp.bayes, 1.0 / pp.bayes.shape[1])
        got = {k: coverage(pp.bayes, p) for k, p in
               (("model", p_model), ("random_init", p_twin), ("uniform", uniform))}
        parts.put("coverage", fp, **got)
    return {k: float(np.mean(v)) for k, v in got.items()}


def _sub(cfg: MonitorConfig, name: str) -> Path:
    return Path(cfg.out) / name


def _key_check(cfg: MonitorConfig, parts: Parts, m: interp.InterpModel) -> CheckRow:
    sizes = ({"n_prompts": cfg.n_prompts} if m.task is None
             else {"n_sequences": cfg.n_sequences})  # only what this kind of model reads
    sub = DetectConfig(model=cfg.model, out=_sub(cfg, "detect"), **sizes, seed=cfg.seed,
                       batch_size=cfg.batch_size, progress=cfg.progress, restart=cfg.restart)
    try:
        res = _reused(parts, "detect", sub, m, DetectResult, run_detect, cfg.restart)
    except ExperimentError as e:
        return key_row(None, cfg.key_orthogonality_min, str(e))
    return key_row(res, cfg.key_orthogonality_min, str(sub.out))


def _posterior_checks(cfg: MonitorConfig, parts: Parts, m: interp.InterpModel,
                      ) -> list[CheckRow]:
    sula = {"n_per_k": cfg.n_per_k} if m.task is None else {}  # SULA: a text model's
    sub = VerifyConfig(model=cfg.model, out=_sub(cfg, "verify"),
                            n_prompts=cfg.verify_prompts, **sula,
                            n_null=cfg.n_null, seed=cfg.seed, batch_size=cfg.batch_size,
                            progress=cfg.progress, restart=cfg.restart)
    try:
        res = _reused(parts, "verify", sub, m, VerifyResult, run_verify,
                      cfg.restart)
        cov = _coverages(parts, m, sub, cfg.restart)
    except ExperimentError as e:
        return unmeasurable_posterior_rows(cfg.coverage_min, cfg.kl_max, str(e))
    return posterior_rows(res, cov, cfg.coverage_min, cfg.kl_max, str(sub.out))


def _separation_check(cfg: MonitorConfig, parts: Parts, m: interp.InterpModel) -> CheckRow:
    if m.task is not None:
        return separation_row(None, cfg.separation_sets, cfg.separation_min,
                              "a wind tunnel has one domain (its task)")
    a, b = cfg.separation_sets
    sub = GeometryConfig(model=cfg.model, prompts=(a, b), out=_sub(cfg, "geometry"),
                         layers=(-1,), n_per_quintile=cfg.geometry_per_quintile,
                         pool_size=cfg.geometry_pool, n_resamples=cfg.geometry_bootstrap,
                         curve_resamples=cfg.geometry_bootstrap, seed=cfg.seed,
                         batch_size=cfg.batch_size, progress=cfg.progress, restart=cfg.restart)
    check_config(sub)  # a setting it cannot run is the user's to fix, not "not measurable"
    try:
        res = _reused(parts, "geometry", sub, m, GeometryResult, run_geometry, cfg.restart)
    except (ExperimentError, PoolError) as e:
        return separation_row(None, cfg.separation_sets, cfg.separation_min, str(e))
    return separation_row(res, cfg.separation_sets, cfg.separation_min, str(sub.out))


def run_monitor(cfg: MonitorConfig, model: interp.InterpModel | None = None) -> MonitorResult:
    """Run every check (module doc); write table.parquet, table.csv, summary.json,
    manifest.json and report.html under ``cfg.out``, each sub-run in its own sub-folder."""
    expect_config(cfg, MonitorConfig, "run_monitor")
    check_with(cfg, model)  # an open model's kind and layers, not cfg.model's
    t0 = time.perf_counter()
    m = model if model is not None else open_model(cfg.model)
    path = Path(cfg.model) if cfg.model is not None and m.task is not None else None
    with claim(cfg, m) as rd:
        parts = Parts(rd.out)
        rows = [_key_check(cfg, parts, m), *_posterior_checks(cfg, parts, m),
                _separation_check(cfg, parts, m),
                extrapolation_row(path, cfg.extrapolation, cfg.extrapolation_min),
                convergence_row(path, cfg.convergence_mae_bits, cfg.convergence_max_steps)]
        res = MonitorResult(model=m.info.name, kind="wind tunnel" if m.task is not None else
                            "language model", rows=rows, thresholds=cfg.thresholds(),
                            wall_s=round(time.perf_counter() - t0, 2))
        _write(cfg, m, res)
        rd.finish()
    return res


def _write(cfg: MonitorConfig, m: interp.InterpModel, res: MonitorResult) -> None:
    from .report import write_report

    table = res.table()
    write_run(cfg, res, model=m, tables={"table.parquet": table, "table.csv": table},
              report=lambda path, manifest: write_report(path, res, manifest))

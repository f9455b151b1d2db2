"""``bayesgeom steer``: is the entropy axis *used* by the model, or only a readout?

On prompts with an exact Bayes posterior over a few hypothesis tokens (SULA for a pretrained LLM,
the model's own task for a wind tunnel; :class:`windtunnel.PosteriorPrompts`):

1. a clean pass records, at each chosen layer ℓ, the final-token activations x of the site
   (``attn.ℓ.v`` by default), the model posterior (next token restricted to the hypotheses) and
   what the edited passes reuse (:mod:`analyses.steer.passes`);
2. per layer, the entropy axis is fitted to x and the model entropy
   (:func:`probes.fit_entropy_axis`, PC1 of standardised activations by default, oriented so its
   coordinate rises with entropy);
   edits go along its unit direction u in ``edit_space`` -- the raw-space readout direction
   (default; a full cut makes the axis coordinate constant) or, as in Paper III's code, the
   standardised PC1 used as a raw direction -- with σ = std(x·u);
3. each condition edits every chosen layer at once: ``cut`` x − f(x·u)u for each fraction f
   (dose–response), ``keep_only`` (x·u)u, ``shift`` x + δσu for each δ; and the same edit along
   ``n_random`` control directions per layer, orthogonal to u (``null``: by default random
   directions drawn independently, each carrying the axis' energy where the edits are applied
   exactly; the orthonormal frames of that energy where they can carry it, the older
   ``variance`` null, ``norm``-matched random ones, or the other principal components ``pcs``;
   :mod:`analyses.steer.nulls`), by default enough that a primary verdict no control reaches
   survives Holm with :data:`analyses.steer.config.MARGIN` controls to spare
   (:func:`analyses.steer.config.controls_needed`). Shifts move every direction by the axis'
   δσ. The energy each edit moves where it is applied, mean ‖x' − x‖² / mean ‖x‖² over every
   edited position of the clean pass, is recorded for the axis and every control;
4. every pass is scored for its **total** effect, the **norm_frozen** effect (final norm's scale
   frozen at its clean value, :mod:`interp.norm_freeze`) and, with ``direct_path`` (one layer
   only), the **direct_path** effect (downstream components held clean); metrics in
   :mod:`analyses.steer.scores` -- a wind tunnel's next-token metrics read only its trained
   hypothesis logits;
5. per condition, effect and metric, the axis effect is compared with its controls
   (:func:`probes.null_test`: p = (1 + #{|null| ≥ |effect|}) / (n + 1), floor 1/(n + 1)), Holm-
   adjusted over all tests and over the declared primary family (ΔKL(Bayes ‖ model), total
   effect, one per condition), with a parametric z-test beside it where the controls' effects
   are normal, the effective number of the controls' per-prompt effects, and no verdict where
   the controls do not move the axis' energy (:mod:`analyses.steer.stats`); the per-prompt
   KL(Bayes ‖ model) of every pass is kept (``per_prompt.parquet``).

Each finished condition is a part (:class:`records.Parts`) under ``parts/``; a rerun with the
same configuration, model and prompts resumes from there.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import interp
from ...probes import AxisProvenance, fit_entropy_axis, prompt_set_hash
from ...records import Parts, expect_config, fingerprint
from ...records.budget import check_time
from ...records.heap import HeapTrimmer
from ...records.progress import tqdm
from ...windtunnel import PosteriorPrompts, TaskConfigError
from ...windtunnel.learned import LearnedCheck
from ..kit.errors import ExperimentError
from ..kit.learned import learned_of
from ..kit.models import model_of
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.sula import model_posterior_prompts
from .config import QUICK_CONTROLS, SteerConfig  # noqa: F401 (re-exported)
from .nulls import LayerAxis, edit_directions, edit_energy
from .passes import EFFECTS, HEAD_RTOL, Runner
from .result import AxisInfo, CleanScores, EffectStat, Resume, SteerResult
from .scores import CleanRef, PassScores, conditions, energy_rows, per_prompt_rows, score, tidy
from .stats import (
    PRIMARY_EFFECT,
    PRIMARY_METRIC,
    confound_notes,
    controls_adequate,
    controls_needed,
    effects_table,
)


# ---------------------------------------------------------------- prompts
def posterior_prompts(cfg: SteerConfig, model: interp.InterpModel) -> PosteriorPrompts:
    """The experiment's prompts: SULA (main condition) for a text model, the model's own task
    for a wind tunnel."""
    try:
        return model_posterior_prompts(model, cfg)
    except TaskConfigError as e:
        raise ExperimentError(str(e)) from e


def fit_axes(acts: dict[int, np.ndarray], h: np.ndarray, sites: list[str], layers: list[int],
             model: interp.InterpModel, pp: PosteriorPrompts, cfg: SteerConfig,
             out: Path) -> dict[int, LayerAxis]:
    """Per layer, the entropy axis of the clean activations (saved under ``out/axes``) with its
    edit direction in ``cfg.edit_space`` and σ."""
    reads = {}
    for L, site in zip(layers, sites, strict=True):
        x = acts[L].astype(np.float64)
        prov = AxisProvenance(model=model.info.name, revision=model.info.revision, site=site,
                              layer=L, prompt_set=pp.name,
                              prompt_set_hash=prompt_set_hash([str(p) for p in pp.prompts]),
                              target="model posterior entropy over the hypotheses (bits)")
        ax = fit_entropy_axis(x, h, method=cfg.axis_method, provenance=prov,  # type: ignore[arg-type]
                              seed=cfg.seed)
        ax.save(out / "axes" / f"L{L}")
        reads[L] = LayerAxis.of(ax, x, cfg.edit_space)
    return reads


# ---------------------------------------------------------------- run
def run_steer(cfg: SteerConfig, model: interp.InterpModel | None = None,
              prompts: PosteriorPrompts | None = None) -> SteerResult:
    """Run the experiment (module doc); write table/effects/summary/manifest/report under
    ``cfg.out`` and return the typed result."""
    expect_config(cfg, SteerConfig, "run_steer")
    t0 = time.perf_counter()
    m = model_of(cfg, model, "steering")  # an open model's kind and layers, not cfg.model's
    cfg = cfg.sized()
    try:
        layers = interp.resolve_layers(cfg.layers, m.n_layers)
    except interp.InterpError as e:
        raise ExperimentError(str(e)) from None
    pp = prompts if prompts is not None else posterior_prompts(cfg, m)
    vocab = pp.hyp_ids if m.task is not None else None  # a wind tunnel: trained logits only
    with claim(cfg, m) as rd:
        fp = fingerprint(rd.settings, [str(p) for p in pp.prompts], pp.bayes.round(12))
        learned = learned_of(m, progress=cfg.progress)  # a tunnel's verdicts stand behind it
        result = _steer(cfg, m, layers, pp, vocab, fp, t0, learned)
        rd.finish()
    return result


#: an edited pass costs at least the clean pass' time over this (the run's time check)
EDITED_PASS_FLOOR = 20


def _steer(cfg: SteerConfig, m: interp.InterpModel, layers: list[int], pp: PosteriorPrompts,
           vocab: Any, fp: str, t0: float, learned: LearnedCheck | None) -> SteerResult:
    out = Path(cfg.out)

    sites = [interp.site_name(cfg.site, L) for L in layers]
    runner = Runner(m, pp, sites, layers, batch_size=cfg.batch_size, norm_frozen=cfg.norm_frozen,
                    direct_path=cfg.direct_path, progress=cfg.progress, positions=cfg.positions)
    t_pass = time.perf_counter()
    clean_out = runner.clean()
    n_random = cfg.n_random or 0  # set by cfg.sized()
    # an edited pass resumes at its layer and shares a stacked forward with its condition's
    # other passes: 0.08-0.8x a bare forward (benchmarks/steer_passes.py), so the floor here
    # is a twentieth of the clean pass
    check_time((time.perf_counter() - t_pass) / EDITED_PASS_FLOOR,
               cfg.n_conditions * (n_random + 1),
               f"steering against {n_random:,} controls per layer", "--n-random",
               unit=f"edited passes (each at least 1/{EDITED_PASS_FLOOR} of the clean pass' "
               "time)", error=ExperimentError)
    if (cfg.direct_path and runner.head_rel_error is not None
            and runner.head_rel_error > HEAD_RTOL):
        raise ExperimentError(f"the direct path needs logits = output embedding(final norm(final "
                         f"residual)); on this model they differ by {runner.head_rel_error:.2g} "
                         "(relative), so drop --direct-path")
    t_clean = time.perf_counter() - t0
    clean, h_clean = score(clean_out, pp, {}, None, vocab)
    reads = fit_axes(clean_out.acts, h_clean, sites, layers, m, pp, cfg, out)
    clean.read_axes(clean_out.acts, h_clean, reads)
    ref = CleanRef.of(clean_out, vocab)
    try:
        directions = edit_directions(reads, clean_out.acts, runner.moments, cfg.null,
                                     cfg.n_random, cfg.seed)
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    sigmas = [reads[L].sigma for L in layers]

    parts = Parts(out / "parts")
    # a finished condition is reused only with the very directions it was edited along
    fp_parts = fingerprint(fp, hashlib.sha256(b"".join(
        t.numpy().tobytes() for _, dirs in directions for t in dirs)).hexdigest())
    rows = tidy(clean, "clean", "clean", float("nan"), "none", "clean", pp.group_name)
    per_prompt = [per_prompt_rows(clean, "clean", "none", "clean")]
    conds = conditions(cfg.cut_fractions, cfg.keep_only, cfg.shift_deltas)
    bar = tqdm(total=len(conds) * len(directions), desc="edited passes", unit="pass",
               disable=not cfg.progress)
    reused = 0
    trim = HeapTrimmer()  # freed logits returned to the system: the heap kept growing per pass
    for cond in conds:
        hit = parts.get(cond.key, fp_parts)
        if hit is not None and "per_prompt" in hit:
            rows += hit["table"].to_dict("records")
            per_prompt.append(hit["per_prompt"])
            bar.update(len(directions))
            reused += 1
            continue
        crow: list[dict] = []
        cprompt: list[pd.DataFrame] = []
        names = [dname for dname, _ in directions]
        edits = [cond.interventions(sites, dirs, sigmas, cfg.positions) for _, dirs in directions]
        # the axis and its controls: replicas of one forward (passes.Runner.edited_many)
        for dname, ivs, passes in zip(names, edits, runner.edited_many(edits), strict=True):
            crow += energy_rows({L: edit_energy(runner.moments[L], iv)
                                 for L, iv in zip(layers, ivs, strict=True)}, cond, dname)
            while passes:  # each pass dropped once scored, not kept alive into the next edit
                eff = next(iter(passes))
                s, _ = score(passes.pop(eff), pp, reads, ref, vocab)
                crow += tidy(s, cond.key, cond.kind, cond.param, dname, eff, pp.group_name)
                cprompt.append(per_prompt_rows(s, cond.key, dname, eff))
                trim.step()
            bar.update(1)
        part_prompts = pd.concat(cprompt, ignore_index=True)
        parts.put(cond.key, fp_parts, table=pd.DataFrame(crow), per_prompt=part_prompts)
        rows += crow
        per_prompt.append(part_prompts)
    bar.close()

    table = pd.DataFrame(rows)
    for col in ("group", "layer"):
        table[col] = table[col].astype("Int64")
    prompt_table = pd.concat(per_prompt, ignore_index=True)
    controls = {str(L): directions.controls[L] for L in layers}
    effects = effects_table(table, layers[-1], prompt_table,
                            independent=all(c.independent for c in controls.values()))
    effs = [e for e, on in zip(EFFECTS, (True, cfg.norm_frozen, cfg.direct_path), strict=True)
            if on]
    primary = effects[effects["primary"]] if len(effects) else effects
    result = SteerResult(
        model=m.info.name, model_info=m.info, task=pp.name, n_prompts=len(pp),
        group_name=pp.group_name, layers=layers, sites=sites, positions=cfg.positions,
        n_random=cfg.n_random, norm_frozen=cfg.norm_frozen, direct_path=cfg.direct_path,
        null=cfg.null, edit_space=cfg.edit_space,
        vocabulary="hypotheses" if vocab is not None else "full", fingerprint=fp,
        resume=Resume(runner.start, runner.resumed, runner.resume_rel_error),
        axes={str(L): AxisInfo(r.axis.method, r.axis.pearson, r.axis.spearman,
                               r.axis.explained_variance_ratio, r.sigma, r.axis.dim)
              for L, r in reads.items()},
        controls=controls, clean=_clean(clean),
        conditions=[c.key for c in conds],
        headline={c.key: {e: _headline(effects, c.key, e) for e in effs} for c in conds},
        primary=f"{PRIMARY_METRIC} ({PRIMARY_EFFECT} effect)",
        survivors=[str(c) for c in primary[primary["survives"]]["condition"]],
        survivors_parametric=[str(c) for c in
                              primary[primary["survives_parametric"]]["condition"]],
        controls_adequate=controls_adequate(controls, effects),
        notes=confound_notes(runner.last_positions, pp.h_bayes_bits, cfg.seed),
        controls_needed=controls_needed(len(conds)), quick=cfg.quick,
        verdict_withheld=bool(len(primary) and primary["verdict_withheld"].all()),
        wall_s=round(time.perf_counter() - t0, 2), clean_pass_s=round(t_clean, 2),
        reused_conditions=reused, learned=learned)
    from .report import write_report

    prompts = pp.table().assign(h_model_clean_bits=h_clean,
                                **{f"axis_L{L}": clean_out.acts[L] @ reads[L].unit
                                   for L in layers})
    write_run(cfg, result, model=m, fingerprint=fp,
              tables={"table.parquet": table, "effects.parquet": effects,
                      "prompts.parquet": prompts, "per_prompt.parquet": prompt_table},
              report=lambda path, manifest: write_report(path, result, table, effects, manifest))
    return result


def _clean(s: PassScores) -> CleanScores:
    return CleanScores(s.cal.mae, s.cal.corr, s.kl_bayes, s.cal.h_model,
                       {str(k): v for k, v in s.axis_corr.items()}, s.per_group,
                       {str(k): v for k, v in s.axis_proj_corr.items()})


def _headline(effects: pd.DataFrame, cond: str, effect: str) -> dict[str, EffectStat]:
    sel = effects[(effects["condition"] == cond) & (effects["effect"] == effect)]
    return {r["metric"]: EffectStat.of(r) for r in sel.to_dict("records")}

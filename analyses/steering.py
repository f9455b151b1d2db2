"""``bayesgeom steer``: is the entropy axis *used* by the model, or only a readout?

On prompts with an exact Bayes posterior over a few hypothesis tokens (SULA for a pretrained LLM,
the model's own task for a wind tunnel; :class:`windtunnel.PosteriorPrompts`):

1. a clean pass records, at each chosen layer ℓ, the final-token activations of the site
   (``attn.ℓ.v`` by default), the model posterior (next token restricted to the hypotheses), the
   residual stream entering the first edited layer and the final norm's scale
   (:mod:`analyses.steering_passes`);
2. per layer, the entropy axis is fitted to those activations and the model entropy
   (:func:`probes.fit_entropy_axis`, PC1 of standardised activations by default, oriented so its
   coordinate rises with entropy); edits use its raw-space readout direction u (a full cut makes
   the axis coordinate constant) and σ = std(x·u);
3. each condition edits every chosen layer at once: ``cut`` x − f(x·u)u for each fraction f
   (dose–response), ``keep_only`` (x·u)u, ``shift`` x + δσu for each δ; and the same edit along
   ``n_random`` random directions per layer with u's norm, orthogonal to u (shifts use the axis'
   σ, so every control moves activations by exactly as much);
4. every pass is scored twice: the **total** effect, and the **direct** effect with the final
   norm's scale frozen at its clean value (:mod:`interp.norm_freeze`);
5. per condition and metric, the axis effect is compared with the random-direction null
   (:func:`probes.null_test`: p = (1 + #{|null| ≥ |effect|}) / (n + 1)); metrics in
   :mod:`analyses.steering_scores`.

Each finished condition is a part (:class:`records.Parts`) under ``parts/``; a rerun with the
same configuration, model and prompts resumes from there.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

import interp
from analyses.models import open_model
from analyses.options import (
    batch_size_option,
    comma_floats,
    comma_ints,
    dtype_option,
    model_option,
    out_option,
    progress_option,
    seed_option,
)
from analyses.results import AxisInfo, CleanScores, EffectStat, Resume, SteerResult
from analyses.steering_passes import Runner
from analyses.steering_scores import (
    CleanRef,
    PassScores,
    axis_corr,
    conditions,
    edit_directions,
    effects_table,
    score,
    tidy,
)
from analyses.sula_prompts import pick_labels, sula_prompts
from interp.sites import VECTOR_KINDS
from probes import AxisProvenance, EntropyAxis, fit_entropy_axis, prompt_set_hash
from records import (
    Parts,
    check_options,
    fingerprint,
    option,
    run_manifest,
    write_json,
    write_result,
    write_table,
)
from windtunnel import PosteriorPrompts, TaskConfigError
from windtunnel.sula import ALPHA, KS


class SteerError(ValueError):
    """The experiment cannot run as configured; the message says what to change."""


@dataclass
class SteerConfig:
    """One steering experiment (the CLI derives its options from this)."""

    model: str | None = model_option()
    task: str | None = option(None, "sula for a text model (default); a wind-tunnel run's own "
                                    "task (default: the run's)")
    out: Path = out_option("runs/steer", "output directory (an unfinished run resumes)")
    site: str = option("attn.v", "site kind edited at each layer (attn.v: the values)",
                       choices=VECTOR_KINDS)
    layers: tuple[int, ...] = option((-1,), "edited layers, e.g. -1 or 8,12,16,20,23 (each "
                                            "its own axis)", parse=comma_ints)
    positions: str = option("all", "edit every real token, or the last one",
                            choices=("all", "last"))
    axis_method: str = option("pc1", "how the entropy axis is fitted",
                              choices=("pc1", "ridge", "mean_difference"))
    cut_fractions: tuple[float, ...] = option((0.25, 0.5, 0.75, 1.0), "fractions of the axis "
                                              "component removed", flag="--cut",
                                              parse=comma_floats, min=0.0, max=2.0)
    keep_only: bool = option(True, "the keep-only condition", negate="--no-keep-only")
    shift_deltas: tuple[float, ...] = option((-2.0, -1.0, 1.0, 2.0), "shifts δ in units of σ",
                                             flag="--shift", parse=comma_floats)
    n_random: int = option(20, "random control directions per layer", min=1)
    direct: bool = option(True, "the direct effect (final-norm scale frozen)",
                          negate="--no-direct")
    seed: int = seed_option()
    n_per_k: int = option(50, "SULA prompts per k", min=1)
    sula_seed: int = option(42, "seed of the SULA draws", cli=False)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip")
    n_prompts: int = option(250, "wind-tunnel prompts", min=3)
    batch_size: int = batch_size_option(32)
    dtype: str | None = dtype_option()
    progress: bool = progress_option()

    def check(self) -> None:
        check_options(self, SteerError)
        if not self.layers:
            raise SteerError("give at least one layer")
        if not (self.cut_fractions or self.keep_only or self.shift_deltas):
            raise SteerError("no condition to run: give cut fractions, shift deltas or keep-only")
        if 0.0 in self.cut_fractions:
            raise SteerError("cut fractions must be in (0, 2]; 0 is the clean run")
        if 0.0 in self.shift_deltas:
            raise SteerError("shift deltas must be finite and non-zero (δ = 0 is the clean run)")


# ---------------------------------------------------------------- prompts
def posterior_prompts(cfg: SteerConfig, model: interp.InterpModel) -> PosteriorPrompts:
    """The experiment's prompts: SULA (main condition) for a text model, the model's own task
    for a wind tunnel."""
    if model.task is not None:
        name = model.task.name
        if cfg.task not in (None, name):
            raise SteerError(f"this wind-tunnel model was trained on {name!r}; it cannot run "
                             f"task {cfg.task!r} (use --task {name} or leave it out)")
        try:
            return model.task.posterior_prompts(cfg.n_prompts, cfg.seed)
        except TaskConfigError as e:
            raise SteerError(str(e)) from e
    if cfg.task not in (None, "sula"):
        raise SteerError(f"task {cfg.task!r} needs a wind-tunnel model trained on it; text "
                         "models run the in-context task 'sula'")
    lab, rem, ids = pick_labels(model.tokenizer, cfg.labels)
    return sula_prompts("main", ks=KS, n_per_k=cfg.n_per_k, alpha=ALPHA, seed=cfg.sula_seed,
                        labels=lab, remap_labels=rem, ids=ids)


def fit_axes(acts: dict[int, np.ndarray], h: np.ndarray, sites: list[str], layers: list[int],
             model: interp.InterpModel, pp: PosteriorPrompts, method: str, seed: int,
             out: Path) -> tuple[dict[int, EntropyAxis], dict[int, float]]:
    """Per layer, the entropy axis of the clean activations (saved under ``out/axes``) and the
    std σ of the projection on its readout direction."""
    axes, sigmas = {}, {}
    for L, site in zip(layers, sites, strict=True):
        x = acts[L].astype(np.float64)
        prov = AxisProvenance(model=model.info.name, revision=model.info.revision, site=site,
                              layer=L, prompt_set=pp.name,
                              prompt_set_hash=prompt_set_hash([str(p) for p in pp.prompts]),
                              target="model posterior entropy over the hypotheses (bits)")
        axes[L] = fit_entropy_axis(x, h, method=method, provenance=prov,  # type: ignore[arg-type]
                                   seed=seed)
        axes[L].save(out / "axes" / f"L{L}")
        sigmas[L] = float((x @ axes[L].readout_direction).std(ddof=1))
    return axes, sigmas


# ---------------------------------------------------------------- run
def run_steer(cfg: SteerConfig, model: interp.InterpModel | None = None,
              prompts: PosteriorPrompts | None = None) -> SteerResult:
    """Run the experiment (module doc); write table/effects/summary/manifest/report under
    ``cfg.out`` and return the typed result."""
    cfg.check()
    t0 = time.perf_counter()
    out = Path(cfg.out)
    m = model if model is not None else open_model(cfg.model, dtype=cfg.dtype)
    if m.info.backend != "hf":
        raise SteerError("steering needs the 'hf' backend (hooks on the HF modules)")
    try:
        layers = interp.resolve_layers(cfg.layers, m.n_layers)
    except interp.InterpError as e:
        raise SteerError(str(e)) from None
    pp = prompts if prompts is not None else posterior_prompts(cfg, m)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("out", "progress",
                                                                   "batch_size")}
    fp = fingerprint(settings, m.weights_digest(), [str(p) for p in pp.prompts],
                     pp.bayes.round(12))
    out.mkdir(parents=True, exist_ok=True)

    sites = [interp.site_name(cfg.site, L) for L in layers]
    runner = Runner(m, pp, sites, layers, batch_size=cfg.batch_size, direct=cfg.direct,
                    progress=cfg.progress)
    clean_out = runner.clean()
    t_clean = time.perf_counter() - t0
    clean, h_clean = score(clean_out, pp, {}, None)
    axes, sigmas = fit_axes(clean_out.acts, h_clean, sites, layers, m, pp, cfg.axis_method,
                            cfg.seed, out)
    units = {L: ax.readout_direction for L, ax in axes.items()}
    clean.axis_corr = {L: axis_corr(clean_out.acts[L] @ units[L], h_clean, sigmas[L])
                       for L in layers}
    ref = CleanRef.of(clean_out)
    directions = edit_directions(units, cfg.n_random, cfg.seed)

    parts = Parts(out / "parts")
    rows = tidy(clean, "clean", "clean", float("nan"), "none", "clean", pp.group_name)
    conds = conditions(cfg.cut_fractions, cfg.keep_only, cfg.shift_deltas)
    bar = tqdm(total=len(conds) * len(directions), desc="edited passes", unit="pass",
               disable=not cfg.progress)
    reused = 0
    for cond in conds:
        hit = parts.get(cond.key, fp)
        if hit is not None:
            rows += hit["table"].to_dict("records")
            bar.update(len(directions))
            reused += 1
            continue
        crow: list[dict] = []
        for dname, dirs in directions:
            ivs = cond.interventions(sites, dirs, [sigmas[L] for L in layers], cfg.positions)
            total, direct = runner.edited(ivs)
            for eff, po in (("total", total), ("direct", direct)):
                if po is None:
                    continue
                if eff == "direct":
                    po.acts = total.acts
                s, _ = score(po, pp, {L: (units[L], sigmas[L]) for L in layers}, ref)
                crow += tidy(s, cond.key, cond.kind, cond.param, dname, eff, pp.group_name)
            bar.update(1)
        parts.put(cond.key, fp, table=pd.DataFrame(crow))
        rows += crow
    bar.close()

    table = pd.DataFrame(rows)
    for col in ("group", "layer"):
        table[col] = table[col].astype("Int64")
    effects = effects_table(table, clean, layers[-1])
    result = SteerResult(
        model=m.info.name, model_info=m.info, task=pp.name, n_prompts=len(pp),
        group_name=pp.group_name, layers=layers, sites=sites, positions=cfg.positions,
        n_random=cfg.n_random, direct=cfg.direct, fingerprint=fp,
        resume=Resume(runner.start, runner.resumed, runner.resume_rel_error),
        axes={str(L): AxisInfo(ax.method, ax.pearson, ax.spearman, ax.explained_variance_ratio,
                               sigmas[L], ax.dim) for L, ax in axes.items()},
        clean=_clean(clean),
        conditions=[c.key for c in conds],
        headline={c.key: {e: _headline(effects, c.key, e)
                          for e in (("total", "direct") if cfg.direct else ("total",))}
                  for c in conds},
        wall_s=round(time.perf_counter() - t0, 2), clean_pass_s=round(t_clean, 2),
        reused_conditions=reused)
    write_table(out / "table.parquet", table)
    write_table(out / "effects.parquet", effects)
    write_table(out / "prompts.parquet", pp.table().assign(
        h_model_clean_bits=h_clean, **{f"axis_L{L}": clean_out.acts[L] @ units[L]
                                       for L in layers}))
    manifest = run_manifest(seed=cfg.seed, dtype=m.info.dtype, model=m.info.to_dict(),
                            steer=asdict(cfg), fingerprint=fp)
    write_json(out / "manifest.json", manifest)
    write_result(out / "summary.json", result)
    from analyses.steering_report import write_report

    write_report(out / "report.html", result, table, effects, manifest)
    return result


def _clean(s: PassScores) -> CleanScores:
    return CleanScores(s.cal.mae, s.cal.corr, s.kl_bayes, s.cal.h_model,
                       {str(k): v for k, v in s.axis_corr.items()}, s.per_group)


def _headline(effects: pd.DataFrame, cond: str, effect: str) -> dict[str, EffectStat]:
    sel = effects[(effects["condition"] == cond) & (effects["effect"] == effect)]
    return {r["metric"]: EffectStat(r["axis"], r["null_mean"], r["p"], r["z"])
            for r in sel.to_dict("records")}

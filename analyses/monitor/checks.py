"""How each row of ``bayesgeom monitor``'s checklist (:class:`analyses.monitor.result.CheckRow`)
is built from what the run reads -- a detect, verify or geometry result, an extrapolate run's
``summary.json``, a wind tunnel's training log -- with each check's stated definition; a check
that cannot be read on this model is a row saying why."""

from __future__ import annotations

import math
from pathlib import Path

from ...records import read_result
from ...windtunnel.runs import LOG, find_run
from ..detect.result import DetectResult
from ..extrapolate.result import ExtrapolateResult
from ..geometry.result import GeometryResult
from ..verify.result import VerifyResult
from .result import CheckRow, measured_row, unmeasurable_row

KEY_DEF = ("detect's orthogonality score of the key frame, 1 − mean |cos| over pairs of its "
           "unit-length keys (Paper I's mean off-diagonal |cos|, no centring; 1 = pairwise "
           "orthogonal) at the best layer, mean over its kv heads")
COVERAGE_DEF = ("mean over verify's prompts of Σ_h p_Bayes(h)·[p_model(h) ≥ ½ p_Bayes(h)]: the "
                "posterior mass on hypotheses the model keeps alive (1 for the exact posterior)")
SEPARATION_DEF = ("mean principal angle between two domains' 90 %-variance value subspaces at "
                  "the last layer (geometry's manifold_mean_angle_deg) / 90°; 1 orthogonal")
KL_DEF = ("output KL: verify's mean KL(p_Bayes ‖ p_model) of the model's *output* (next-token "
          "distribution renormalised over the K hypothesis tokens) at each prompt's final "
          "position -- output calibration, not attention")
EXTRAPOLATION_DEF = ("largest multiple m of the training length L whose retrieval accuracy, "
                     "and every smaller multiple's, stays within the run's tolerance of the "
                     "accuracy at L (bayesgeom extrapolate)")
#: the output-KL check's name: the brief's "posterior KL" row, read on the output
KL_CHECK = "posterior KL of the output"
CONVERGENCE_DEF = ("first logged eval step at which the held-out per-sample entropy MAE "
                   "|H_model − H_Bayes| (eval_entropy_mae_bits) is ≤ {level:g} bits")


#: why a pass means less with more keys than dimensions (measured: ±e_i in d = 16)
ANTIPARALLEL = ("with more keys than dimensions a frame can pass with antiparallel pairs, which "
                "|cos| counts as parallel only once per pair: the 32 keys ±e_i in d = 16 score "
                "0.968, so a pass here is not a set of orthogonal directions")


def key_row(res: DetectResult | None, threshold: float, where: str) -> CheckRow:
    """From a ``DetectResult`` (None: not measurable, ``where`` says why; else ``where`` is
    its folder)."""
    name, unit = "key orthogonality", "score in [0, 1]"
    if res is None:
        return unmeasurable_row(name, KEY_DEF, unit, ">", threshold, where)
    means = res.layer_means()
    tr = means[means["condition"] == "trained"].set_index("layer")
    tw = means[means["condition"] == "random_init"].set_index("layer")
    best = int(tr["orthogonality"].idxmax())
    lo, hi = tr["orthogonality"].min(), tr["orthogonality"].max()
    m, d = res.n_frame_tokens, res.d_head
    shape = (f"m = {m} ≤ d = {d}" if m <= d else
             f"m = {m} > d = {d}: not orthogonalisable, Welch ceiling "
             f"{tr.at[best, 'ceiling']:.3f}, score ÷ ceiling {tr.at[best, 'vs_ceiling']:.3f}; "
             f"{ANTIPARALLEL}")
    return measured_row(
        name, KEY_DEF, unit, float(tr.at[best, "orthogonality"]), ">", threshold,
        control=float(tw.at[best, "orthogonality"]),
        control_label=f"random-init twin at layer {best}",
        reference=float(tr.at[best, "chance"]),
        reference_label=f"random vectors: 1 − E|cos| of Gaussian vectors in R^{d}",
        note=(f"layer {best} of {len(tr)} ({res.frame}; {shape}); layers range "
              f"{lo:.3f}–{hi:.3f}; isotropy there {tr.at[best, 'isotropy']:.3f}"),
        source=where)


def posterior_rows(res: VerifyResult, cov: dict[str, float], coverage_min: float,
                   kl_max: float, where: str) -> list[CheckRow]:
    """Coverage and KL from a ``VerifyResult`` and the mean coverages (model,
    random_init, uniform)."""
    out = {o.source: o for o in res.outputs}
    task = f"{res.task}, {res.n_prompts} prompts, K = {res.n_hypotheses}"
    return [
        measured_row("hypothesis-space coverage", COVERAGE_DEF, "fraction of posterior mass",
                     cov["model"], ">", coverage_min, control=cov["random_init"],
                     control_label="random-init twin", reference=cov["uniform"],
                     reference_label="the uniform distribution over the K hypotheses",
                     note=task, source=where),
        measured_row(KL_CHECK, KL_DEF, "bits", out["model"].mean_kl_bits, "<", kl_max,
                     control=out["random_init"].mean_kl_bits,
                     control_label="random-init twin",
                     reference=out["group_mean_baseline"].mean_kl_bits,
                     reference_label=f"group-mean baseline (the mean posterior per "
                                     f"{res.group_name})",
                     note=f"{task}; attention–posterior consistency (not judged here): "
                          f"{_attention_note(res)}", source=where)]


def _attention_note(res: VerifyResult) -> str:
    a = res.attention
    if a.consistency != a.consistency:
        return f"undefined ({a.reason})"
    return (f"best head {a.best_head} {a.consistency:.3f} (random-init twin's best "
            f"{a.random_init:.3f}, uniform attention {a.uniform:.3f})")


def unmeasurable_posterior_rows(coverage_min: float, kl_max: float, why: str,
                                ) -> list[CheckRow]:
    return [unmeasurable_row("hypothesis-space coverage", COVERAGE_DEF,
                             "fraction of posterior mass", ">", coverage_min, why),
            unmeasurable_row(KL_CHECK, KL_DEF, "bits", "<", kl_max, why)]


def separation_row(res: GeometryResult | None, sets: tuple[str, str], threshold: float,
                   where: str) -> CheckRow:
    """From a ``GeometryResult`` over the two sets (None: not measurable, ``where`` says
    why)."""
    name, unit = "domain-manifold separation", "mean angle / 90°"
    if res is None:
        return unmeasurable_row(name, SEPARATION_DEF, unit, ">", threshold, where)
    pair = f"{sets[0]}|{sets[1]}"

    def angle(metric: str, reference: str = "model") -> float:
        got = [r.value for r in res.metrics
               if r.metric == metric and r.target == pair and r.reference == reference]
        return got[0] / 90.0 if got else math.nan

    value = angle("manifold_mean_angle_deg")
    if not math.isfinite(value):
        return unmeasurable_row(name, SEPARATION_DEF, unit, ">", threshold,
                                f"the geometry run in {where} has no {pair} manifold angle")
    return measured_row(name, SEPARATION_DEF, unit, value, ">", threshold,
                        control=angle("manifold_mean_angle_deg", "random_init"),
                        control_label="random-init twin",
                        reference=angle("manifold_random_mean_angle_deg"),
                        reference_label="random subspaces of the same dimensions",
                        note=f"{pair} at layer {res.layer}, {res.headline.n_prompts} prompts per "
                             "set",
                        source=where)


def extrapolation_row(path: Path | None, run_dir: Path | None, threshold: float) -> CheckRow:
    """The ratio of the model's scheme in a finished extrapolate run (module doc); ``path``:
    the model's wind-tunnel run directory (None for a language model)."""
    name, unit = "extrapolation ratio", "multiple of L"

    def no(why: str) -> CheckRow:
        return unmeasurable_row(name, EXTRAPOLATION_DEF, unit, ">", threshold, why)

    if run_dir is None:
        return no("no extrapolation run given (--extrapolation, the --out of `bayesgeom "
                  "extrapolate`)" + ("" if path else "; a pretrained LLM is not trained at a "
                                     "length L here"))
    if not (Path(run_dir) / "summary.json").is_file():
        return no(f"{run_dir} has no summary.json (its extrapolate run has not finished)")
    res = read_result(ExtrapolateResult, Path(run_dir) / "summary.json")
    archs = {(Path(run_dir) / "train" / s.arch).resolve(): s for s in res.schemes}
    scheme = archs.get(path.resolve()) if path is not None else None
    if scheme is None:
        return no(f"the model is not one of {run_dir}'s trained models "
                  f"({', '.join(s.arch for s in res.schemes)} under {run_dir}/train)")
    learned = {s.arch: s for s in res.schemes}.get("llama")
    return measured_row(
        name, EXTRAPOLATION_DEF, unit, scheme.ratio, ">", threshold,
        control=learned.ratio if learned is not None else math.nan,
        control_label=("learned absolute positions (llama) in the same run" if learned else
                       "no learned-absolute (llama) scheme in the run"),
        note=(f"{scheme.arch} on long_recall, L = {res.length}, tolerance {res.tolerance:g}; "
              f"accuracy {scheme.accuracy_at_1:.3f} at L, {scheme.accuracy_at_max:.3f} at "
              f"{max(res.multiples)} L"), source=str(run_dir))


def convergence_row(path: Path | None, level: float, threshold: float) -> CheckRow:
    """Steps to the entropy-MAE ``level`` from a wind-tunnel run's training log (module doc);
    ``path``: its run directory (or ``<run>/model``), None for a language model."""
    name, unit = "convergence speed", "training steps"
    definition = CONVERGENCE_DEF.format(level=level)
    if path is None:
        return unmeasurable_row(name, definition, unit, "<=", threshold,
                                "a pretrained model has no training log here (nor a model "
                                "given without its run directory)")
    run = find_run(path, up=1)
    if run is None or not run.log_path.is_file():
        return unmeasurable_row(name, definition, unit, "<=", threshold,
                                f"{path} holds no finished training log ({LOG})")
    log = run.log(columns=("step", "eval_entropy_mae_bits"))
    ev = log.dropna(subset=["eval_entropy_mae_bits"]).sort_values("step")
    if ev.empty:
        return unmeasurable_row(name, definition, unit, "<=", threshold,
                                f"{run.log_path} has no evaluation rows")
    first, last = ev.iloc[0], ev.iloc[-1]
    hit = ev[ev["eval_entropy_mae_bits"] <= level]
    steps = float(hit["step"].iloc[0]) if len(hit) else math.nan
    done = int(run.steps_done or last["step"])
    every = int(ev["step"].diff().median()) if len(ev) > 1 else int(first["step"])
    note = (f"evals every {every} steps" if len(hit) else
            f"never ≤ {level:g} bits in {done} steps (last eval {last['eval_entropy_mae_bits']:.4f}"
            f" bits at step {int(last['step'])})")
    return measured_row(
        name, definition, unit, steps, "<=", threshold,
        control_label=(f"no control (a step count); MAE {first['eval_entropy_mae_bits']:.3f} "
                       f"bits at the first eval (step {int(first['step'])}), "
                       f"{last['eval_entropy_mae_bits']:.4f} at the last (step "
                       f"{int(last['step'])})"),
        note=note, source=str(run.log_path))

"""What a geometry run found (:mod:`analyses.geometry.run`): the verdict table its report and
summary open with, and the row builders ``compare`` shares, so a claim reads the same there.

Each claim is held against the run's own controls with the run's own numbers:

* a share, |ρ| or focusing with a bootstrap interval survives its **random-initialisation
  twin** when the two 95 % intervals do not overlap in the claimed direction (both are in the
  result); where either interval excludes its own estimate (a share's bootstrap from fewer
  prompts than dimensions, :mod:`probes.bootstrap`) it is not evidence, and there is no
  verdict;
* key orthogonality survives its twin when the trained keys are more orthogonal than the
  twin's same layer in at least half of the layers (the run's per-layer comparison,
  ``fraction_layers_below_init``, read with Paper III's ≥ 50 % of layers);
* a correlation with an entropy does not survive the **position** control where position alone
  explains that entropy (probe R² ≥ :data:`probes.POSITION_CONFOUND_R2`, the run's confound
  note).

Paper III's fixed thresholds (30 % shares and focusing, |cos| < 0.20) are stated beside, in the
evidence. Without a twin (``--no-init-baseline``) there is no verdict.

Example:
    >>> twin_gap(0.8, 0.7, 0.9, 0.3, 0.2, 0.4)
    (True, 'gap +0.5 over the twin; 95 % CIs 0.7–0.9 vs 0.2–0.4 do not overlap')
    >>> twin_gap(0.5, 0.3, 0.7, 0.4, 0.2, 0.6)[0]
    False
    >>> twin_gap(0.18, 0.19, 0.29, 0.12, 0.11, 0.15)  # the model's interval lies above 0.18
    (None, "interval excludes its estimate: not evidence (the model's): no verdict; gap +0.06 \
over the twin; 95 % CIs 0.19–0.29 vs 0.11–0.15 do not overlap")
"""

from __future__ import annotations

import math

from ...probes import POSITION_CONFOUND_R2
from ...probes.bootstrap import EXCLUDES_NOTE, excludes
from ...probes.validation_criteria import CriteriaThresholds
from ..kit.findings import Finding
from ..kit.learned import gate
from ..kit.numbers import sig
from .result import GeometryResult, abs_interval

NAN = math.nan
#: Paper III's thresholds, quoted in the evidence
PAPER3 = CriteriaThresholds()
NO_TWIN = "no random-init twin in this run (--no-init-baseline): no control to survive"


def _finite(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def twin_gap(value: float, low: float, high: float, twin: float | None,
             twin_low: float | None, twin_high: float | None, higher: bool = True,
             flagged: tuple[bool, bool] = (False, False)) -> tuple[bool | None, str]:
    """(survives, evidence) of a value with a 95 % interval against its twin's: it survives
    when the intervals do not overlap in the claimed direction (``higher``: above the twin).
    No verdict when either interval excludes its own estimate, or ``flagged`` (model, twin)
    says so (e.g. ρ's interval, which the interval of |ρ| can hide)."""
    if twin is None:
        return None, NO_TWIN
    gap = f"gap {value - twin:+.3g} over the twin" if _finite(value, twin) else "gap undefined"
    if not _finite(low, high, twin_low, twin_high):
        return None, f"{gap}; no interval to compare"
    assert twin is not None and twin_low is not None and twin_high is not None  # checked above
    apart = bool(low > twin_high if higher else high < twin_low)
    ev = (f"{gap}; 95 % CIs {sig(low)}–{sig(high)} vs {sig(twin_low)}–{sig(twin_high)} "
          f"{'do not overlap' if apart else 'overlap'}")
    whose = [who for who, bad in (("the model's", flagged[0] or excludes(value, low, high)),
                                  ("the twin's", flagged[1] or excludes(twin, twin_low,
                                                                        twin_high))) if bad]
    if whose:
        return None, f"{EXCLUDES_NOTE} ({' and '.join(whose)}): no verdict; {ev}"
    return apart, ev


def share_row(prefix: str, what: str, value: float, low: float, high: float,
              twin: float | None, twin_low: float | None, twin_high: float | None,
              paper: str) -> Finding:
    """A share or fraction with its interval against its twin (module doc)."""
    survives, ev = twin_gap(value, low, high, twin, twin_low, twin_high)
    return Finding(prefix + what, value,
                   control="random-init twin " + (sig(twin) if twin is not None else "none"),
                   survives=survives, evidence=f"{ev}; {paper}",
                   undefined="the analysis gave no finite number")


def rho_row(prefix: str, target: str, value: float, low: float, high: float,
            twin: float | None, twin_low: float | None, twin_high: float | None,
            position_r2: float | None, position_rho: float | None,
            partial: float | None, flagged: tuple[bool, bool] = (False, False)) -> Finding:
    """|ρ(PC1, target)| against its twin and against position alone (module doc);
    ``flagged``: (model, twin) intervals of ρ that exclude their estimates."""
    survives, ev = twin_gap(value, low, high, twin, twin_low, twin_high, flagged=flagged)
    ctl = ["random-init twin " + (sig(twin) if twin is not None else "none")]
    if position_r2 is not None:
        ctl.append(f"position alone |ρ| {sig(position_rho)}, probe R² {sig(position_r2)}")
        ev += f"; partial |ρ| given position {sig(partial)}"
        if position_r2 >= POSITION_CONFOUND_R2:
            survives = False
            ev = (f"position alone explains {target.replace('_', ' ')} (probe R² "
                  f"{sig(position_r2)} ≥ {POSITION_CONFOUND_R2}): a correlation with position; "
                  + ev)
    return Finding(f"{prefix}PC1 tracks {target.replace('_', ' ')} (Paper III: |Spearman "
                   "ρ(PC1, H)| of the standardised final-token values, per prompt)", value,
                   control="; ".join(ctl), survives=survives, evidence=ev,
                   undefined="PC1 or the entropy is constant over the prompts")


def key_row(prefix: str, mean: float, twin: float | None, below_twin: float | None,
            below_threshold: float, threshold: float, gaussian: float) -> Finding:
    """Key orthogonality against its twin, layer by layer (module doc)."""
    paper = (f"Paper III criterion (|cos| < {threshold:.2f} in ≥ "
             f"{PAPER3.key_layer_fraction:.0%} of layers) "
             f"{'met' if below_threshold >= PAPER3.key_layer_fraction else 'not met'} "
             f"({below_threshold:.0%} of layers); i.i.d. Gaussian W_K {sig(gaussian)}")
    if twin is None or below_twin is None:
        survives, ev = None, NO_TWIN
    else:
        survives = below_twin >= PAPER3.key_layer_fraction
        ev = (f"gap {mean - twin:+.3g} against the twin; more orthogonal than the twin's same "
              f"layer in {below_twin:.0%} of layers (needs ≥ {PAPER3.key_layer_fraction:.0%})")
    return Finding(f"{prefix}keys orthogonal (Paper III: mean |cos| between the W_K columns "
                   "of each head, over layers; lower is more orthogonal)", mean,
                   control="random-init twin " + (sig(twin) if twin is not None else "none"),
                   survives=survives, evidence=f"{ev}; {paper}",
                   undefined="no layer has two key columns to compare")


def findings(result: GeometryResult) -> list[Finding]:
    """The verdict table of a geometry run (module doc), for its headline prompt set."""
    s = result.headline
    twins = result.random_init.prompt_sets if result.random_init is not None else {}
    t = twins.get(s.prompt_set)
    pre = f"{s.prompt_set}, layer {result.layer}: "
    vm = PAPER3.value_manifold
    rows = [share_row(
        pre, "low-dimensional value manifold (Paper III Table 1: PC1+PC2 share of the "
        "standardised final-token values)", s.pc1_pc2.estimate, s.pc1_pc2.low, s.pc1_pc2.high,
        *((t.pc1_pc2.estimate, t.pc1_pc2.low, t.pc1_pc2.high) if t else (None, None, None)),
        f"Paper III criterion (> {vm:.0%}) {'met' if s.criteria.value_manifold else 'not met'}")]
    for target in ("entropy", "bayes_entropy"):
        rho = s.rho(target)
        if rho is None:
            continue
        tr = t.rho(target) if t is not None else None
        pc = s.position_control(target)
        rows.append(rho_row(
            pre, target, rho.abs, *abs_interval(rho.low, rho.high),
            *((tr.abs, *abs_interval(tr.low, tr.high)) if tr is not None
              else (None, None, None)),
            *((pc.probe_r2, pc.abs_rho, pc.partial_abs_rho_pc1) if pc is not None
              else (None, None, None)),
            flagged=(rho.excludes_estimate, tr is not None and tr.excludes_estimate)))
    k = result.key_orthogonality
    rows.append(key_row("", k.mean_abs_cos, k.init_mean_abs_cos, k.fraction_layers_below_init,
                        k.fraction_layers_below, k.threshold,
                        k.random_init_baseline.mean_abs_cos))
    foc = s.attention_focusing
    if foc is not None:
        tf = t.attention_focusing if t is not None else None
        rows.append(share_row(
            pre, "attention focuses through depth (Paper III: fractional fall of mean "
            "final-token attention entropy, first to last analysed layer)", foc.estimate,
            foc.low, foc.high, *((tf.estimate, tf.low, tf.high) if tf is not None
                                 else (None, None, None)),
            f"Paper III criterion (> {PAPER3.focusing:.0%}) "
            f"{'met' if s.criteria.attention_focusing else 'not met'}"))
    return gate(rows, result.learned)

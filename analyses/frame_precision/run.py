"""``bayesgeom frame-precision RUN_DIR``: does the attention *frame* settle before the
*precision* of the posterior does? (spec §1.7 "Frame–precision dissociation", §1.9.)

**Checkpoints** of a finished run trained with ``--dense-ckpt-until``: step 0 (the control:
the initialisation rebuilt from the run's task, architecture, preset and seed as training builds
it), every ``checkpoints/dense-N``, the kept ``checkpoints/step-N`` and the final ``model/``
(a checkpoint at the final step holds the same weights and is read once).

**Data.** One fixed held-out batch of ``n`` sequences (stream (seed, EVAL, 0), disjoint from
training), read at the prediction positions (sepvocab: the keys 0, 2, …, 2L−2): rows [n·Q].

**Frame**, per checkpoint:

* ``js_to_final_bits`` (per layer): Jensen–Shannon divergence (bits, in [0, 1];
  :func:`probes.attention_rows.js_divergence_bits`) between each head's attention row and
  the final model's row at the same (sequence, position), averaged over rows and heads; the
  whole-model row (layer empty) is the mean over layers. 0 at the final step by construction.
* ``key_abs_cos``: Paper I's layer-0 token-key orthogonality (spec §1.9): the input
  embeddings of Paper I's token set E_tok[0..V−1] -- the bijection's V key tokens, not its
  value (hypothesis-slice) tokens -- through each head's W_K (+ b), mean |off-diagonal cosine|
  over token pairs, mean over heads (:func:`probes.token_key_orthogonality`,
  :func:`windtunnel.bijection.paper1_token_ids`); control ``key_abs_cos_gaussian`` =
  √(2/(π·d_head)), the level of independent Gaussian keys.
* Attention mass on the feasible set (bijection only; another task is a usage error). At
  prediction position p, whose token is key k, the causal row covers positions j ≤ p. A
  position j < p is *feasible* when its token is a value v with p_Bayes(v | prefix) > 0 or a key
  equal to k (whose value is the answer), and *eliminated* when it is a value with
  p_Bayes(v) = 0. ``attn_mass_feasible`` (per layer) = Σ_{j feasible} α_pj, mean over heads and
  over the rows whose feasible set is not empty; ``attn_mass_eliminated`` likewise. In the
  default layout (sepvocab, keys without replacement) every value shown is ruled out -- the
  feasible values are exactly those never shown -- so ``attn_mass_feasible`` is NaN and the
  frame uses ``attn_mass_eliminated``, the mass on the revealed values elimination must read.
  With ``--replacement`` a repeated key's earlier occurrence and its value are feasible.

**Precision**, per checkpoint:

* ``entropy_mae_bits``: Paper I's *per-sample* MAE (spec §1.8, 2): mean over ``n_mae`` held-out
  sequences (streams (seed, EVAL, i)) and prediction positions of |H_model − H_Bayes| (bits;
  :func:`windtunnel.evaluate.evaluate`), and ``log10_entropy_mae_bits``.
* Value manifold of the last layer's attention output (``attn_out.{L-1}``, [d_model]) at the
  rows of the fixed batch against H_Bayes (:func:`probes.value_manifold_summary`): ``vm_pc1``
  (PC1 variance ratio, centred PCA), ``vm_linear_r2`` (linear R² of H_Bayes, 80/20 split),
  ``vm_abs_corr_pc1`` (|Pearson(PC1, H_Bayes)|). On sepvocab without replacement H_Bayes =
  log2(V−k+1) is a function of position alone.

**Plateau step** (:func:`probes.plateau.plateau_step`): the first step after which the metric
stays within ``tolerance`` × its range (max − min over all steps, step 0 included) of its final
value. The MAE falls over decades, so the claim reads its plateau on log10(MAE). The claim
"frame plateaus before precision": the frame step is the latest plateau among
``js_to_final_bits``, ``key_abs_cos`` and the attention-mass metric (whole-model rows), the
precision step that of ``log10_entropy_mae_bits``; ``frame_before_precision``: frame < precision.
The result (``summary.json``) is :class:`analyses.frame_precision.result.FramePrecisionResult`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ... import interp
from ...probes import token_key_orthogonality, value_manifold_summary
from ...probes.attention_rows import attention_mass, content_masks, js_divergence_bits
from ...probes.plateau import plateau_step
from ...records.options import expect_config
from ...windtunnel import TaskBatch, TokenTask
from ...windtunnel.architectures import attention_archs, build_model
from ...windtunnel.bijection import paper1_token_ids
from ...windtunnel.checkpoint import CHECKPOINTS, DENSE
from ...windtunnel.evaluate import evaluate
from ...windtunnel.runs import read_run
from ...windtunnel.seeds import Purpose, stream
from ...windtunnel.training import TrainConfig
from ..kit.errors import ExperimentError
from ..kit.models import open_model
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from .config import FramePrecisionConfig
from .report import write_report
from .result import (
    CONTROL,
    FRAME,
    PER_LAYER,
    PRECISION,
    PRECISION_METRIC,
    PRECISION_METRICS,
    FramePrecisionResult,
)

Row = tuple[str, str, int | None, float]  # (group, metric, layer, value)
PLATEAU_DEF = ("the first step after which the metric stays within tolerance x its range "
               "(max - min over all steps, step 0 included) of its final value")
MAE_DEF = ("per-sample entropy MAE (Paper I, spec 1.8 item 2): mean over held-out sequences "
           "and prediction positions of |H_model - H_Bayes| (bits)")


@dataclass(frozen=True)
class Snapshot:
    """A point of training: ``source`` init, dense, checkpoint or final; ``path`` None: init."""

    step: int
    source: str
    path: Path | None


# ---------------------------------------------------------------- the run's checkpoints
def snapshots(run: Path) -> tuple[list[Snapshot], TrainConfig]:
    """Every point of a finished run (module doc), in step order, and its training config."""
    rec = read_run(run)
    if not rec.finished:
        raise ExperimentError(f"{run} is not a finished run; rerun its windtunnel train "
                                  "command to finish it first")
    found: dict[int, Snapshot] = {0: Snapshot(0, "init", None)}
    found.update({s.step: Snapshot(s.step, s.kind, s.path) for s in rec.snapshots()})
    if not any(s.source == "dense" for s in found.values()):
        raise ExperimentError(
            f"{run} has no dense checkpoints ({CHECKPOINTS}/{DENSE}-*); train it with "
            "--dense-ckpt-until N --dense-ckpt-every M (e.g. 3000 and 100)")
    return [found[s] for s in sorted(found)], rec.train_config


def open_snapshot(snap: Snapshot, run: Path, task: TokenTask, tc: TrainConfig,
                  ) -> interp.InterpModel:
    """The model at ``snap`` with its task (step 0: built as training builds it)."""
    if snap.path is not None:
        return open_model(snap.path)
    hf = build_model(task, tc.arch, tc.preset, tc.seed)
    return interp.InterpModel(hf, None, name=f"{run} @ step 0 (initialisation)",
                              source="windtunnel", task=task)


# ---------------------------------------------------------------- measuring one model
@dataclass
class Probe:
    """What every checkpoint is read on: the fixed batch, its row masks and entropies."""

    batch: TaskBatch
    positions: list[int]
    feasible: np.ndarray  # [rows, T] bool
    eliminated: np.ndarray  # [rows, T] bool
    h_bayes: np.ndarray  # [rows] bits


def make_probe(task: TokenTask, n: int, seed: int) -> Probe:
    b = task.sample(n, stream(seed, Purpose.EVAL, 0))
    qpos = b.query_pos.numpy()
    feas, elim = content_masks(b.input_ids.numpy(), qpos, b.dense_posterior().numpy(),
                               task.hyp_slice.start)
    return Probe(b, qpos.tolist(), feas, elim, b.entropy_bits.numpy().reshape(-1))


def measure(m: interp.InterpModel, pr: Probe, cfg: FramePrecisionConfig,
            ) -> tuple[np.ndarray, list[Row]]:
    """Attention patterns [rows, L, H, T] and (group, metric, layer, value) rows of every
    metric but the JS divergence."""
    L = m.n_layers
    sites = [f"attn.{i}.pattern" for i in range(L)] + [f"attn_out.{L - 1}"]
    st = interp.capture(m, pr.batch, sites, positions=pr.positions, batch_size=cfg.batch_size,
                        progress=False)
    pat = np.stack([st[f"attn.{i}.pattern"].double().numpy() for i in range(L)], axis=1)
    out: list[Row] = []
    for name, mask in (("attn_mass_feasible", pr.feasible),
                       ("attn_mass_eliminated", pr.eliminated)):
        per = attention_mass(pat, mask)
        out += [(FRAME, name, i, float(v)) for i, v in enumerate(per)]
        out.append((FRAME, name, None, float(per.mean())))
    ids = paper1_token_ids(m.task)  # the bijection's key tokens 0..V-1 (run() checks the task)
    emb = m.hf.get_input_embeddings().weight.detach()[ids].double().numpy()
    w, b = interp.projection_weights(m, "attn.0.k")
    ko = token_key_orthogonality(emb, w.numpy(), b.numpy())
    out += [(FRAME, "key_abs_cos", 0, ko.mean_abs_cos),
            (CONTROL, "key_abs_cos_gaussian", 0, ko.gaussian_formula)]
    mae = evaluate(m.hf, m.task, cfg.n_mae, cfg.seed, logit_lens=False).entropy_mae_bits
    vm = value_manifold_summary(st[f"attn_out.{L - 1}"].double().numpy(), pr.h_bayes,
                                seed=cfg.seed)
    out += [(PRECISION, "entropy_mae_bits", None, mae),
            (PRECISION, PRECISION_METRIC, None, float(np.log10(mae))),
            (PRECISION, "vm_pc1", L - 1, vm.pc1), (PRECISION, "vm_linear_r2", L - 1, vm.linear_r2),
            (PRECISION, "vm_abs_corr_pc1", L - 1, abs(vm.corr_pc_entropy[0]))]
    return pat, out


def js_rows(pat: np.ndarray, ref: np.ndarray) -> list[Row]:
    """JS divergence rows of patterns ``pat`` to the final model's ``ref`` (both
    [rows, L, H, T]): per layer and their mean."""
    per = js_divergence_bits(pat, ref).mean(axis=(0, 2))  # [L]
    return [(FRAME, "js_to_final_bits", i, float(v)) for i, v in enumerate(per)] + [
        (FRAME, "js_to_final_bits", None, float(per.mean()))]


# ---------------------------------------------------------------- the study
def run_frame_precision(cfg: FramePrecisionConfig) -> FramePrecisionResult:
    """Read every checkpoint (module doc); write table.parquet (tidy: step, source, group,
    metric, layer, value), summary.json, manifest.json and report.html under ``cfg.out``."""
    expect_config(cfg, FramePrecisionConfig, "run_frame_precision")
    cfg.check()
    t0 = time.perf_counter()
    run = Path(cfg.run_dir)
    final = open_model(run)  # a missing or damaged run: one line naming it
    snaps, tc = snapshots(run)
    task = final.task
    if task is None or task.name != "bijection":
        raise ExperimentError(
            "the attention mass on the feasible set is defined for bijection runs only; "
            f"{run} is a {getattr(task, 'name', 'task-less')} run")
    if tc.arch not in attention_archs():
        raise ExperimentError(f"{run} is an {tc.arch} run; the frame needs attention "
                                  f"patterns (an {'/'.join(attention_archs())} run)")
    with claim(cfg, final) as rd:
        table = measure_all(cfg, run, final, snaps, tc)
        result = summarise(table, cfg, tc, final, time.perf_counter() - t0)
        write_run(cfg, result, model=final, training=tc.to_json(),
                  tables={"table.parquet": table},
                  report=lambda path, manifest: write_report(path, result, table, manifest))
        rd.finish()
    return result


def measure_all(cfg: FramePrecisionConfig, run: Path, final: interp.InterpModel,
                snaps: list[Snapshot], tc: TrainConfig) -> pd.DataFrame:
    """The tidy table over every snapshot: one row per (step, metric, layer)."""
    pr = make_probe(final.task, cfg.n, cfg.seed)
    records = []
    order = [s for s in snaps if s.source == "final"] + [s for s in snaps if s.source != "final"]
    with tqdm(total=len(order), desc="checkpoints", unit="ckpt", disable=not cfg.progress) as bar:
        for snap in order:
            m = final if snap.source == "final" else open_snapshot(snap, run, final.task, tc)
            pat, got = measure(m, pr, cfg)
            if snap.source == "final":
                ref = pat
            records += [{"step": snap.step, "source": snap.source, "group": g, "metric": k,
                         "layer": layer, "value": v} for g, k, layer, v in got + js_rows(pat, ref)]
            bar.update(1)
    table = pd.DataFrame(records).sort_values(["step", "group", "metric", "layer"],
                                              kind="stable", ignore_index=True)
    return table.astype({"layer": "Int64"})


def summarise(table: pd.DataFrame, cfg: FramePrecisionConfig, tc: TrainConfig,
              final: interp.InterpModel, wall_s: float) -> FramePrecisionResult:
    """Plateau steps of every series, the whole-model values at step 0 and at the end, and
    the claim (module doc)."""
    # a series per metric; per layer too for PER_LAYER metrics ("metric@L<layer>")
    t = table.assign(series=[f"{k}@L{layer}" if k in PER_LAYER and not pd.isna(layer) else k
                             for k, layer in zip(table["metric"], table["layer"], strict=True)])
    plateaus, first, last = {}, {}, {}
    for name, g in t.groupby("series", sort=True):
        g = g.sort_values("step")
        plateaus[str(name)] = plateau_step(g["step"].to_numpy(), g["value"].to_numpy(),
                                           cfg.tolerance)
        if "@" not in str(name):
            first[str(name)], last[str(name)] = (float(g["value"].iloc[0]),
                                                 float(g["value"].iloc[-1]))
    feas = t.loc[t["series"] == "attn_mass_feasible", "value"]
    attn = "attn_mass_feasible" if np.isfinite(feas).all() else "attn_mass_eliminated"
    frame = ["js_to_final_bits", "key_abs_cos", attn]
    f_steps = [plateaus[k] for k in frame]
    f_step = None if None in f_steps else max(s for s in f_steps if s is not None)
    p_step = plateaus[PRECISION_METRIC]
    each = {k: f_step is not None and plateaus[k] is not None and f_step < plateaus[k]
            for k in PRECISION_METRICS}
    steps = sorted(int(s) for s in table["step"].unique())
    return FramePrecisionResult(
        run_dir=str(cfg.run_dir), task=final.task.name, arch=tc.arch, n_layers=final.n_layers,
        steps=steps, final_step=steps[-1], n=cfg.n, n_mae=cfg.n_mae, seed=cfg.seed,
        tolerance=cfg.tolerance, plateau_definition=PLATEAU_DEF, mae_definition=MAE_DEF,
        attn_mass_metric=attn,
        frame_metrics=frame, precision_metric=PRECISION_METRIC, plateau_steps=plateaus,
        init_values=first, final_values=last, frame_plateau_step=f_step,
        precision_plateau_step=p_step, frame_before_each_precision_metric=each,
        frame_before_precision=f_step is not None and p_step is not None and f_step < p_step,
        key_abs_cos_gaussian=last["key_abs_cos_gaussian"], wall_s=round(wall_s, 2))

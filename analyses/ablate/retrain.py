"""Paper I's HMM variant "attention disabled in the top layers, retrained" (spec §1.7, §1.9), as
an intervention through :mod:`interp` at training time -- never an edit to model code.

The variant is the run's own training configuration (task, size, seed, batches, schedule) with
``ZeroSublayer("attn_out.L")`` on the top N layers registered on the model before the first step
(:func:`windtunnel.training.train`'s ``prepare`` hook; the run is named by
``TrainConfig.intervention = "zero_attn_top<N>"``, so it resumes with the same hook and never
shares a folder with an unablated run). The hook stays on for every training step and every
evaluation, here as in training; the saved weights are plain, so opening the run elsewhere
gives the model *without* the ablation.

Its control is the unablated model trained on the same budget: the ablated run itself when the
budget is the run's own (same steps, no time limit), else the same configuration retrained
without the hook under the given ``--retrain-steps`` / ``--retrain-minutes``. A third row, the
control with the same attention zeroed after training (no retraining), separates "the model
can do without top-layer attention when trained so" from "this model used it".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from transformers import PreTrainedModel

from ... import interp
from ...interp.ablations import AblationHandle, ZeroSublayer, ablate
from ...windtunnel.runs import NotARunError, read_run
from ...windtunnel.task import TokenTask
from ...windtunnel.training import TrainConfig, train
from ..kit.errors import ExperimentError
from .controls import has_site, measure
from .result import RetrainResult, RetrainRow


def attention_sites(n_layers: int, top: int) -> list[str]:
    """``attn_out.L`` of the top ``top`` layers."""
    if not 1 <= top <= n_layers:
        raise ExperimentError(f"--retrain-without-top-attention {top}: the model has {n_layers} "
                            f"layers; choose 1..{n_layers}")
    return [f"attn_out.{L}" for L in range(n_layers - top, n_layers)]


def zero_top_attention(top: int) -> Callable[[PreTrainedModel], AblationHandle]:
    """A ``prepare`` hook for :func:`windtunnel.training.train`: zero the attention output of
    the model's top ``top`` layers (persistent: the handle is never exited)."""

    def prepare(hf: PreTrainedModel) -> AblationHandle:
        was = hf.training
        m = interp.InterpModel(hf, name="training")  # puts hf in eval mode: restored below
        handle = ablate(m, ZeroSublayer(attention_sites(m.n_layers, top)))
        hf.train(was)
        return handle

    return prepare


def run_config(run_dir: str | Path) -> TrainConfig:
    """The training configuration of a wind-tunnel run directory (its ``run.json``)."""
    try:
        return read_run(run_dir).train_config
    except NotARunError as e:
        raise ExperimentError(f"the retrain reads the run's training configuration: {e}; give "
                              "the run directory, not its model/") from None


def check_retrain(cfg: Any, m: interp.InterpModel) -> tuple[list[str], TrainConfig]:
    """The attention sites to zero and the run's training configuration, or a one-line
    :class:`ExperimentError` saying why this model cannot be retrained so."""
    sites = attention_sites(m.n_layers, int(cfg.retrain_top_attention))
    if not has_site(m, sites[0]):
        raise ExperimentError(f"{m.info.name} has no attention to remove")
    base = run_config(cfg.run_dir)
    if base.intervention:
        raise ExperimentError(f"{cfg.run_dir} was itself trained under {base.intervention!r}")
    return sites, base


def run_retrain(cfg: Any, m: interp.InterpModel,
                tasks: Sequence[tuple[int | None, TokenTask]]) -> RetrainResult:
    """Train the variant (and, with another budget, its control) under ``cfg.out/retrain``
    and score both at each task size (``cfg``: an :class:`analyses.ablate.run.AblateConfig`)."""
    from ..kit.models import open_model

    top = int(cfg.retrain_top_attention)
    sites, base = check_retrain(cfg, m)
    own = cfg.retrain_steps is None and cfg.retrain_minutes is None
    budget = replace(base, steps=cfg.retrain_steps or base.steps,
                     max_minutes=base.max_minutes if own else cfg.retrain_minutes)
    name = f"zero_attn_top{top}"
    root = Path(cfg.out) / "retrain"
    ab = train(replace(budget, intervention=name), root / name, progress=cfg.progress,
               prepare=zero_top_attention(top))
    steps, stops = {"ablated": ab.steps_done}, {"ablated": ab.stop_reason}
    if own:  # the run itself was trained on this budget: it is the control
        control_dir = Path(cfg.run_dir)
        rec = read_run(control_dir)
        steps["control"] = rec.steps_done if rec.steps_done is not None else base.steps
        stops["control"] = str(rec.record.get("stop_reason", "steps"))
    else:
        control_dir = root / "control"
        ctl = train(budget, control_dir, progress=cfg.progress)
        steps["control"], stops["control"] = ctl.steps_done, ctl.stop_reason
    ablated, control = open_model(root / name), open_model(control_dir)
    rows = []
    for K, task in tasks:
        with ablate(ablated, ZeroSublayer(sites)):
            rep = measure(ablated, task, (), cfg.n, cfg.seed)
        rows.append(RetrainRow(f"retrained, attention zeroed in top {top}", K,
                               rep.entropy_mae_bits, rep.accuracy))
        rep = measure(control, task, (), cfg.n, cfg.seed)
        rows.append(RetrainRow("control (unablated, same budget)", K, rep.entropy_mae_bits,
                               rep.accuracy))
        rep = measure(control, task, (ZeroSublayer(sites),), cfg.n, cfg.seed)
        rows.append(RetrainRow(f"control, top {top} attention zeroed after training", K,
                               rep.entropy_mae_bits, rep.accuracy))
    return RetrainResult(name, [int(s.split(".")[1]) for s in sites], str(root / name),
                         str(control_dir), steps, stops, rows)

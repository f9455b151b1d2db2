"""``bayesgeom windtunnel sample | train | eval``: tasks with exact posteriors and small models.

Task options (``--V``, ``--K``, ``--ks`` ...) come from the task registry
(:data:`windtunnel.TASKS`), so a new task needs no edit here; an option given for a task that
does not have it is refused. ``train`` validates through the same :meth:`TrainConfig.validate`
as the Python API (one line, the same message); ``--restart`` replaces a finished run with
other settings or starts the same one over. ``train --monitor-every N`` runs the Paper II
training-dynamics monitor (:mod:`analyses.dynamics.monitor.run`) every N steps: its columns join
``metrics.parquet`` and it writes ``dynamics.csv`` and ``dynamics.html`` into the run folder.
"""

from __future__ import annotations

import argparse
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...records import OptionError, check_options, declared, json_safe, option, seed_option
from ...windtunnel.names import TEXT_TASK_NAMES
from ...windtunnel.task_configs import TASK_CONFIGS
from ..kit.options import add_option, add_options, config_from_args, out_path
from ..kit.parser import CLIError, Parser

PREFIX = "task_"


@dataclass
class SampleOptions:
    task: str = option("bijection", "a registered task (bijection, hmm, sula, ...)")
    n: int = option(2, "sequences (SULA: prompts, a multiple of the number of ks)", min=1)
    seed: int = seed_option(0, "seed of the draw")


@dataclass
class EvalOptions:
    dir: Path = option(Path("."), "run directory (or a saved model directory)", flag="dir")
    n: int = option(2000, "held-out sequences", min=1)
    seed: int = seed_option(0, "seed of the held-out stream")
    K: int | None = option(None, "HMM: evaluate at another number of observations", min=1)


def add_task_options(p: argparse.ArgumentParser, token_only: bool) -> None:
    """Each task parameter once (the first declaration of a name wins); from the light task
    configs (:data:`windtunnel.task_configs.TASK_CONFIGS`: no torch before the options are
    checked)."""
    seen: set[str] = set()
    for name, config_cls in TASK_CONFIGS.items():
        if token_only and name in TEXT_TASK_NAMES:
            continue
        hints = typing.get_type_hints(config_cls)
        for f, opt in declared(config_cls):
            if f.name not in seen:
                seen.add(f.name)
                add_option(p, f, opt, hints[f.name], PREFIX + f.name)


def task_params(ns: argparse.Namespace, task: str) -> dict[str, Any]:
    """The given task options, refusing those the task does not have."""
    if task not in TASK_CONFIGS:
        raise CLIError(f"unknown task {task!r}; available: {', '.join(sorted(TASK_CONFIGS))}")
    mine = {f.name for f, _ in declared(TASK_CONFIGS[task])}
    given = {k[len(PREFIX):]: v for k, v in vars(ns).items() if k.startswith(PREFIX)}
    for name in given:
        if name not in mine:
            raise CLIError(f"option --{name.replace('_', '-')} does not apply to task {task!r}")
    try:  # the declared ranges, worded as make_task words them
        check_options(TASK_CONFIGS[task](**given))
    except OptionError as e:
        raise CLIError(f"task {task!r}: {e}") from None
    return given


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    """``windtunnel sample | train | eval``; each one's options are added when it is chosen
    (the task registry and :class:`TrainConfig` import torch)."""
    wt = sub.add_parser("windtunnel", help="tasks with exact posteriors and small models")
    wsub = wt.add_subparsers(dest="wcmd", required=True)
    s = wsub.add_parser("sample", parents=[parent],
                        help="print prompts with their exact posteriors")
    s.set_defaults(run=sample)
    t = wsub.add_parser("train", parents=[parent],
                        help="train a model on a task (resumes an unfinished --out)")
    t.set_defaults(run=train)
    e = wsub.add_parser("eval", parents=[parent],
                        help="evaluate a run against the exact posterior")
    e.set_defaults(run=evaluate)
    for parser, fill in ((s, sample_arguments), (t, train_arguments), (e, eval_arguments)):
        if isinstance(parser, Parser):
            parser.defer(fill)
        else:
            fill(parser)


def sample_arguments(s: argparse.ArgumentParser) -> None:
    add_options(s, SampleOptions)
    add_task_options(s, token_only=False)


def train_arguments(t: argparse.ArgumentParser) -> None:
    from ...windtunnel.train_config import TrainConfig

    add_options(t, TrainConfig)
    t.add_argument("--out", required=True, type=out_path,
                   help="run directory (created; resumed if unfinished with the same settings, "
                        "restarted in place if unfinished with others)")
    add_task_options(t, token_only=True)


def eval_arguments(e: argparse.ArgumentParser) -> None:
    add_options(e, EvalOptions)


def sample(ns: argparse.Namespace) -> int:
    o = config_from_args(SampleOptions, ns)
    check_options(o)
    params = task_params(ns, o.task)  # checked before the task modules (torch) are imported
    from ...windtunnel import make_task
    from ...windtunnel.inspect import format_records, sample_records

    rec = sample_records(make_task(o.task, **params), o.n, o.seed)
    print(json.dumps(rec) if ns.json else format_records(rec))
    return 0


def train(ns: argparse.Namespace) -> int:
    from ...windtunnel.train_config import TrainConfig

    cfg = config_from_args(TrainConfig, ns)  # the options, before torch is imported
    cfg.task_params = task_params(ns, cfg.task)
    from ...records import check_out
    from ...windtunnel.run_identity import EXPERIMENT

    check_out(ns.out, EXPERIMENT)  # a file, a broken link or another run: before torch
    from ...windtunnel.training import train as run_training
    if cfg.device is not None:
        from ...interp import check_device

        check_device(cfg.device)  # one line naming the devices this machine has
    monitor = None
    if cfg.monitor_every:
        from ..dynamics.monitor import DynamicsMonitor

        monitor = DynamicsMonitor()  # writes dynamics.csv and dynamics.html into --out
    res = run_training(cfg, ns.out, progress=not ns.no_progress,
                       restart=ns.restart, monitor=monitor)
    r = res.report
    assert r is not None
    if ns.json:
        print(json.dumps(json_safe({"out": str(res.out), "steps": res.steps_done,
                                    "stop_reason": res.stop_reason, "wall_s": res.wall_s,
                                    "params": res.params, **r.to_dict()})))
    else:
        print(f"{cfg.arch} ({res.params:,} params) on {cfg.task}: {res.steps_done} steps in "
              f"{res.wall_s:.0f} s ({res.stop_reason}); entropy MAE {r.entropy_mae_bits:.4g} bits, "
              f"KL {r.kl_bits:.4g} bits, accuracy {r.accuracy:.3f} -> {res.out}")
    return 0


def evaluate(ns: argparse.Namespace) -> int:
    o = config_from_args(EvalOptions, ns)
    check_options(o)  # before the run and torch are loaded
    from ...windtunnel import TASKS
    from ...windtunnel.architectures import n_params
    from ...windtunnel.evaluate import evaluate as run_eval
    from ...windtunnel.runs import load_run

    run = load_run(o.dir)
    task = run.task
    if task is None:
        raise CLIError(f"{o.dir} has no task record; pass its run directory")
    if o.K is not None:  # sets the task's length option (TokenTask.at_length)
        if task.length_option != "K":
            takers = [n for n, r in TASKS.items() if getattr(r.cls, "length_option", None) == "K"]
            raise CLIError(f"--K applies to {', '.join(takers)} runs only")
        task = task.at_length(o.K)
    rep = run_eval(run.model, task, n=o.n, seed=o.seed, progress=not (ns.json or ns.no_progress))
    out = {"task": task.name, "task_config": task.config(), "arch": run.arch,
           "params": n_params(run.model), "steps": run.steps, "path": str(run.path),
           "entropy_mae_metric": "per-sample mean |H_model - H_Bayes| (bits)", **rep.to_dict()}
    if ns.json:
        print(json.dumps(json_safe(out)))
        return 0
    lines = [f"{run.arch} on {out['task']} ({out['params']:,} params, {run.steps} steps), "
             f"{rep.n_sequences} held-out sequences"]
    lines += [f"  {k:<24} {out[k]:.6g}" for k in ("entropy_mae_bits", "entropy_mae_curve_bits",
                                                  "kl_bits", "kl_model_bayes_bits", "tvd",
                                                  "accuracy")]
    lines.append(f"  {'map_agreement':<24} {rep.map_agreement:.6g}  (over the "
                 f"{rep.map_untied} sequence positions with a unique Bayes argmax)")
    print("\n".join(lines))
    return 0

"""The ``bayesgeom`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# ---------------------------------------------------------------- task options shared by commands
_TASK_OPTS = {
    # flag: (task param, type, tasks it applies to, help)
    "--V": ("V", int, {"bijection"}, "bijection: number of hypotheses (values); default 20"),
    "--L": ("L", int, {"bijection"}, "bijection: number of revealed keys; default V-1"),
    "--layout": ("layout", str, {"bijection"}, "bijection: 'sepvocab' (default) or 'paired'"),
    "--K": ("K", int, {"hmm"}, "hmm: observations per sequence; default 20"),
    "--max-K": ("max_K", int, {"hmm"}, "hmm: longest K to size positions for; default 50"),
}


def _add_task_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default="bijection", help="task name: bijection or hmm")
    for flag, (_, typ, _tasks, hlp) in _TASK_OPTS.items():
        p.add_argument(flag, type=typ, default=None, help=hlp)
    p.add_argument(
        "--replacement",
        action="store_true",
        help="bijection: draw keys with replacement (saw-tooth entropy curve)",
    )


def _task_params(a: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for flag, (name, _typ, tasks, _h) in _TASK_OPTS.items():
        v = getattr(a, flag.lstrip("-").replace("-", "_"))
        if v is None:
            continue
        if a.task not in tasks:
            raise CLIError(f"option {flag} does not apply to task {a.task!r}")
        params[name] = v
    if a.replacement:
        if a.task != "bijection":
            raise CLIError(f"option --replacement does not apply to task {a.task!r}")
        params["replacement"] = True
    return params


# ---------------------------------------------------------------- windtunnel sample / train / eval
def cmd_sample(a: argparse.Namespace) -> int:
    from windtunnel import make_task
    from windtunnel.inspect import batch_records, format_records

    task = make_task(a.task, **_task_params(a))
    recs = batch_records(task, task.sample(a.n, a.seed))
    if a.json:
        print(
            json.dumps(
                {
                    "task": task.config(),
                    "tokens": task.describe_tokens(),
                    "seed": a.seed,
                    "sequences": recs,
                }
            )
        )
    else:
        print(format_records(task, recs))
    return 0


def cmd_train(a: argparse.Namespace) -> int:
    from windtunnel.training import TrainConfig, train

    cfg = TrainConfig(
        task=a.task,
        task_params=_task_params(a),
        arch=a.arch,
        preset=a.preset,
        steps=a.steps,
        seed=a.seed,
        batch_size=a.batch_size,
        lr=a.lr,
        warmup_steps=a.warmup_steps,
        weight_decay=a.weight_decay,
        grad_clip=a.grad_clip,
        eval_every=a.eval_every,
        eval_size=a.eval_size,
        ckpt_every=a.ckpt_every,
        dense_ckpt_until=a.dense_ckpt_until,
        dense_ckpt_every=a.dense_ckpt_every,
        max_minutes=a.max_minutes,
    )
    res = train(cfg, a.out, progress=not a.no_progress)
    r = res.report
    print(
        f"{cfg.arch} on {cfg.task}: {res.steps_done} steps in {res.wall_s:.0f} s "
        f"({res.stop_reason}); entropy MAE {r.entropy_mae_bits:.4g} bits, "
        f"KL {r.kl_bits:.4g} bits, accuracy {r.accuracy:.3f} -> {res.out}"
    )
    return 0


def cmd_eval(a: argparse.Namespace) -> int:
    from windtunnel.architectures import n_params
    from windtunnel.evaluate import evaluate
    from windtunnel.hmm import HMMTask
    from windtunnel.training import load_run

    run = load_run(a.dir)
    task = run.task
    if a.K is not None:
        if not isinstance(task, HMMTask):
            raise CLIError("--K applies to HMM runs only")
        task = task.with_K(a.K)
    rep = evaluate(run.model, task, n=a.n, seed=a.seed, progress=not a.json)
    out = {
        "task": task.config()["task"],
        "task_config": task.config(),
        "arch": run.arch,
        "params": n_params(run.model),
        "steps": run.steps,
        "path": str(run.path),
        "entropy_mae_metric": "per-sample mean |H_model - H_Bayes| (bits)",
        **rep.to_dict(),
    }
    if a.json:
        print(json.dumps(out))
    else:
        print(
            f"{run.arch} on {out['task']} ({out['params']:,} params, {run.steps} steps), "
            f"{rep.n_sequences} held-out sequences"
        )
        for k in (
            "entropy_mae_bits",
            "entropy_mae_curve_bits",
            "kl_bits",
            "kl_model_bayes_bits",
            "tvd",
            "accuracy",
            "map_agreement",
        ):
            print(f"  {k:<24} {out[k]:.6g}")
    return 0


def cmd_demo(a: argparse.Namespace) -> int:
    from analyses.demo import DemoConfig, run_demo

    run_demo(DemoConfig(out=Path(a.out), quick=a.quick, model=a.model,
                        progress=not a.no_progress))
    return 0


# ---------------------------------------------------------------- interp: capture / models
def _read_prompts(path: str) -> list[str]:
    """One prompt per line; a blank line is an error (it would shift every prompt index)."""
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"prompts file {p} does not exist")
    lines = p.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    if not lines:
        raise CLIError(f"{p} holds no prompts (one prompt per line)")
    blank = next((i for i, line in enumerate(lines, 1) if not line.strip()), None)
    if blank is not None:
        raise CLIError(f"{p}: line {blank} is empty; remove blank lines (one prompt per line)")
    return lines


def _positions(text: str) -> str | list[int]:
    if text in ("last", "all"):
        return text
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"positions must be 'last', 'all' or comma-separated indices, not {text!r}"
        ) from None


def cmd_capture(a: argparse.Namespace) -> int:
    from interp import capture, load

    prompts = _read_prompts(a.prompts)
    model = load(a.model, dtype=a.dtype, device=a.device, revision=a.revision, backend=a.backend)
    store = capture(model, prompts, a.sites, a.positions, batch_size=a.batch_size, out=a.out,
                    prompts_per_shard=a.shard_prompts, store_dtype=a.store_dtype,
                    progress=not a.no_progress, seed=a.seed)
    print(f"captured {len(store)} rows x {len(store.sites)} sites from {len(prompts)} prompts "
          f"({model.info.name}, backend {model.info.backend}) -> {a.out}")
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    from interp import embedded_model
    from interp.families import FAMILIES
    from interp.model import BACKENDS
    from interp.user_cache import cache_root

    info = {
        "families": [{"name": f.name, "model_types": list(f.model_types),
                      "description": f.description} for f in FAMILIES],
        "generic": "any other HF causal LM with standard module names (q_proj/k_proj/v_proj...)",
        "default_model": embedded_model.cache_info(),
        "cache_root": str(cache_root()),
        "backends": list(BACKENDS),
    }
    if a.json:
        print(json.dumps(info))
        return 0
    print("families with first-class adapters:")
    for f in info["families"]:
        print(f"  {f['name']:<10} {f['description']}")
    print(f"  {'generic':<10} {info['generic']}")
    d = info["default_model"]
    state = f"cached ({d['cache_bytes'] / 2**20:.0f} MiB)" if d["cached"] else "not converted yet"
    print(f"default model: {d['name']} - {d['description']}")
    print(f"  cache: {d['cache_dir']} [{state}]")
    print(f"backends: {', '.join(info['backends'])}")
    return 0


# ---------------------------------------------------------------- geometry (Paper III)
def cmd_geometry(a: argparse.Namespace) -> int:
    from analyses.cli_report import run_and_report
    from analyses.geometry import (
        GeometryConfig,
        GeometryError,
        format_summary,
        parse_layers,
        run_geometry,
        sets_argument,
    )

    def run() -> dict:
        return run_geometry(GeometryConfig(
            model=a.model, prompts=sets_argument(a.prompts) if a.prompts else None,
            out=Path(a.out), layers=parse_layers(a.layers), layer=a.layer,
            n_per_quintile=a.n_per_quintile, pool_size=a.pool_size, seed=a.seed,
            n_resamples=a.bootstrap, batch_size=a.batch_size, dtype=a.dtype,
            progress=not a.no_progress))

    return run_and_report(run, (GeometryError,), a.json, format_summary, Path(a.out))


def _add_geometry(sub: argparse._SubParsersAction) -> None:
    from analyses.prompt_pool import PROMPT_SETS

    g = sub.add_parser("geometry", help="Paper III value/key/attention geometry on real text")
    g.add_argument("--model", default=None,
                   help="Hub name, local or wind-tunnel run directory (default: embedded SmolLM2)")
    g.add_argument("--prompts", nargs="+", default=None,
                   help=f"prompt sets, the first is the headline one: {', '.join(PROMPT_SETS)} "
                        "(default mixed; a wind-tunnel run uses its task)")
    g.add_argument("--layers", default="all",
                   help="analysed layers: all (default) or e.g. 0,5,-1 or 0-3")
    g.add_argument("--layer", type=int, default=-1, help="Table-1 layer (default -1, the last)")
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--n-per-quintile", type=int, default=15,
                   help="prompts per entropy quintile (default 15: 75 prompts)")
    g.add_argument("--pool-size", type=int, default=1000, help="candidate pool (default 1000)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    g.add_argument("--batch-size", type=int, default=16)
    g.add_argument("--dtype", default=None, help="model dtype: float32, bfloat16, float16, auto")
    g.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    g.add_argument("--no-progress", action="store_true")
    g.set_defaults(fn=cmd_geometry)


# ---------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bayesgeom", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    d = sub.add_parser("demo", help="the main job: train, evaluate and report")
    d.add_argument("--out", default="runs/demo", help="output directory (default runs/demo)")
    d.add_argument("--quick", action="store_true", help="a few-minute version (CI)")
    d.add_argument("--model", default=None,
                   help="the LLM: Hub name or local directory (default: embedded SmolLM2)")
    d.add_argument("--no-progress", action="store_true")
    d.set_defaults(fn=cmd_demo)

    wt = sub.add_parser("windtunnel", help="tasks with exact posteriors and small models")
    wsub = wt.add_subparsers(dest="wcmd", required=True)

    s = wsub.add_parser("sample", help="print sequences with their exact posteriors")
    _add_task_opts(s)
    s.add_argument("--n", type=int, default=2)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_sample)

    from windtunnel.training import TrainConfig

    dflt = TrainConfig()
    t = wsub.add_parser("train", help="train a model on a task (resumes an unfinished --out)")
    _add_task_opts(t)
    t.add_argument("--arch", default=dflt.arch, help="transformer, mlp-position or mlp-flat")
    t.add_argument("--preset", default=dflt.preset, help="small, paper or tiny")
    t.add_argument("--steps", type=int, default=dflt.steps)
    t.add_argument("--seed", type=int, default=dflt.seed)
    t.add_argument("--out", required=True, help="run directory (created; resumed if unfinished)")
    t.add_argument("--batch-size", type=int, default=dflt.batch_size)
    t.add_argument("--lr", type=float, default=dflt.lr)
    t.add_argument("--warmup-steps", type=int, default=dflt.warmup_steps)
    t.add_argument("--weight-decay", type=float, default=dflt.weight_decay)
    t.add_argument("--grad-clip", type=float, default=dflt.grad_clip)
    t.add_argument("--eval-every", type=int, default=dflt.eval_every)
    t.add_argument("--eval-size", type=int, default=dflt.eval_size)
    t.add_argument("--ckpt-every", type=int, default=dflt.ckpt_every)
    t.add_argument(
        "--dense-ckpt-until",
        type=int,
        default=0,
        help="also keep model-only checkpoints every --dense-ckpt-every steps until here",
    )
    t.add_argument("--dense-ckpt-every", type=int, default=dflt.dense_ckpt_every)
    t.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop (with a final checkpoint) after this much training wall time",
    )
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(fn=cmd_train)

    e = wsub.add_parser("eval", help="evaluate a run against the exact posterior")
    e.add_argument("dir", help="run directory (or a saved model directory)")
    e.add_argument("--n", type=int, default=2000, help="held-out sequences (default 2000)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--K", type=int, default=None, help="HMM: evaluate at another length")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(fn=cmd_eval)

    c = sub.add_parser("capture", help="capture model activations at named sites to a store")
    c.add_argument("--model", default=None,
                   help="Hub name, local or wind-tunnel directory (default: embedded SmolLM2)")
    c.add_argument("--prompts", required=True, help="text file, one prompt per line")
    c.add_argument("--sites", nargs="+", required=True,
                   help="site names, e.g. resid_post.* attn.-1.v attn.-1.pattern logits")
    c.add_argument("--positions", type=_positions, default="last",
                   help="last (default), all, or comma-separated indices such as 0,-1")
    c.add_argument("--out", required=True, help="store directory (an unfinished one resumes)")
    c.add_argument("--backend", choices=["hf", "transformer_lens"], default="hf")
    c.add_argument("--batch-size", type=int, default=8)
    c.add_argument("--shard-prompts", type=int, default=None,
                   help="prompts per shard (default: about 32 MiB of activations per shard)")
    c.add_argument("--dtype", default=None, help="model dtype: float32, bfloat16, float16, auto")
    c.add_argument("--store-dtype", default="float32", help="stored dtype (default float32)")
    c.add_argument("--device", default=None)
    c.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--no-progress", action="store_true")
    c.set_defaults(fn=cmd_capture)

    m = sub.add_parser("models", help="list model families, the default model and its cache")
    m.add_argument("--json", action="store_true", help="print one JSON object")
    m.set_defaults(fn=cmd_models)

    _add_geometry(sub)
    from analyses.cli_compare import add_compare
    from analyses.cli_steer import add_steer
    from analyses.cli_sula import add_sula

    add_steer(sub)
    add_sula(sub)
    add_compare(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    a = parser.parse_args(argv)
    from interp.errors import InterpError
    from windtunnel.checkpoint import CheckpointError
    from windtunnel.task import TaskConfigError
    from windtunnel.training import RunDirError

    try:
        return a.fn(a)
    except (CLIError, TaskConfigError, RunDirError, CheckpointError, FloatingPointError,
            InterpError) as e:
        print(f"bayesgeom: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

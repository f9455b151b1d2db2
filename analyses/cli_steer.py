"""``bayesgeom steer``: causal tests of the entropy axis against random directions."""

from __future__ import annotations

import argparse
from pathlib import Path


def _floats(text: str) -> tuple[float, ...]:
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from e


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated layers, got {text!r}") from e


def _pair(text: str) -> tuple[str, str]:
    parts = tuple(x.strip() for x in text.split(","))
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected two labels such as lug,mip, got {text!r}")
    return parts  # type: ignore[return-value]


def cmd_steer(a: argparse.Namespace) -> int:
    from analyses.cli_report import run_and_report
    from analyses.steering import SteerConfig, SteerError, format_summary, run_steer

    cfg = SteerConfig(
        model=a.model, task=a.task, out=Path(a.out), site=a.site, layers=a.layers,
        positions=a.positions, axis_method=a.axis_method, cut_fractions=a.cut,
        keep_only=not a.no_keep_only, shift_deltas=a.shift, n_random=a.n_random,
        direct=not a.no_direct, seed=a.seed, n_per_k=a.n_per_k, labels=a.labels,
        n_prompts=a.n_prompts, batch_size=a.batch_size, dtype=a.dtype,
        progress=not a.no_progress)
    return run_and_report(lambda: run_steer(cfg), (SteerError,), a.json, format_summary,
                          cfg.out)


def add_steer(sub: argparse._SubParsersAction) -> None:
    from analyses.steering import SITE_KINDS, SteerConfig

    d = SteerConfig()
    s = sub.add_parser("steer", help="cut / keep / shift the entropy axis vs random directions")
    s.add_argument("--model", default=None,
                   help="Hub name, local or wind-tunnel run directory (default: embedded SmolLM2)")
    s.add_argument("--task", default=None,
                   help="sula for a text model (default); a wind-tunnel run's own task "
                        "(bijection, hmm; default: the run's)")
    s.add_argument("--out", required=True, help="output directory (an unfinished run resumes)")
    s.add_argument("--site", default=d.site, choices=SITE_KINDS,
                   help="site kind edited at each layer (default attn.v: the values)")
    s.add_argument("--layers", type=_ints, default=d.layers,
                   help="edited layers, e.g. -1 (default) or 8,12,16,20,23 (each its own axis)")
    s.add_argument("--positions", choices=["all", "last"], default=d.positions,
                   help="edit every real token (default) or the last one")
    s.add_argument("--axis-method", default=d.axis_method,
                   choices=["pc1", "ridge", "mean_difference"])
    s.add_argument("--cut", type=_floats, default=d.cut_fractions,
                   help="fractions of the axis component removed (default 0.25,0.5,0.75,1)")
    s.add_argument("--shift", type=_floats, default=d.shift_deltas,
                   help="shifts δ in units of σ (default -2,-1,1,2)")
    s.add_argument("--no-keep-only", action="store_true", help="skip the keep-only condition")
    s.add_argument("--n-random", type=int, default=d.n_random,
                   help=f"random control directions per layer (default {d.n_random})")
    s.add_argument("--no-direct", action="store_true",
                   help="skip the direct effect (final-norm scale frozen)")
    s.add_argument("--n-per-k", type=int, default=d.n_per_k, help="SULA prompts per k")
    s.add_argument("--labels", type=_pair, default=None, help="SULA label pair, e.g. lug,mip")
    s.add_argument("--n-prompts", type=int, default=d.n_prompts, help="wind-tunnel prompts")
    s.add_argument("--seed", type=int, default=d.seed)
    s.add_argument("--batch-size", type=int, default=d.batch_size)
    s.add_argument("--dtype", default=None, help="model dtype: float32, bfloat16, float16, auto")
    s.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=cmd_steer)

"""``bayesgeom compare``: the same geometry metrics on a wind tunnel and an LLM, side by side."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_compare(a: argparse.Namespace) -> int:
    from analyses.cli_report import run_and_report
    from analyses.compare import CompareConfig, CompareError, format_summary, run_compare
    from analyses.geometry import GeometryError, sets_argument

    cfg = CompareConfig(
        models=tuple(a.models), labels=tuple(a.labels.split(",")) if a.labels else None,
        out=Path(a.out), prompts=sets_argument(a.prompts) if a.prompts else None,
        n_per_quintile=a.n_per_quintile, pool_size=a.pool_size, n_resamples=a.bootstrap,
        seed=a.seed, batch_size=a.batch_size, dtype=a.dtype, progress=not a.no_progress)
    return run_and_report(lambda: run_compare(cfg), (CompareError, GeometryError), a.json,
                          format_summary, cfg.out)


def add_compare(sub: argparse._SubParsersAction) -> None:
    from analyses.compare import DEFAULT_MODEL, CompareConfig

    d = CompareConfig()
    c = sub.add_parser("compare", help="side-by-side geometry of several models (small vs large)")
    c.add_argument("--models", nargs="+", required=True,
                   help=f"wind-tunnel run directories, Hub names or local paths; "
                        f"'{DEFAULT_MODEL}' is the embedded SmolLM2")
    c.add_argument("--labels", default=None, help="comma-separated short names, one per model")
    c.add_argument("--out", required=True, help="output directory (finished model runs reused)")
    c.add_argument("--prompts", nargs="+", default=None,
                   help="prompt sets for text models (default mixed); wind tunnels read their task")
    c.add_argument("--n-per-quintile", type=int, default=d.n_per_quintile)
    c.add_argument("--pool-size", type=int, default=d.pool_size)
    c.add_argument("--bootstrap", type=int, default=d.n_resamples,
                   help="bootstrap resamples (default 1000)")
    c.add_argument("--seed", type=int, default=d.seed)
    c.add_argument("--batch-size", type=int, default=d.batch_size)
    c.add_argument("--dtype", default=None, help="model dtype: float32, bfloat16, float16, auto")
    c.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    c.add_argument("--no-progress", action="store_true")
    c.set_defaults(fn=cmd_compare)

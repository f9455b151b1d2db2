"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from __future__ import annotations

import argparse
from pathlib import Path

from analyses.cli_steer import _pair


def _conditions(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip())


def _ks(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from e


def cmd_sula(a: argparse.Namespace) -> int:
    from analyses.cli_report import run_and_report
    from analyses.sula import SulaConfig, format_summary, run_sula
    from windtunnel.sula import SulaError

    cfg = SulaConfig(model=a.model, out=Path(a.out), ks=a.ks, n_per_k=a.n_per_k, seed=a.seed,
                     alpha=a.alpha, labels=a.labels, remap_labels=a.remap_labels,
                     conditions=a.conditions, site=a.site, batch_size=a.batch_size,
                     dtype=a.dtype, progress=not a.no_progress)
    return run_and_report(lambda: run_sula(cfg), (SulaError,), a.json, format_summary, cfg.out)


def add_sula(sub: argparse._SubParsersAction) -> None:
    from analyses.sula import SulaConfig

    d = SulaConfig()
    s = sub.add_parser("sula", help="in-context Bayesian calibration (SULA) with its controls")
    s.add_argument("--model", default=None,
                   help="Hub name or local directory (default: embedded SmolLM2)")
    s.add_argument("--out", required=True, help="output directory (a rerun reuses its scores)")
    s.add_argument("--ks", type=_ks, default=d.ks, help="examples per prompt (default 0,1,2,4,8)")
    s.add_argument("--n-per-k", type=int, default=d.n_per_k, help="prompts per k (default 50)")
    s.add_argument("--alpha", type=float, default=d.alpha,
                   help="chance an example shows the true label (default 0.9)")
    s.add_argument("--labels", type=_pair, default=None,
                   help="label pair, e.g. fed,pol (default: first single-token candidates)")
    s.add_argument("--remap-labels", type=_pair, default=None,
                   help="label pair of the lexical-remap control")
    s.add_argument("--conditions", type=_conditions, default=d.conditions,
                   help="subset of main,remap,shuffled,ablated (default all)")
    s.add_argument("--site", default=d.site,
                   help="last-layer site kind for the geometry (default attn.v)")
    s.add_argument("--seed", type=int, default=d.seed)
    s.add_argument("--batch-size", type=int, default=d.batch_size)
    s.add_argument("--dtype", default=None, help="model dtype: float32, bfloat16, float16, auto")
    s.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(fn=cmd_sula)

"""Paper I's table from a sweep's cells: one row per architecture (and preset), for each task
its headline number over seeds, the steps and training wall time each seed took and why it
stopped; on the HMM, the effective window the architecture reaches against the control ladder.

The headline is Paper I's per-sample entropy MAE (bits) on bijection and HMM (and at every
``--eval-params`` setting, e.g. ``entropy_mae_bits@K=50``), and accuracy on associative recall.
The *effective window* of an HMM row (:func:`effective_window`) is the largest w whose windowed
filter (the last w observations, exact otherwise: :func:`windtunnel.hmm.window_ladder`) has a
per-sample MAE at least the row's mean, once the row beats the history-free filter: the
architecture does as well as a filter that sees w observations; "none" when it does not beat
the history-free filter.

Example:
    >>> import pandas as pd
    >>> cells = pd.DataFrame({
    ...     "task": ["hmm"] * 2, "arch": ["t"] * 2, "preset": ["s"] * 2,
    ...     "status": ["trained"] * 2, "entropy_mae_bits": [0.05, 0.07],
    ...     "steps": [900, 1000], "wall_s": [60.0, 61.0], "stop_reason": ["plateau"] * 2})
    >>> ladder = {"hmm": {"history-free": 0.2, "window 2": 0.1, "window 4": 0.04}}
    >>> row = paper_table(cells, ladder).iloc[0]
    >>> row["hmm: entropy MAE (bits)"], row["hmm: window"], row["hmm: stopped"]
    ('0.06 ± 0.0141 (n=2)', '2', 'plateau 2')
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ...windtunnel.baselines import HISTORY_FREE
from ..kit.numbers import sig

MAE = "entropy_mae_bits"
#: the headline metric per task where it is not the entropy MAE
HEADLINE = {"assoc_recall": "accuracy"}
LABEL = {MAE: "entropy MAE (bits)", "accuracy": "accuracy"}
DONE = ("trained", "reused")


def _mean_sd(x: pd.Series) -> str:
    v = pd.to_numeric(x, errors="coerce").dropna()
    if v.empty:
        return "undefined: no finished seed"
    sd = f" ± {sig(float(v.std(ddof=1)))}" if len(v) > 1 else ""
    return f"{sig(float(v.mean()))}{sd} (n={len(v)})"


def _span(x: pd.Series, fmt: str) -> str:
    v = pd.to_numeric(x, errors="coerce").dropna()
    if v.empty:
        return "undefined: not recorded"
    lo, hi = format(float(v.min()), fmt), format(float(v.max()), fmt)
    return lo if lo == hi else f"{lo}–{hi}"


def effective_window(mae: float, ladder: Mapping[str, float]) -> str:
    """How many observations back ``mae`` (a model's HMM per-sample MAE, bits) is worth against
    the control ladder: "none" when it is above the history-free filter's (the current
    observation and the exact prior marginal; a window-1 filter, with a uniform prior, can be
    worse than that), else the largest w whose windowed filter's MAE (``ladder["window w"]``) is
    at least ``mae``, among the windows that do better than the history-free filter, or
    "history-free" when it beats none of them; "undefined: …" without a
    ladder or a number."""
    if not ladder or not math.isfinite(mae):
        return "undefined: no HMM control ladder"
    free = ladder.get(HISTORY_FREE, math.inf)
    if not free >= mae:
        return "none"
    windows = {int(k.split()[1]): v for k, v in ladder.items()  # those past the history-free
               if k.startswith("window ") and v <= free}
    beaten = [w for w, v in windows.items() if v >= mae]
    return str(max(beaten)) if beaten else "history-free"


def paper_table(cells: pd.DataFrame,
                controls: Mapping[str, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """One row per (arch, preset) of ``cells`` (the sweep's ``cells.parquet``; finished cells
    only), columns ``"<task>: <what>"`` in the cells' task order: the headline ``mean ± sd
    (n=seeds)``, every evaluated override of it, ``steps`` and ``wall (s)`` (min–max over
    seeds), ``stopped`` (each stop reason with its count) and, with ``controls`` (the sweep's
    per-task control MAEs) on the HMM, ``window`` (:func:`effective_window`)."""
    ok = cells[cells["status"].isin(DONE)]
    rows = []
    for (arch, preset), g in ok.groupby(["arch", "preset"], sort=False):
        row: dict[str, str] = {"arch": str(arch), "preset": str(preset)}
        for task, t in g.groupby("task", sort=False):
            head = HEADLINE.get(str(task), MAE)
            row[f"{task}: {LABEL[head]}"] = _mean_sd(t[head]) if head in t else \
                "undefined: not recorded"
            for col in (c for c in t.columns if c.startswith(f"{head}@")):
                if t[col].notna().any():
                    row[f"{task}: {LABEL[head]} {col.split('@', 1)[1]}"] = _mean_sd(t[col])
            ladder = (controls or {}).get(str(task), {})
            if any(k.startswith("window ") for k in ladder) and head == MAE:
                mean = pd.to_numeric(t[MAE], errors="coerce").mean()
                row[f"{task}: window"] = effective_window(float(mean), ladder)
            row[f"{task}: steps"] = _span(t["steps"], ",.0f") if "steps" in t else \
                "undefined: not recorded"
            row[f"{task}: wall (s)"] = _span(t["wall_s"], ".0f") if "wall_s" in t else \
                "undefined: not recorded"
            reasons = t["stop_reason"].fillna("unknown").value_counts(sort=False) \
                if "stop_reason" in t else pd.Series(dtype=int)
            row[f"{task}: stopped"] = ", ".join(f"{r} {n}" for r, n in reasons.items()) or \
                "undefined: not recorded"
        rows.append(row)
    return pd.DataFrame(rows).fillna("undefined: not in the grid")


def markdown(table: pd.DataFrame) -> str:
    """``table`` as a GitHub-flavoured Markdown table (every cell as text)."""
    head = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = ["| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |"
            for r in table.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def main(argv: list[str] | None = None) -> int:
    """``python -m bayesgeom.analyses.sweep.paper_table SWEEP_DIR``: print the table a finished
    sweep wrote (``paper_table.parquet``) as Markdown, for the docs."""
    import argparse
    import sys
    from pathlib import Path

    from ...records import FileFault, exit_code, read_table

    ap = argparse.ArgumentParser(prog="python -m bayesgeom.analyses.sweep.paper_table",
                                 description=main.__doc__)
    ap.add_argument("sweep_dir", type=Path)
    args = ap.parse_args(argv)
    path = args.sweep_dir / "paper_table.parquet"
    if not path.is_file():
        ap.error(f"{path} does not exist: not a finished sweep (bayesgeom sweep writes it)")
    fix = "rerun the same bayesgeom sweep command to write it again"
    try:
        table = read_table(path, columns=("arch", "preset"), fix=fix)
        if not any(": " in str(c) for c in table.columns):
            raise FileFault(f"{path} has no '<task>: <what>' column: not Paper I's table; {fix}")
    except FileFault as e:
        print(f"paper_table: error: {e}", file=sys.stderr)
        return exit_code(e)
    print(markdown(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

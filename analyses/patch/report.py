"""The terminal view and the HTML report of a patching run (figures: :mod:`analyses.patch.figures`;
verdicts: :mod:`analyses.patch.findings`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..kit.findings import findings_text
from ..kit.html import QUICK_TEXT, Section, html_report
from ..kit.numbers import num, sig
from .figures import (
    HEATMAP_CAPTION,
    SCATTER_CAPTION,
    attribution_scatter,
    head_heatmap,
    position_heatmap,
)
from .findings import PRIMARY, findings
from .result import PatchingResult

#: the best cells shown per site kind and direction in the report's table
TOP = 5


def setup_text(r: PatchingResult) -> str:
    """What was patched, on which pairs, against which controls (report and summary)."""
    pairs = ", ".join(f"{k} {v}" for k, v in r.n_pairs.items())
    where = {"wind tunnel": f"{r.task}'s own pairs: one observation changed at position "
                            f"{r.edit_position}, reads {r.reads} scored (the sequences cut "
                            "after the last)",
             "sula": f"SULA prompts (clean: the shown examples; corrupt: one label flipped; "
                     f"Bayes null: two labels swapped), labels {r.labels}, the exact posterior "
                     "over the two labels at the last token",
             "file": "free prompt pairs (logit difference at the last token; no exact "
                     "posterior, so no Bayes-null control)"}[r.source]
    dropped = (f"; pairs dropped for unequal token lengths: {r.dropped}"
               if any(r.dropped.values()) else "")
    tests = "; ".join(f"{t.direction}: {t.n_tests} cells tested, {sig(t.n_effective)} "
                      f"effective tests, {t.n_surviving} survive" for t in r.tests)
    return (f"{r.model} ({r.n_layers} layers): {where}. Pairs: {pairs}{dropped}. Grid: "
            f"{r.n_cells} cells of {', '.join(r.sites)} at positions {r.positions}; "
            f"directions {', '.join(r.directions)}; conditions {len(r.conditions)} (the trained "
            "model on the evidence pairs, on the Bayes-null pairs and with an unrelated source; "
            f"the random-init twin, seed {r.twin_seed}, on the evidence pairs). Per-cell tests "
            f"(paired t-test against the unrelated source, Holm over the grid): {tests}.")


def format_summary(r: PatchingResult) -> str:
    """The verdict table, then one line of setup and the run's size."""
    head = (QUICK_TEXT + "\n") if r.quick else ""
    return (head + findings_text(findings(r)) + "\n" + setup_text(r)
            + f"\n{r.n_cells} cells x {len(r.conditions)} conditions in {num(r.wall_s, 1)} s"
            + (f" ({r.reused_conditions} conditions reused)" if r.reused_conditions else ""))


def top_cells(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The :data:`TOP` cells of each site kind and direction by mean effect (trained model,
    evidence pairs), with their controls beside them."""
    t = table[(table["model"] == "trained") & (table["pairs"] == "evidence")]
    cols = ["direction", "kind", "cell", metric, "effect_low", "effect_high",
            "recovered_fraction", "recovered_fraction_low", "recovered_fraction_high",
            "p_holm", "null_abs_effect", "twin_recovered_fraction_high", "survives",
            "attribution_" + metric, "logit_diff_recovered", "kl_clean_run_bits"]
    t = t.sort_values(metric, ascending=False).groupby(["direction", "kind"], sort=False).head(TOP)
    return t[[c for c in cols if c in t.columns]]


def definitions_table(r: PatchingResult) -> pd.DataFrame:
    return pd.DataFrame({"measurement": list(r.definitions),
                         "definition": list(r.definitions.values())})


def figure_sections(r: PatchingResult, tables: dict[str, pd.DataFrame]) -> list[Section]:
    """The heatmaps of the primary direction and the attribution scatter."""
    table = tables["table.parquet"]
    d = PRIMARY if PRIMARY in r.directions else r.directions[0]
    out: list[Section] = []
    for kind in dict.fromkeys(table["kind"]):
        t = table[table["kind"] == kind]
        if t["head"].notna().any() and t["position"].isna().all():
            out.append((f"{kind} per layer × head ({d}, every position at once)",
                        head_heatmap(table, kind, d, r.metric), HEATMAP_CAPTION))
        elif t["position"].notna().any() and t["head"].isna().all():
            out.append((f"{kind} per layer × position ({d})",
                        position_heatmap(table, kind, d, r.metric), HEATMAP_CAPTION))
    attr = tables.get("attribution.parquet")
    if attr is not None and len(attr):
        out.append(("Attribution against exact patching",
                    attribution_scatter(attr, "bits" if r.metric == "effect_bits"
                                        else "logits"), SCATTER_CAPTION))
    return out


def write_report(path: Path, r: PatchingResult, tables: dict[str, pd.DataFrame],
                 manifest: dict[str, Any]) -> Path:
    table = tables["table.parquet"]
    sections: list[Section] = [("Setup", setup_text(r)), *figure_sections(r, tables),
                               ("Best cells beside their controls", top_cells(table, r.metric)),
                               ("Definitions", definitions_table(r))]
    return html_report(path, f"Patching — {r.task} ({r.model})", findings(r), sections,
                       manifest, quick=r.quick)

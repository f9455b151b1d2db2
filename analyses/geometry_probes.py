"""The further probes of a geometry run, each a :class:`~analyses.geometry_measures.Measure`
registered in :data:`MEASURES`; and :func:`catalogue`, every metric a run can write.

A new probe is one function returning :class:`~analyses.geometry_result.MetricRow` s and one
``Measure`` entry here; the pipeline captures what it declares, and its rows reach
``table.parquet``, ``summary.json``, the report (curves, table) and ``compare`` with no other
edit.
"""

from __future__ import annotations

import numpy as np

from analyses.geometry_measures import CORE_SPECS, Measure, MetricSpec, SetData
from analyses.geometry_result import MetricRow
from probes import value_manifold_summary

PAPER_I_VM = ("Paper I value manifold: centred PCA of the attention output attn_out.L at the "
              "final token (a supervised position for a wind tunnel)")


def value_manifold_rows(d: SetData) -> list[MetricRow]:
    """Paper I's value-manifold summary per layer: PC1 share and 90 % dimension, and per target
    the linear R² (80/20 split), the same R² with the target shuffled (the control), the
    ordering score and max |corr(PC_k, H)| over k ≤ 5."""
    rows = []
    for L in d.layers:
        x = d.last[f"attn_out.{L}"].double().numpy()
        for i, (t, h) in enumerate(d.targets.items()):
            s = value_manifold_summary(x, h, seed=d.seed)
            shuffled = np.random.default_rng([d.seed, L]).permutation(h)
            ctrl = value_manifold_summary(x, shuffled, seed=d.seed).linear_r2
            if i == 0:
                rows += [MetricRow(d.name, L, "vm_pc1", None, s.pc1),
                         MetricRow(d.name, L, "vm_dim90", None, float(s.dim90))]
            rows += [MetricRow(d.name, L, "vm_linear_r2", t, s.linear_r2),
                     MetricRow(d.name, L, "vm_linear_r2_shuffled", t, ctrl),
                     MetricRow(d.name, L, "vm_ordering", t, s.ordering_score),
                     MetricRow(d.name, L, "vm_max_abs_corr", t,
                               float(np.nanmax(np.abs(s.corr_pc_entropy))))]
    return rows


#: pluggable measures, in the order they run
MEASURES: tuple[Measure, ...] = (
    Measure("value_manifold", "set", (
        MetricSpec("vm_pc1", "attention-output PC1 share", PAPER_I_VM, compare=True),
        MetricSpec("vm_dim90", "attention-output 90 % dimension", PAPER_I_VM),
        MetricSpec("vm_linear_r2", "linear R² of entropy from attn_out", PAPER_I_VM,
                   compare=True),
        MetricSpec("vm_linear_r2_shuffled", "linear R² with entropy shuffled (control)",
                   PAPER_I_VM, compare=True),
        MetricSpec("vm_ordering", "ordering score of PC1 along entropy", PAPER_I_VM),
        MetricSpec("vm_max_abs_corr", "max |corr(PC_k, entropy)|, k ≤ 5", PAPER_I_VM)),
        value_manifold_rows, last_sites=lambda layers: [f"attn_out.{L}" for L in layers]),
)


def catalogue() -> dict[str, MetricSpec]:
    """Every metric a geometry run can write, by name."""
    return {s.name: s for s in (*CORE_SPECS, *(s for m in MEASURES for s in m.specs))}

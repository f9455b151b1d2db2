"""The further probes of a geometry run, each a :class:`~analyses.geometry_measures.Measure`
registered in :data:`MEASURES`; and :func:`catalogue`, every metric a run can write.

A new probe is one function returning :class:`~analyses.geometry_result.MetricRow` s and one
``Measure`` entry here; the pipeline captures what it declares, and its rows reach
``table.parquet``, ``summary.json``, the report (curves, table) and ``compare`` with no other
edit.
"""

from __future__ import annotations

from analyses.geometry_measures import CORE_SPECS, Measure, MetricSpec

#: pluggable measures, in the order they run
MEASURES: tuple[Measure, ...] = ()


def catalogue() -> dict[str, MetricSpec]:
    """Every metric a geometry run can write, by name."""
    return {s.name: s for s in (*CORE_SPECS, *(s for m in MEASURES for s in m.specs))}

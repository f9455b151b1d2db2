"""Self-contained HTML reports: plotly figures (JavaScript embedded once) and tables."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from ...records import json_safe, write_text

#: line colours of the reports' figures, in order of first appearance
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def legend_names(fig: go.Figure) -> set[str]:
    """Names already in ``fig``'s legend (so a trace repeated in another panel is not listed
    twice)."""
    return {t.name for t in fig.data if t.showlegend is not False}


def html_report(
    path: Path, title: str, sections: list[tuple[str, object]], manifest: dict | None = None
) -> Path:
    """Write ``sections`` — (heading, Figure | DataFrame | str) — to one offline HTML file."""
    parts = [f"<h1>{html.escape(title)}</h1>"]
    first_fig = True
    for heading, body in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if isinstance(body, go.Figure):
            parts.append(body.to_html(full_html=False, include_plotlyjs=first_fig))
            first_fig = False
        elif isinstance(body, pd.DataFrame):
            parts.append(body.to_html(index=False, float_format=lambda x: f"{x:.4g}", border=0))
        else:
            parts.append(f"<p>{html.escape(str(body))}</p>")
    if manifest is not None:
        text = json.dumps(json_safe(manifest), indent=2)
        parts.append(f"<h2>Run manifest</h2><pre>{html.escape(text)}</pre>")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;"
        "text-align:right}pre{background:#f6f6f6;padding:1em;overflow:auto}"
    )
    doc = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>"
    )
    return write_text(path, doc)

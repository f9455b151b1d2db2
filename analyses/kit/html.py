"""Self-contained HTML reports that open with what was found.

Every report is, in order: its title, a QUICK RUN banner where the run was shrunk, the
verdict table (:mod:`.findings`), then the details — figures (plotly, JavaScript embedded
once), each followed by the line that says what to look for in it, and tables with readable
headers and numbers to 3 significant figures — and last the run manifest.

Example:
    >>> import tempfile, pathlib
    >>> import pandas as pd
    >>> from bayesgeom.analyses.kit.findings import Finding
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> _ = html_report(p, "toy", [Finding("a claim", 0.5, survives=False)],
    ...                 [("Numbers", pd.DataFrame({"entropy_mae_bits": [0.012345]}))])
    >>> text = p.read_text()
    >>> text.index("What was found") < text.index("Numbers"), "0.0123" in text
    (True, True)
    >>> readable("entropy_mae_bits"), readable("wall_s"), readable("p_holm")
    ('entropy MAE (bits)', 'wall (s)', 'p (Holm)')
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from ...records import json_safe, write_text
from .findings import Finding, findings_html
from .numbers import sig

#: line colours of the reports' figures, in order of first appearance
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")

#: what a quick run's report says first
QUICK_TEXT = ("QUICK RUN: every step was shrunk to a smoke test. The models are barely "
              "trained and the samples tiny, so no number below is a result.")

#: a section: (heading, body) or (heading, body, what to look for); a figure needs the last
Section = tuple[str, object] | tuple[str, object, str]

#: column names that are not derived by :func:`readable`'s rules
LABELS = {"mae": "MAE", "kl": "KL", "corr": "corr", "p_holm": "p (Holm)",
          "p_holm_primary": "p (Holm, primary family)", "n_eff": "effective number",
          "pc1": "PC1 share", "r2": "R²", "auc": "AUC"}
_UNITS = {"bits": "bits", "nats": "nats", "s": "s", "ms": "ms", "mb": "MB", "gb": "GB",
          "pct": "%", "per_s": "per s"}
_WORDS = {"mae": "MAE", "kl": "KL", "pca": "PCA", "pc1": "PC1", "pc2": "PC2", "r2": "R²",
          "llm": "LLM", "hmm": "HMM", "rmse": "RMSE", "tvd": "TVD", "cka": "CKA"}


def readable(column: object) -> str:
    """A table header a reader can parse: a unit suffix in parentheses (``_bits`` →
    ``(bits)``), underscores as spaces, acronyms in capitals; names with spaces or symbols
    are kept."""
    name = str(column)
    if name in LABELS:
        return LABELS[name]
    if not re.fullmatch(r"[a-z0-9_]+", name):
        return name
    unit = ""
    for suffix, u in sorted(_UNITS.items(), key=lambda kv: -len(kv[0])):
        if name.endswith("_" + suffix):
            name, unit = name[: -len(suffix) - 1], u
            break
    words = [_WORDS.get(w, w) for w in name.split("_")]
    if words and words[0] == "p" and len(words) > 1:
        words = ["p", f"({' '.join(words[1:])})"]
    return " ".join(words) + (f" ({unit})" if unit else "")


#: columns whose values are metric names, shown as :func:`readable` shows a header
NAME_COLUMNS = ("metric", "check", "quantity")


#: a text cell at most this long never wraps
SHORT_CELL = 12


def table_html(df: pd.DataFrame) -> str:
    """``df`` as an HTML table that scrolls sideways rather than overflow the page: readable
    headers and metric names (:data:`NAME_COLUMNS`), numbers to 3 significant figures, whole
    numbers as counts, a missing value as ``undefined``."""
    view = df.copy()
    for c in NAME_COLUMNS:
        if c in view.columns and view[c].dtype == object:
            view[c] = view[c].map(lambda x: readable(x) if isinstance(x, str) else x)
    view = view.rename(columns=readable)

    def fmt(x: object) -> str:
        if isinstance(x, bool) or x is None:
            return "undefined" if x is None else str(x)
        if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 10):
            return f"{int(x):,}"
        if isinstance(x, float):
            return sig(x)
        text = str(x)
        # "≤ 1/11" stays one piece; a longer cell wraps at its spaces (a long word widens
        # the table, which scrolls sideways, rather than break inside a number or a path)
        return text.replace(" ", "\u00a0") if len(text) <= SHORT_CELL else text

    body = view.map(fmt) if len(view) else view
    return ("<div class='table-wrap'>" + body.to_html(index=False, border=0, na_rep="undefined")
            + "</div>")


def anchor(heading: str) -> str:
    """The id of a section heading, so a link (or a browser) can open the report there.

    Example:
        >>> anchor("3. SULA on SmolLM2-135M")
        'sula-on-smollm2-135m'
    """
    words = re.findall(r"[a-z0-9]+", heading.lower().lstrip("0123456789. "))
    return "-".join(words)[:60] or "section"


def html_report(path: Path, title: str, findings: list[Finding], sections: list[Section],
                manifest: dict | None = None, *, quick: bool = False) -> Path:
    """Write one offline HTML report (module doc): ``findings`` first, then ``sections``.

    Raises:
        ValueError: a figure section without its line saying what to look for.
    """
    title = ("QUICK RUN — " if quick else "") + title
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if quick:
        parts.append(f"<p class='quick'>{html.escape(QUICK_TEXT)}</p>")
    parts.append(findings_html(findings))
    first_fig = True
    seen: dict[str, int] = {}
    for heading, body, *rest in sections:
        caption = rest[0] if rest else ""
        key = anchor(heading)
        seen[key] = seen.get(key, 0) + 1  # a repeated heading gets -2, -3: ids stay unique
        key = key if seen[key] == 1 else f"{key}-{seen[key]}"
        parts.append(f"<h2 id='{key}'>{html.escape(heading)}</h2>")
        if isinstance(body, go.Figure):
            if not caption:
                raise ValueError(f"report {title!r}: figure {heading!r} needs a line saying "
                                 "what to look for")
            body.update_layout(legend={"title": {"text": ""}})
            parts.append(body.to_html(full_html=False, include_plotlyjs=first_fig))
            first_fig = False
        elif isinstance(body, pd.DataFrame):
            parts.append(table_html(body))
        elif "\n" in str(body):  # text laid out in lines and columns keeps its layout
            parts.append(f"<pre>{html.escape(str(body))}</pre>")
        else:
            parts.append(f"<p>{html.escape(str(body))}</p>")
        if caption:
            parts.append(f"<p class='caption'>{html.escape(caption)}</p>")
    if manifest is not None:
        text = json.dumps(json_safe(manifest), indent=2)
        parts.append(f"<h2>Run manifest</h2><pre>{html.escape(text)}</pre>")
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222;"
        "padding:0 1em}.table-wrap{max-width:100%;overflow-x:auto}"
        "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;"
        "text-align:right;vertical-align:top}th{white-space:normal}"
        "td{max-width:28em;overflow-wrap:break-word}"
        "pre{background:#f6f6f6;padding:1em;overflow:auto}.tally{font-weight:600}"
        "table.findings td,table.findings th{text-align:left}"
        "table.findings td:nth-child(2){text-align:right;"
        "white-space:nowrap}.verdict-yes{color:#1a7f37;font-weight:600}.verdict-no"
        "{color:#b42318;font-weight:600}.verdict-none{color:#8a6d00;font-weight:600}"
        ".caption{color:#555;font-style:italic;margin-top:0}.quick{background:#fff4ce;"
        "border:1px solid #e0b400;padding:.6em 1em;font-weight:600}"
    )
    doc = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(parts)}</body></html>"
    )
    return write_text(path, doc)


def legend_names(fig: go.Figure) -> set[str]:
    """Names already in ``fig``'s legend (so a trace repeated in another panel is not listed
    twice)."""
    return {t.name for t in fig.data if t.showlegend is not False}

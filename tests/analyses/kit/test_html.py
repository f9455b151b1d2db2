"""The reports' shared shape (issue 25): the verdict table first, a line under every figure,
readable tables, quick runs labelled."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from bayesgeom.analyses.kit.findings import Finding, findings_text
from bayesgeom.analyses.kit.html import html_report, readable, table_html
from bayesgeom.analyses.kit.numbers import sig


def _fig() -> go.Figure:
    return go.Figure(go.Scatter(y=[1, 2], name="trained"))


def test_the_verdict_table_comes_before_every_detail(tmp_path: Path) -> None:
    found = [Finding("keys orthogonal (Paper I)", 0.91, "random-init twin 0.43", True,
                     "gap +0.48"),
             Finding("PC1 tracks entropy", float("nan"), "position control", None,
                     undefined="one prompt set only")]
    p = html_report(tmp_path / "r.html", "toy", found,
                    [("Curves", _fig(), "Look for: the trained line above the twin's."),
                     ("Table", pd.DataFrame({"kl_bits": [0.123456, math.nan]}))],
                    {"seed": 0})
    text = p.read_text()
    order = [text.index(s) for s in ("What was found", "keys orthogonal",
                                     "<h2 id='curves'>Curves", "Look for: the trained line",
                                     "<h2 id='table'>Table", "<h2>Run manifest")]
    assert order == sorted(order)
    assert "undefined: one prompt set only" in text and "survives" in text
    assert "KL (bits)" in text and "0.123" in text and "0.123456" not in text
    assert "QUICK RUN" not in text


def test_a_figure_without_what_to_look_for_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="what to look for"):
        html_report(tmp_path / "r.html", "toy", [], [("Curves", _fig())])
    assert not (tmp_path / "r.html").exists()


def test_a_quick_run_says_so_first(tmp_path: Path) -> None:
    text = html_report(tmp_path / "r.html", "toy", [], [], quick=True).read_text()
    assert text.index("QUICK RUN") < text.index("What was found")
    assert "no number below is a result" in text


def test_an_undefined_number_needs_its_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        Finding("a claim", float("nan"))
    with pytest.raises(ValueError, match="reason"):
        Finding("a claim", None)
    assert Finding("a claim", 1.0).verdict_text() == "no verdict"


def test_numbers_and_labels_read_plainly() -> None:
    assert [sig(x) for x in (0.000123456, 1.0, 123.456, 98765.4, math.inf)] == \
        ["0.000123", "1", "123", "98,765", "undefined"]
    assert readable("entropy_mae_bits") == "entropy MAE (bits)"
    assert readable("wall_s") == "wall (s)" and readable("|ρ|") == "|ρ|"
    html = table_html(pd.DataFrame({"steps": [1200.0], "flag": [True], "x": [None]}))
    assert "1,200" in html and "True" in html and "undefined" in html
    text = findings_text([Finding("c", 2.0, "ctl 1", False, "p = 0.3")])
    assert "[does not survive] c: 2; control: ctl 1 (p = 0.3)" in text

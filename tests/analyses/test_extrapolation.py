"""``bayesgeom extrapolate``: trains a model per scheme, evaluates it at L × m in chunks, reuses
finished cells, and reads the extrapolation ratio by its stated rule."""

from __future__ import annotations

import json

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.extrapolate.run import (
    ExtrapolationConfig,
    extrapolation_ratio,
    run_extrapolation,
)
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.records import read_table


def test_the_ratio_is_the_last_multiple_before_the_first_drop():
    acc = {1: 0.9, 2: 0.88, 5: 0.86, 10: 0.7, 50: 0.9}
    assert extrapolation_ratio(acc, 0.05) == 5  # 10 drops; a later recovery does not count
    assert extrapolation_ratio(acc, 0.25) == 50
    assert extrapolation_ratio({1: 0.5}, 0.0) == 1


def test_a_tiny_study_writes_its_table_and_reuses_cells(tmp_path, capsys):
    args = ["extrapolate", "--out", str(tmp_path / "e"), "--archs", "llama-bam,llama-alibi",
            "--preset", "tiny", "--steps", "5", "--length", "16", "--multiples", "1,3",
            "--n-eval", "4", "--chunk", "8", "--json", "--no-progress"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["arch"] for s in out["schemes"]] == ["llama-bam", "llama-alibi"]
    table = read_table(tmp_path / "e" / "table.parquet")
    assert set(table["length"]) == {16, 48} and len(table) == 4
    assert table["bayes_accuracy"].between(0.99, 1.0).all()  # noise 0: a delta posterior
    assert (table["chance"] == 1 / 16).all()
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "e" / "cells").iterdir()}
    assert main(args) == 0  # same settings: every cell is reused, nothing rewritten
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "e" / "cells").iterdir()}
    assert before == after


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ExperimentError, match="include 1"):
        run_extrapolation(ExtrapolationConfig(out=tmp_path / "x", multiples=(2, 5)))
    with pytest.raises(ExperimentError, match="no attention"):
        run_extrapolation(ExtrapolationConfig(out=tmp_path / "y", archs=("lstm",)))

"""``bayesgeom extrapolate``: trains a model per scheme, evaluates it at L × m in chunks, reuses
finished cells, and reads the extrapolation ratio by its stated rule."""

from __future__ import annotations

import json

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.extrapolate.report import findings, format_summary
from bayesgeom.analyses.extrapolate.result import ExtrapolateResult, SchemeSummary
from bayesgeom.analyses.extrapolate.run import (
    ExtrapolateConfig,
    extrapolation_ratio,
    run_extrapolate,
)
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.records import read_result, read_table


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
    html = (tmp_path / "e" / "report.html").read_text()
    assert html.index("What was found") < html.index("The run") < html.index("Look for:")
    res = read_result(ExtrapolateResult, tmp_path / "e" / "summary.json")
    assert res.chance == 1 / 16
    bam, alibi, claim = findings(res)  # no learned-absolute scheme: no control, no verdict
    assert alibi.survives is None and alibi.value_text().endswith("× L")
    assert bam.survives is None and "no learned-absolute" in bam.control
    assert claim.survives is None and "only up to 3× L" in claim.evidence
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "e" / "cells").iterdir()}
    assert main(args) == 0  # same settings: every cell is reused, nothing rewritten
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "e" / "cells").iterdir()}
    assert before == after


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ExperimentError, match="include 1"):
        run_extrapolate(ExtrapolateConfig(out=tmp_path / "x", multiples=(2, 5)))
    with pytest.raises(ExperimentError, match="no attention"):
        run_extrapolate(ExtrapolateConfig(out=tmp_path / "y", archs=("lstm",)))


def test_a_scheme_survives_when_it_outlasts_learned_positions():
    res = ExtrapolateResult(
        length=16, multiples=[1, 2, 500], tolerance=0.05, noise=0.0, steps=10, preset="tiny",
        n_eval=4, schemes=[SchemeSummary("llama-bam", 1.0, 0.99, 500),
                           SchemeSummary("llama-nope", 0.07, 0.06, 500),
                           SchemeSummary("llama", 1.0, 0.1, 2)], bam_claim="", wall_s=1.0,
        chance=1 / 16)
    bam, nope, claim = findings(res)
    assert bam.survives is True and bam.control == "learned absolute positions (llama) 2× L"
    assert nope.survives is None and "did not learn" in nope.evidence  # at chance: vacuous
    assert claim.survives is True and claim.value == 500
    assert format_summary(res).startswith("What was found")


def test_a_folder_written_under_the_former_name_is_still_an_extrapolate_run(tmp_path):
    """Run records written before the command's rename name it ``extrapolation``: such a
    folder is still checked, reused and read (by ``monitor --extrapolation``) as this
    experiment's run; another experiment's folder is still refused."""
    from bayesgeom.analyses.kit.out_dirs import claim
    from bayesgeom.analyses.monitor.config import MonitorConfig
    from bayesgeom.records import RunDir, RunDirError, read_json, run_settings

    old = tmp_path / "runs" / "extrapolation"
    cfg = ExtrapolateConfig(out=old, archs=("llama-bam",), multiples=(1, 2))
    assert "extrapolation" in ExtrapolateConfig.formerly
    with RunDir(old, "extrapolation", run_settings(cfg)) as rd:  # as the old name wrote it
        rd.finish()
    assert read_json(old / "run.json")["experiment"] == "extrapolation"
    cfg.check()  # no "holds a bayesgeom extrapolation run"
    MonitorConfig(out=tmp_path / "m", extrapolation=old).check()
    with claim(cfg) as rd:
        assert rd.done  # the same settings: the finished run is reused, not restarted
    other = tmp_path / "steer"
    with RunDir(other, "steer", {}) as rd:
        rd.finish()
    with pytest.raises(RunDirError, match="steer run"):
        ExtrapolateConfig(out=other).check()
    with pytest.raises(ExperimentError, match="not a `bayesgeom extrapolate` run"):
        MonitorConfig(out=tmp_path / "m2", extrapolation=other).check()

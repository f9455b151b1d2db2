"""``bayesgeom monitor``: every check has a value or a reason, thresholds are printed and
configurable, a moved threshold flips pass and fail, sub-runs are reused; a text model and an
extrapolation run."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.extrapolate.result import ExtrapolateResult, SchemeSummary
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.monitor.checks import KL_CHECK, convergence_row, extrapolation_row
from bayesgeom.analyses.monitor.report import finding, findings, format_summary
from bayesgeom.analyses.monitor.result import FAIL, NOT_MEASURABLE, PASS, MonitorResult, judge
from bayesgeom.analyses.monitor.run import MonitorConfig, run_monitor
from bayesgeom.probes.posterior_consistency import coverage
from bayesgeom.records import read_result, read_table, write_result

CHECKS = ["key orthogonality", "hypothesis-space coverage", KL_CHECK,
          "domain-manifold separation", "extrapolation ratio", "convergence speed"]
SMALL = ["--n-sequences", "16", "--verify-prompts", "24", "--n-null", "10", "--no-progress"]


def _rows(out: dict) -> dict[str, dict]:
    return {r["check"]: r for r in out["rows"]}


def _every_row_has_a_value_or_a_reason(rows: dict[str, dict]) -> None:
    assert list(rows) == CHECKS
    for r in rows.values():
        if r["status"] == NOT_MEASURABLE:
            assert r["value"] is None and r["note"].startswith("not measurable: "), r
            assert len(r["note"]) > len("not measurable: ") + 10
        else:
            assert r["status"] in (PASS, FAIL)
            assert r["value"] is not None or r["note"], r


def test_wind_tunnel_checklist_thresholds_flip_and_reuse(windtunnel_run, tmp_path, capsys):
    out = tmp_path / "m"
    args = ["monitor", "--model", str(windtunnel_run), "--out", str(out), *SMALL]
    assert main([*args, "--json"]) == 0
    rows = _rows(json.loads(capsys.readouterr().out))
    _every_row_has_a_value_or_a_reason(rows)
    assert "one domain" in rows["domain-manifold separation"]["note"]
    assert "no extrapolation run given" in rows["extrapolation ratio"]["note"]
    kl = rows[KL_CHECK]
    assert kl["value"] > 0 and kl["control"] > 0 and kl["threshold"] == 0.01
    assert "output" in kl["definition"] and "attention–posterior consistency" in kl["note"]
    assert "undefined" in kl["note"]  # bijection: every shown value has posterior 0
    assert 0 <= rows["hypothesis-space coverage"]["value"] <= 1
    key = rows["key orthogonality"]
    assert key["control_label"].startswith("random-init twin") and 0 < key["reference"] < 1
    assert "1 − mean |cos|" in key["definition"] and "isotropy" in key["note"]
    assert key["beats_control"] == (key["value"] > max(key["control"], key["reference"]))
    # 20 steps never reach 0.05 bits: a fail that says so, not a missing number
    conv = rows["convergence speed"]
    assert conv["status"] == FAIL and "never" in conv["note"]
    for f in ("table.csv", "table.parquet", "summary.json", "manifest.json", "report.html",
              "detect/report.html", "verify/report.html"):
        assert (out / f).is_file(), f
    assert len(read_table(out / "table.parquet")) == len(CHECKS)
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("The model") < html.index("Look for:")
    res = read_result(MonitorResult, out / "summary.json")
    verdicts = {f.claim.split(" <")[0].split(" >")[0]: f for f in findings(res)}
    assert list(verdicts) == CHECKS
    assert verdicts["domain-manifold separation"].survives is None
    assert "one domain" in verdicts["domain-manifold separation"].value_text()
    assert verdicts["convergence speed"].survives is False  # never reached: fails, says why
    assert "never" in verdicts["convergence speed"].value_text()
    assert verdicts["key orthogonality"].survives == (key["status"] == PASS
                                                      and key["beats_control"])
    assert format_summary(res).startswith("What was found")

    detect_mtime = (out / "detect" / "summary.json").stat().st_mtime_ns
    above, below = kl["value"] * 2, kl["value"] / 2
    for kl_max, expect in ((above, PASS), (below, FAIL)):
        assert main([*args, "--kl-max", str(kl_max), "--convergence-mae-bits", "100"]) == 0
        text = capsys.readouterr().out
        for flag in ("--key-orthogonality-min 0.9", "--coverage-min 0.8",
                     "--separation-min 0.7", f"--kl-max {kl_max:g}",
                     "--extrapolation-min 100", "--convergence-max-steps 2000",
                     "--convergence-mae-bits 100"):
            assert flag in text, flag
        got = _rows(json.loads((out / "summary.json").read_text()))
        assert got[KL_CHECK]["status"] == expect
        assert got["convergence speed"]["value"] == 20 and got["convergence speed"]["status"] \
            == PASS  # the first eval (step 20) is below 100 bits
    assert (out / "detect" / "summary.json").stat().st_mtime_ns == detect_mtime  # reused
    html = (out / "report.html").read_text()
    assert f"--kl-max {below:g}" in html and "#f8d7da" in html  # thresholds; a red cell


def test_text_model_rows_say_why(text_models, base_corpora, tmp_path):
    res = run_monitor(MonitorConfig(model=str(text_models["llama"]), out=tmp_path / "t",
                                    n_prompts=8, n_per_k=2, n_null=10, geometry_per_quintile=4,
                                    geometry_pool=60, geometry_bootstrap=20, progress=False))
    assert res.kind == "language model"
    rows = {r.check: r for r in res.rows}
    assert list(rows) == CHECKS
    for r in res.rows:
        assert r.measured or r.note.startswith("not measurable: "), r
        assert r.measured == math.isfinite(r.value)
    assert "no training log" in rows["convergence speed"].note
    assert "pretrained LLM" in rows["extrapolation ratio"].note
    sep = rows["domain-manifold separation"]
    assert sep.measured and 0 <= sep.value <= 1 and math.isfinite(sep.control)
    assert (tmp_path / "t" / "geometry" / "report.html").is_file()
    kl = rows[KL_CHECK]  # SULA label picking may fail on a 320-token tokenizer
    assert kl.measured or "label" in kl.note


def test_coverage_is_one_for_the_exact_posterior_and_falls_when_hypotheses_are_dropped():
    rng = np.random.default_rng(0)
    bayes = rng.dirichlet(np.ones(5), size=50)
    assert np.allclose(coverage(bayes, bayes), 1.0)
    onehot = np.eye(5)[bayes.argmax(1)]
    assert np.allclose(coverage(bayes, onehot), bayes.max(1))
    assert judge(0.95, ">", 0.9) == PASS and judge(0.9, ">", 0.9) == FAIL
    assert judge(math.nan, "<", 1.0) == FAIL


def test_extrapolation_ratio_is_read_for_the_runs_own_model(tmp_path):
    run = tmp_path / "extrapolation"
    for arch in ("llama-bam", "llama"):
        (run / "train" / arch).mkdir(parents=True)
    write_result(run / "summary.json", ExtrapolateResult(
        length=16, multiples=[1, 2, 500], tolerance=0.05, noise=0.0, steps=10, preset="tiny",
        n_eval=4, schemes=[SchemeSummary("llama-bam", 1.0, 0.99, 500),
                           SchemeSummary("llama", 1.0, 0.1, 2)], bam_claim="", wall_s=1.0))
    row = extrapolation_row(run / "train" / "llama-bam", run, 100)
    assert (row.value, row.status, row.control, row.beats_control) == (500, PASS, 2, True)
    learned = extrapolation_row(run / "train" / "llama", run, 100)
    assert (learned.status, learned.beats_control) == (FAIL, False)
    # as verdicts: BAM passes and beats learned positions; the learned scheme itself does not
    assert finding(row).survives is True and "learned absolute positions" in finding(row).control
    assert finding(learned).survives is False
    other = extrapolation_row(tmp_path / "elsewhere", run, 100)
    assert other.status == NOT_MEASURABLE and "not one of" in other.note
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    assert "has not finished" in extrapolation_row(run, unfinished, 100).note


def test_convergence_needs_a_training_log(tmp_path, windtunnel_run):
    assert "no finished training log" in convergence_row(tmp_path, 0.05, 2000).note
    assert convergence_row(windtunnel_run / "model", 100, 2000).value == 20  # <run>/model


def test_bad_settings_are_one_line_usage_errors(tmp_path, capsys):
    with pytest.raises(ExperimentError, match="not a directory"):
        MonitorConfig(out=tmp_path / "x", extrapolation=tmp_path / "nope").check()
    code = main(["monitor", "--out", str(tmp_path / "y"), "--kl-max", "-1"])
    assert code == 2 and "kl" in capsys.readouterr().err
    with pytest.raises(ExperimentError, match="two different domains"):
        MonitorConfig(out=tmp_path / "x", separation_sets=("code", "code")).check()


def test_the_orthogonality_row_says_antiparallel_pairs_can_pass_with_more_keys_than_dims():
    """±e_i in d = 16 (32 keys) scores 0.968, above the 0.9 threshold, with no two keys
    orthogonal to all others: a frame with m > d says so beside its pass."""
    from bayesgeom.analyses.detect.result import DetectResult, HeadFrame
    from bayesgeom.analyses.monitor.checks import ANTIPARALLEL, key_row
    from bayesgeom.probes.key_frame import frame_orthogonality

    keys = np.vstack([np.eye(16), -np.eye(16)])
    score = frame_orthogonality(keys)
    assert score == pytest.approx(1 - 16 / (32 * 31 / 2)) and score > 0.9

    def head(condition: str, o: float, m: int) -> HeadFrame:
        return HeadFrame(condition=condition, layer=0, head=0, m=m, d=16, mean_abs_cos=1 - o,
                         orthogonality=o, chance_abs_cos=0.2, chance=0.8,
                         reduction_vs_random=0.0, orthogonalisable=m <= 16, welch=0.0,
                         ceiling=1.0, vs_ceiling=o, isotropy=0.5, isotropy_chance=0.6,
                         effective_rank=4.0, utilisation=0.25)

    for m, said in ((32, True), (8, False)):
        res = DetectResult(model="toy", frame="toy", n_frame_tokens=m, layers=[0],
                           n_kv_heads=1, d_head=16, heads=[head("trained", score, m),
                                                           head("random_init", 0.6, m)])
        row = key_row(res, 0.9, "here")
        assert row.status == PASS and (ANTIPARALLEL in row.note) is said

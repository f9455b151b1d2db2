"""The learned-first gate: a wind tunnel that has not beaten its context-blind baseline gets no
verdict from geometry, compare, detect, verify or steer (the first row says why, with its
numbers beside chance and, on the HMM, the history-free filter); a tunnel that has learned
keeps its verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bayesgeom.analyses.compare.report import findings as compare_findings
from bayesgeom.analyses.compare.run import CompareConfig, run_compare
from bayesgeom.analyses.detect.report import findings as detect_findings
from bayesgeom.analyses.detect.run import DetectConfig, run_detect
from bayesgeom.analyses.geometry.findings import findings as geometry_findings
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.kit.findings import Finding, findings_text
from bayesgeom.analyses.kit.learned import WITHHELD, gate, learned_of
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.records import read_result
from bayesgeom.windtunnel.learned import LearnedCheck


@pytest.fixture(scope="module")
def fifty_step_hmm(tmp_path_factory):
    """An HMM tunnel trained 50 steps: far from the history-free filter."""
    from bayesgeom.windtunnel.training import TrainConfig, train

    out = tmp_path_factory.mktemp("gate") / "hmm50"
    train(TrainConfig(task="hmm", task_params={"K": 8}, arch="transformer", preset="tiny",
                      steps=50, seed=0, batch_size=16, eval_every=50, eval_size=32,
                      final_eval_size=200, ckpt_every=50, warmup_steps=5), out, progress=False)
    return out


def _small(**kw) -> GeometryConfig:
    return GeometryConfig(n_per_quintile=4, pool_size=60, n_resamples=20, curve_resamples=10,
                          progress=False, **kw)


def test_the_gate_leaves_other_models_alone_and_withholds_an_unlearned_tunnels_verdicts():
    rows = [Finding("a", 0.5, survives=True), Finding("b", 0.1, survives=False)]
    assert gate(rows, None) == rows
    good = LearnedCheck("hmm", 0.02, 2000, "x", "history-free filter", 0.08, {})
    bad = replace(good, mae_bits=0.05)  # beats the filter, but not by half
    assert [r.survives for r in gate(rows, good)] == [True, True, False]
    held = gate(rows, bad)
    assert [r.survives for r in held] == [False, None, None]
    assert all(r.evidence == WITHHELD for r in held[1:]) and held[1].value == 0.5


def test_a_fifty_step_tunnel_gets_no_geometry_or_detect_verdict(fifty_step_hmm,
                                                                windtunnel_run, tmp_path):
    check = learned_of(open_model(fifty_step_hmm))
    assert check is not None and not check.learned
    assert check.source == "the run's final evaluation" and check.n_sequences == 200
    assert check.baseline == "history-free filter"
    assert set(check.controls) == {"chance (uniform prediction)", "history-free filter"}
    assert check.mae_bits > 0.5 * check.baseline_bits

    g = run_geometry(_small(model=str(fifty_step_hmm), out=tmp_path / "g"))
    for rows in (geometry_findings(g),
                 geometry_findings(read_result(type(g), tmp_path / "g" / "summary.json"))):
        # the check is in summary.json
        assert rows[0].survives is False and "learned its task" in rows[0].claim
        assert len(rows) > 1 and all(r.survives is None for r in rows[1:])
    assert "does not survive] the wind tunnel has learned" in findings_text(geometry_findings(g))
    assert "withheld: the tunnel has not learned" in (tmp_path / "g" / "report.html").read_text()

    # the HMM shows no hypothesis token to detect a frame of: the 20-step bijection tunnel
    d = run_detect(DetectConfig(model=str(windtunnel_run), out=tmp_path / "d", n_sequences=16,
                                progress=False))
    rows = detect_findings(d)
    assert rows[0].survives is False and all(r.survives is None for r in rows[1:])


def test_compare_withholds_only_the_unlearned_tunnels_rows(fifty_step_hmm, text_models,
                                                           base_corpora, tmp_path):
    cfg = CompareConfig(models=(str(fifty_step_hmm), str(text_models["llama"])),
                        labels=("hmm", "llama"), out=tmp_path / "c",
                        geometry=_small(prompts=("legal",)))
    res = run_compare(cfg)
    import pandas as pd

    rows = compare_findings(res, pd.read_parquet(cfg.out / "table.parquet"))
    hmm = [r for r in rows if r.claim.startswith("hmm")]
    llama = [r for r in rows if r.claim.startswith("llama")]
    assert hmm[0].survives is False and all(r.survives is None for r in hmm[1:])
    assert llama and all(r.evidence != WITHHELD for r in llama)
    assert set(res.learned) == {"hmm"}


def test_a_checkpoint_is_evaluated_now(fifty_step_hmm):
    ckpt = next((fifty_step_hmm / "checkpoints").glob("step-*"))
    check = learned_of(open_model(ckpt))
    assert check is not None and check.source == "evaluated now" and check.n_sequences == 500


def test_verify_withholds_its_verdicts_on_an_unlearned_tunnel(fifty_step_hmm, tmp_path):
    from bayesgeom.analyses.verify.report import findings as verify_findings
    from bayesgeom.analyses.verify.run import VerifyConfig, run_verify

    res = run_verify(VerifyConfig(model=str(fifty_step_hmm), out=tmp_path / "v",
                                            n_prompts=24, n_null=10, n_random=50, n_splits=4,
                                            progress=False))
    rows = verify_findings(res)
    assert res.learned is not None and not res.learned.learned
    assert rows[0].survives is False and all(r.survives is None for r in rows[1:])


def test_steer_withholds_its_verdicts_on_an_unlearned_tunnel(fifty_step_hmm, tmp_path):
    from bayesgeom.analyses.steer.findings import findings as steer_findings
    from bayesgeom.analyses.steer.run import SteerConfig, run_steer

    res = run_steer(SteerConfig(model=str(fifty_step_hmm), out=tmp_path / "s", n_random=4,
                                n_prompts=24, cut_fractions=(1.0,), shift_deltas=(1.0,),
                                keep_only=False, batch_size=24, progress=False))
    assert res.learned is not None and not res.learned.learned
    for r in (res, read_result(type(res), tmp_path / "s" / "summary.json")):
        rows = steer_findings(r)
        assert "learned its task" in rows[0].claim and rows[0].survives is False
        assert len(rows) > 2 and all(r.survives is None for r in rows[1:])
        assert all(r.evidence == WITHHELD for r in rows[1:])
    from bayesgeom.analyses.steer.report import format_summary
    assert "The wind tunnel has not learned its task" in format_summary(res)
    assert "has not learned its task (entropy MAE" in (tmp_path / "s" / "report.html").read_text()

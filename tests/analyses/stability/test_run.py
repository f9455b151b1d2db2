"""``bayesgeom stability``: a tiny long_recall run read at a few lengths writes its outputs,
agrees with ``bayesgeom extrapolate``'s cell numbers on the same sequences, marks attention
beyond its limit NaN with the reason, and refuses a task whose length cannot vary."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.extrapolate.run import ExtrapolateConfig, evaluate_at
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.analyses.stability.report import findings, format_summary
from bayesgeom.analyses.stability.result import (
    CriticalLengthSummary,
    LengthSummary,
    StabilityResult,
)
from bayesgeom.analyses.stability.run import StabilityConfig, run_stability
from bayesgeom.records import read_result, read_table
from bayesgeom.windtunnel.training import train


@pytest.fixture(scope="module")
def recall_run(tmp_path_factory):
    ex = ExtrapolateConfig(length=16, multiples=(1, 4), key_vocab=8, value_vocab=8,
                             preset="tiny", steps=5, batch_size=16)
    out = tmp_path_factory.mktemp("stability") / "run"
    train(ex.train_config("llama-bam"), out, progress=False)
    return out


def test_a_tiny_run_writes_every_output_beside_its_controls(recall_run, tmp_path, capsys):
    out = tmp_path / "s"
    args = ["stability", "--model", str(recall_run), "--out", str(out), "--lengths", "1,2,4",
            "--n-eval", "6", "--eval-batch", "4", "--chunk", "16", "--n-boot", "10",
            "--max-attention-length", "32", "--json", "--no-progress"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["lengths"] == [16, 32, 64]
    for f in ("table.parquet", "table.csv", "sequences.parquet", "manifest.json",
              "report.html"):
        assert (out / f).is_file()
    res = read_result(StabilityResult, out / "summary.json")
    assert res.critical_length is not None
    assert res.critical_length.status in ("crossed", "not_crossed", "at_floor")
    table = read_table(out / "table.parquet")
    assert set(table["metric"]) == {"accuracy", "kl_bits", "entropy_mae_bits",
                                    "attention_entropy_bits", "attention_entropy_norm",
                                    "key_orthogonality"}
    acc = table[table["metric"] == "accuracy"].set_index("length")
    assert (acc["chance"] == 1 / 8).all() and acc["bayes"].between(0.99, 1.0).all()
    attn = table[table["metric"] == "attention_entropy_norm"]
    short, long = attn[attn["length"] <= 32], attn[attn["length"] == 64]
    assert short["value"].between(0, 1).all() and short["random_init"].between(0, 1).all()
    assert long["value"].isna().all() and "max-attention-length" in long["note"].iloc[0]
    keys = table[table["metric"] == "key_orthogonality"]
    assert keys[keys["length"] <= 32][["value", "random_init", "chance"]].notna().all().all()
    # the verdict table opens the report; each row follows the run's own criterion
    html = (out / "report.html").read_text()
    assert html.index("What was found") < html.index("The run") < html.index("Look for:")
    crit, at_l, attn_row, key_row = findings(res)
    assert crit.survives is (res.critical_length.status == "not_crossed")
    assert "training length L = 16 tokens" in crit.control
    assert at_l.survives is (res.per_length[0].accuracy > 1 / 8)
    assert "at 32 tokens, the longest" in attn_row.claim and "at 32 tokens" in key_row.claim
    assert "random-init twin" in attn_row.control and "random vectors" in key_row.control
    assert format_summary(res).startswith("What was found")

    # the same sequences as bayesgeom extrapolate's cells: the same numbers
    m = open_model(str(recall_run))
    ex = ExtrapolateConfig(n_eval=6, eval_batch=4, chunk=16, seed=0)
    for ell in (16, 64):
        cell = evaluate_at(m.hf, m.task, ell, ex)
        row = table[table["length"] == ell].set_index("metric")["value"]
        for k in ("accuracy", "kl_bits", "entropy_mae_bits"):
            assert math.isclose(row[k], cell[k], rel_tol=1e-5, abs_tol=1e-7), k


def test_a_task_of_fixed_length_and_bad_settings_are_refused(windtunnel_run, recall_run,
                                                             tmp_path):
    with pytest.raises(ExperimentError, match="long_recall"):
        run_stability(StabilityConfig(model=str(windtunnel_run), out=tmp_path / "a"))
    with pytest.raises(ExperimentError, match="--metrics"):
        run_stability(StabilityConfig(model=str(recall_run), out=tmp_path / "b",
                                      metrics=("accuracy", "perplexity")))
    with pytest.raises(ExperimentError, match="must exceed"):
        run_stability(StabilityConfig(model=str(recall_run), out=tmp_path / "c",
                                      max_length=8))
    assert main(["stability", "--model", str(windtunnel_run), "--out",
                 str(tmp_path / "d"), "--no-progress"]) == 2


def test_a_text_model_is_read_on_passkey_prompts(text_models, tmp_path):
    from bayesgeom import interp
    from bayesgeom.analyses.prompts.passkey import min_length

    m = interp.load(text_models["llama"])  # a tiny random Llama, context 512
    base = min_length(m.tokenizer) + 8
    with pytest.raises(ExperimentError, match="raise --base-length"):
        run_stability(StabilityConfig(out=tmp_path / "s", base_length=base - 10, progress=False),
                      model=m)
    res = run_stability(StabilityConfig(out=tmp_path / "p", base_length=base, lengths=(1, 2, 3),
                                        n_eval=4, eval_batch=2, n_boot=5,
                                        max_attention_length=3 * base, progress=False), model=m)
    assert res.task == "passkey" and res.lengths == [base, 2 * base, 3 * base]
    table = read_table(tmp_path / "p" / "table.parquet")
    acc = table[table["metric"] == "accuracy"]
    assert (acc["chance"] == 0.1).all() and (acc["bayes"] == 1.0).all()
    assert table[table["metric"] == "attention_entropy_norm"]["value"].notna().all()


def test_passkey_prompts_have_exact_lengths_and_the_key_inside():
    from bayesgeom import interp
    from bayesgeom.analyses.prompts.passkey import passkey_batch

    tok = interp.load().tokenizer  # the embedded SmolLM2
    b = passkey_batch(tok, 200, 3, np.random.default_rng(1))
    assert b.tokens.shape == (3, 200) and len(b.hyp_ids) == 10
    for row, t in zip(b.tokens, b.targets, strict=True):
        text = tok.decode(row)
        key = text.split("The pass key is ")[1][:5]
        assert key.isdigit() and int(key[0]) == int(t) and text.endswith("The pass key is ")


def _summary(status: str, estimate: float | None, bound: float | None) -> CriticalLengthSummary:
    return CriticalLengthSummary(
        metric="accuracy", status=status, estimate=estimate, lower_bound=bound, low=None,
        high=None, level=0.95, a=0.9, b=2.0, critical_length=estimate or math.nan, floor=0.125,
        halfway=0.5, rmse=0.01, n_boot=10, n_not_crossed=0, n_failed=0, text="ℓ_c ...")


@pytest.mark.parametrize("crit, survives, value", [
    (_summary("not_crossed", None, 64.0), True, "64 tokens (a lower bound"),
    (_summary("crossed", 40.0, None), False, "40 tokens (ℓ_c = 2.5 × L)"),
    (_summary("at_floor", None, None), False, "undefined: accuracy is already at chance"),
])
def test_accuracy_holds_when_the_decay_fit_finds_no_crossing(crit, survives, value):
    res = StabilityResult(model="toy", task="long_recall", arch="llama", train_length=16,
                          lengths=[16, 32, 64], metrics=["accuracy"], n_eval=4,
                          max_attention_length=32, n_layers=1, seed=0, per_length=[],
                          critical_length=crit, wall_s=0.0)
    res.per_length = [LengthSummary(16, 1.0, 0.9, 1.0, 0.125, *[math.nan] * 8, note="")]
    row, at_l = findings(res)
    assert row.survives is survives and row.value_text().startswith(value)
    assert at_l.survives is True and "chance 0.125" in at_l.control

"""Paper I's table from a sweep's cells: headline per task over seeds, steps, wall time, stop
reasons, the HMM's effective window against the control ladder, and its Markdown form."""

from __future__ import annotations

import pandas as pd
import pytest

from bayesgeom.analyses.sweep.paper_table import effective_window, main, markdown, paper_table

LADDER = {"chance": 1.0, "history-free": 0.3, "window 1": 0.2, "window 2": 0.1,
          "window 4": 0.05}


@pytest.mark.parametrize(("mae", "want"), [
    (0.04, "4"), (0.05, "4"), (0.07, "2"), (0.25, "history-free"), (0.4, "none"),
    (float("nan"), "undefined: no HMM control ladder"),
])
def test_the_effective_window_is_the_widest_filter_the_model_matches(mae, want):
    assert effective_window(mae, LADDER) == want


def test_no_window_counts_until_the_history_free_filter_is_beaten():
    """A window-1 filter (uniform prior) can be worse than the history-free one (exact prior
    marginal): beating it alone is not using the history (the CPU sweep's HMM ladder)."""
    ladder = {"history-free": 0.08, "window 1": 0.159, "window 2": 0.047, "window 4": 0.005}
    assert [effective_window(m, ladder) for m in (0.135, 0.06, 0.04)] == [
        "none", "history-free", "2"]


def _cells() -> pd.DataFrame:
    rows = []
    for arch, mae, acc in (("transformer", 0.04, 0.99), ("lstm", 0.25, 0.03)):
        for seed in range(3):
            rows += [{"task": "hmm", "arch": arch, "preset": "small", "seed": seed,
                      "status": "trained", "entropy_mae_bits": mae + 0.01 * seed,
                      "entropy_mae_bits@K=50": 2 * mae, "accuracy": None,
                      "steps": 1000 + seed, "wall_s": 60.0 + seed,
                      "stop_reason": "plateau" if seed else "time_budget"},
                     {"task": "assoc_recall", "arch": arch, "preset": "small", "seed": seed,
                      "status": "trained" if seed < 2 else "failed",
                      "entropy_mae_bits": 0.5, "accuracy": acc, "steps": 500,
                      "wall_s": 30.0, "stop_reason": "steps"}]
    return pd.DataFrame(rows)


def test_the_table_has_one_row_per_arch_and_reads_each_task_by_its_headline():
    t = paper_table(_cells(), {"hmm": LADDER}).set_index("arch")
    assert list(t.index) == ["transformer", "lstm"]
    assert t.loc["transformer", "hmm: entropy MAE (bits)"] == "0.05 ± 0.01 (n=3)"
    assert t.loc["transformer", "hmm: entropy MAE (bits) K=50"].endswith("(n=3)")
    assert t.loc["transformer", "hmm: window"] == "4"  # its mean 0.05 ties window 4's
    assert t.loc["lstm", "hmm: window"] == "history-free"  # 0.26: under 0.3, over window 1
    assert t.loc["transformer", "hmm: steps"] == "1,000–1,002"
    assert t.loc["transformer", "hmm: stopped"] == "time_budget 1, plateau 2"
    # recall reads accuracy, over the finished seeds only (the failed one is left out)
    assert t.loc["transformer", "assoc_recall: accuracy"] == "0.99 ± 0 (n=2)"
    assert "assoc_recall: window" not in t.columns


def test_markdown_has_a_header_a_rule_and_a_line_per_row(tmp_path, capsys):
    t = paper_table(_cells(), {"hmm": LADDER})
    md = markdown(t).splitlines()
    assert len(md) == 2 + len(t) and md[1].count("---") == len(t.columns)
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path)])
    assert e.value.code == 2 and "not a finished sweep" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["truncated", "not_paper", "garbage"])
def test_a_damaged_or_foreign_table_is_one_line(tmp_path, capsys, damage):
    """A damaged ``paper_table.parquet`` was a traceback, and any table printed as if it were
    Paper I's: each is one line and exit 1."""
    path = tmp_path / "paper_table.parquet"
    if damage == "garbage":
        path.write_bytes(b"not parquet at all")
    else:
        good = paper_table(_cells(), {"hmm": LADDER})
        table = good if damage == "truncated" else pd.DataFrame({"arch": ["x"], "preset": ["y"],
                                                                 "loss": [1.0]})
        table.to_parquet(path)
        if damage == "truncated":
            path.write_bytes(path.read_bytes()[:-40])
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.strip().splitlines()) == 1, out.err
    assert str(path) in out.err and out.err.startswith("paper_table: error: ")

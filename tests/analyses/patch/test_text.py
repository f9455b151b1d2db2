"""bayesgeom patch on text models (a tiny random Llama with its tokenizer): SULA pairs scored
against the exact posterior over the two labels, and free pairs from a file scored by the logit
difference; the last layer's output (resid_post) at the read position reproduces the clean run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.patch.config import PatchConfig
from bayesgeom.analyses.patch.run import run_patch

FREE = [{"clean": f"the cat {v} on the mat", "corrupt": f"the dog {v} on the mat",
         "answer": " the", "foil": " is"} for v in ("sat", "is", "in", "sat")]


def _final_read(t: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    return t[(t["condition"] == "trained-evidence-denoising") & (t["kind"] == "resid_post")
             & (t["layer"] == n_layers - 1) & (t["position"] == -1)]


def test_sula_pairs_on_a_text_model(text_models: dict[str, Path], tmp_path: Path) -> None:
    cfg = PatchConfig(model=str(text_models["llama"]), out=tmp_path / "sula", n_pairs=6,
                      sites=("resid_pre", "attn.z", "resid_post"), n_resamples=50, n_splits=2,
                      progress=False)
    res = run_patch(cfg)
    assert res.source == "sula" and res.metric == "effect_bits" and res.labels is not None
    assert res.n_pairs["evidence"] + res.dropped["evidence"] == 6
    assert "trained-bayes_null-denoising" in res.conditions and len(res.conditions) == 8
    assert res.positions == [-2, -1]
    t = pd.read_parquet(cfg.out / "table.parquet")
    assert len(t) == res.n_cells * len(res.conditions)
    last = _final_read(t, res.n_layers)
    # the final residual stream at the read position is the clean run's: nothing left to move
    assert float(last["kl_clean_run_bits"].iloc[0]) < 1e-6
    assert float(last["logit_diff_recovered"].iloc[0]) == pytest.approx(1.0, abs=1e-4)
    assert float(last["kl_clean_bits"].iloc[0]) == pytest.approx(
        float(last["kl_target_bits"].iloc[0]) - float(last["effect_bits"].iloc[0]))


def test_free_pairs_are_scored_by_the_logit_difference(text_models: dict[str, Path],
                                                       tmp_path: Path) -> None:
    f = tmp_path / "pairs.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in FREE))
    cfg = PatchConfig(model=str(text_models["llama"]), pairs=f, out=tmp_path / "free",
                      sites=("resid_post", "attn.z"), directions=("denoising",),
                      n_resamples=50, n_splits=2, progress=False)
    res = run_patch(cfg)
    assert res.source == "file" and res.metric == "effect_logit_diff"
    assert res.conditions == ["trained-evidence-denoising",
                              "trained-unrelated_source-denoising",
                              "random_init-evidence-denoising"]
    assert not res.null_max_abs_effect  # no exact posterior, so no Bayes-null control
    t = pd.read_parquet(cfg.out / "table.parquet")
    assert len(t) == res.n_cells * 3 and "effect_logit_diff" in t.columns
    last = _final_read(t, res.n_layers)
    assert float(last["logit_diff_recovered"].iloc[0]) == pytest.approx(1.0, abs=1e-4)
    assert "no exact posterior" in (cfg.out / "report.html").read_text()

"""bayesgeom patch --quick on the committed bijection tunnel, end to end: the files, one table row
per cell and condition, the Bayes-null and twin controls against the evidence, intervals that
hold their estimates, the quick banner, and a rerun that reuses every condition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesgeom.analyses.kit.html import QUICK_TEXT
from bayesgeom.analyses.patch.config import PatchConfig
from bayesgeom.analyses.patch.findings import findings
from bayesgeom.analyses.patch.report import format_summary
from bayesgeom.analyses.patch.result import PatchingResult
from bayesgeom.analyses.patch.run import run_patch
from bayesgeom.records import read_result

TUNNEL = Path(__file__).resolve().parents[3] / "tunnels" / "bijection-v20"


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[PatchConfig, PatchingResult]:
    cfg = PatchConfig(model=str(TUNNEL), out=tmp_path_factory.mktemp("patch") / "run",
                      quick=True, progress=False)
    return cfg, run_patch(cfg)


def test_the_run_writes_its_files_and_reads_back(quick) -> None:
    cfg, res = quick
    for name in ("table.parquet", "attribution.parquet", "summary.json", "manifest.json",
                 "report.html"):
        assert (cfg.out / name).is_file(), name
    back = read_result(PatchingResult, cfg.out / "summary.json")
    assert back.n_cells == res.n_cells and back.metric == "effect_bits"
    assert back.learned is not None and back.learned.learned
    assert set(back.definitions) >= {"effect_bits", "recovered_fraction", "kl_clean_bits",
                                     "entropy_mae_bits", "logit_diff", "kl_clean_run_bits"}


def test_the_table_has_one_row_per_cell_and_condition(quick) -> None:
    cfg, res = quick
    table = pd.read_parquet(cfg.out / "table.parquet")
    assert len(res.conditions) == 8  # 2 directions x (evidence, null, unrelated, twin)
    assert len(table) == res.n_cells * len(res.conditions)
    key = ["condition", "site", "layer", "head", "position"]
    assert not table.duplicated(key).any()
    # every layer x grid position of resid_pre, every layer x head of attn.z (6 layers, 6 heads)
    ev = table[table["condition"] == "trained-evidence-denoising"]
    assert len(ev[ev["kind"] == "resid_pre"]) == 6 * len(res.positions)
    assert len(ev[ev["kind"] == "attn.z"]) == 6 * 6
    for col in ("effect_bits", "effect_low", "effect_high", "recovered_fraction",
                "kl_clean_bits", "entropy_mae_bits", "logit_diff", "kl_clean_run_bits",
                "p_holm", "survives", "attribution_effect_bits"):
        assert col in table.columns, col


def test_null_pairs_patch_to_zero_and_below_the_evidence(quick) -> None:
    """At the final layer's resid_pre, after the edit: the evidence moves the model by a large
    share of a bit, the Bayes-null pairs by almost nothing."""
    cfg, res = quick
    t = pd.read_parquet(cfg.out / "table.parquet")
    last = (t["kind"] == "resid_pre") & (t["layer"] == res.n_layers - 1) \
        & (t["position"] > res.edit_position) & (t["direction"] == "denoising")
    ev = t[last & (t["condition"] == "trained-evidence-denoising")]
    null = t[last & (t["condition"] == "trained-bayes_null-denoising")]
    assert len(ev) == len(null) > 0
    assert (null["abs_effect_bits"] < 0.02).all()
    assert (ev["effect_bits"].to_numpy() > 5 * null["abs_effect_bits"].to_numpy()).all()
    assert ev["effect_bits"].max() > 0.1
    assert res.null_max_abs_effect["denoising"] < res.null_tolerance * \
        res.evidence_scale["denoising"]


def test_the_twin_recovers_far_less(quick) -> None:
    cfg, res = quick
    t = pd.read_parquet(cfg.out / "table.parquet")
    trained = t[t["condition"] == "trained-evidence-denoising"]["recovered_fraction"]
    twin = t[t["condition"] == "random_init-evidence-denoising"]["recovered_fraction"]
    assert trained.max() > 0.9 and twin.max() < 0.1
    assert res.twin_best_recovered_fraction["denoising"] == pytest.approx(twin.max())


def test_intervals_hold_their_estimates_or_say_so(quick) -> None:
    cfg, _ = quick
    t = pd.read_parquet(cfg.out / "table.parquet")
    ok = t["effect_bits"].between(t["effect_low"] - 1e-12, t["effect_high"] + 1e-12)
    assert (ok == t["effect_contains_estimate"]).all()
    assert t["effect_contains_estimate"].mean() > 0.9


def test_a_quick_run_says_first_it_is_not_a_result(quick) -> None:
    cfg, res = quick
    assert res.quick and format_summary(res).startswith(QUICK_TEXT)
    html = (cfg.out / "report.html").read_text()
    assert html.index("QUICK RUN") < html.index("What was found") < html.index("Setup")
    rows = findings(res)
    assert rows[0].claim.startswith("the wind tunnel has learned")
    assert all(r.survives is None for r in rows[1:])


def test_attribution_is_ranked_against_exact(quick) -> None:
    cfg, res = quick
    a = pd.read_parquet(cfg.out / "attribution.parquet")
    assert len(a) == res.n_cells * len(res.directions)
    by = {(g.kind, g.direction): g for g in res.attribution}
    # the head outputs enter the output almost linearly: first order ranks them as exact does
    assert by[("attn.z", "denoising")].spearman > 0.8
    assert np.isfinite([g.spearman for g in res.attribution]).all()


def test_a_rerun_reuses_every_condition(quick) -> None:
    cfg, res = quick
    again = run_patch(cfg)
    assert again.reused_conditions == len(res.conditions)
    t1 = pd.read_parquet(cfg.out / "table.parquet")
    assert again.kinds == res.kinds and len(t1) == res.n_cells * len(res.conditions)

"""bayesgeom patch on the embedded SmolLM2 with SULA pairs, at tiny sizes: the real tokenizer's
labels, pairs that tokenise to equal lengths, the exact posterior's metrics, and the last
layer's output at the read position reproducing the clean run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.patch.config import PatchConfig
from bayesgeom.analyses.patch.run import run_patch

pytestmark = pytest.mark.slow


def test_sula_on_smollm2(tmp_path: Path) -> None:
    cfg = PatchConfig(out=tmp_path / "run", n_pairs=6, layers=(0, -1), tail=1,
                      sites=("resid_pre", "resid_post"), directions=("denoising",),
                      n_resamples=50, n_splits=2, progress=False)
    res = run_patch(cfg)
    assert res.source == "sula" and res.n_layers == 30 and res.positions == [-1]
    assert res.n_pairs["evidence"] + res.dropped["evidence"] == 6
    assert res.n_pairs["bayes_null"] >= 2
    t = pd.read_parquet(cfg.out / "table.parquet")
    assert len(t) == res.n_cells * len(res.conditions) == 4 * 4
    ev = t[t["condition"] == "trained-evidence-denoising"].set_index("cell")
    # the final block's output at the read position is the clean run's own
    assert ev.loc["resid_post.29@-1", "kl_clean_run_bits"] < 1e-5
    assert ev.loc["resid_post.29@-1", "recovered_fraction"] == pytest.approx(
        1 - ev.loc["resid_post.29@-1", "kl_source_bits"] / ev.loc["resid_post.29@-1",
                                                                  "kl_target_bits"])
    # the label token ids are SmolLM2's single-token words after ': '
    assert res.labels is not None and all(w.isalpha() for w in res.labels)

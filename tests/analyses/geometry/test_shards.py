"""``geometry --workers 2`` on the embedded SmolLM2 (issue 39's acceptance): a worker killed
mid-run leaves the finished shards, a rerun computes only the killed worker's shard, and the
finished run equals the one-worker run to float rounding (PC shares, |ρ|, probe R²). Small:
a 16-prompt pool, 15 sampled prompts, the last layer only, no random-init twin (its
captures take the same path with the twin's spec; the twin's rows were compared by hand)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.kit.shard_pool import HOLD_ENV
from bayesgeom.records import FaultError

SIZES = dict(pool_size=16, n_per_quintile=3, n_resamples=10, curve_resamples=10,
             random_init_draws=4, layers=(-1,), batch_size=4, score_batch_size=4,
             init_baseline=False, progress=False)
#: the metrics the acceptance names
METRICS = ("pc1", "pc1_pc2", "abs_spearman_pc1", "probe_r2", "partial_abs_spearman_pc1",
           "probe_r2_beyond_position")


@pytest.fixture(scope="module")
def smollm2():
    from bayesgeom import interp

    return interp.load()


@pytest.fixture(scope="module")
def runs(smollm2, tmp_path_factory, scaled):
    """(one-worker result, two-worker result after a killed first try, their outs). The first
    two-worker try holds the worker of score shard 2 (:data:`HOLD_ENV`) and kills it once
    shard 1's part is finished; the run stops with one line, and the rerun completes."""
    root = tmp_path_factory.mktemp("geometry-shards")
    hold, out2 = root / "hold", root / "two"
    hold.mkdir()
    (hold / "score.part-001-of-002.hold").write_text("")
    pid, first = hold / "score.part-001-of-002.pid", out2 / "shards" / "score.part-000-of-002"

    def kill() -> None:
        t0 = time.monotonic()
        while not (pid.exists() and Path(f"{first}.done.json").exists()):
            if time.monotonic() - t0 > scaled(300):
                return
            time.sleep(0.1)
        os.kill(int(pid.read_text()), signal.SIGKILL)

    killer = threading.Thread(target=kill, daemon=True)
    mp = pytest.MonkeyPatch()
    mp.setenv(HOLD_ENV, str(hold))
    killer.start()
    try:
        with pytest.raises(FaultError, match="a worker died while running score shard 2 of 2"):
            run_geometry(GeometryConfig(out=out2, workers=2, **SIZES), model=smollm2)
    finally:
        mp.undo()
        killer.join(timeout=5)
    done = Path(f"{first}.done.json")
    mtime = done.stat().st_mtime_ns
    assert not (out2 / "shards" / "score.part-001-of-002.done.json").exists()

    two = run_geometry(GeometryConfig(out=out2, workers=2, **SIZES), model=smollm2)  # rerun
    assert done.stat().st_mtime_ns == mtime
    one = run_geometry(GeometryConfig(out=root / "one", **SIZES), model=smollm2)
    return one, two, out2, root / "one"


def test_the_rerun_computes_only_the_killed_shard(runs):
    _, two, _, _ = runs
    score = [(r.shard, r.reused) for r in two.sharding.shards if r.stage == "score"]
    assert score == [(0, True), (1, False)]
    later = [r for r in two.sharding.shards if r.stage != "score"]
    assert {r.stage for r in later} == {"capture-mixed"}
    assert all(not r.reused and r.device == "cpu" for r in later)
    assert [r.items for r in later if r.stage == "capture-mixed"] == [[0, 8], [8, 15]]
    assert two.sharding.workers == 2 and two.sharding.devices == []


def test_two_workers_equal_one_to_float_rounding(runs):
    one, _, out2, out1 = runs
    assert one.sharding is None
    a, b = (pd.read_parquet(o / "table.parquet") for o in (out1, out2))
    keys = ["prompt_set", "layer", "metric", "target", "reference"]
    both = a.merge(b, on=keys, suffixes=("_1", "_2"), validate="one_to_one")
    assert len(both) == len(a) == len(b)
    shown = both[both["metric"].isin(METRICS)]
    assert set(shown["metric"]) == set(METRICS) and len(shown) >= 6  # model and position
    pd.testing.assert_series_equal(shown["value_1"], shown["value_2"], check_names=False,
                                   rtol=1e-4, atol=1e-6)
    pd.testing.assert_series_equal(both["value_1"], both["value_2"], check_names=False,
                                   rtol=1e-3, atol=1e-5)
    p1, p2 = (pd.read_parquet(o / "prompts.parquet") for o in (out1, out2))
    assert p1["prompt_id"].tolist() == p2["prompt_id"].tolist()  # the same sample


def test_the_summary_and_manifest_say_who_ran_each_shard(runs):
    import json

    _, _, out2, out1 = runs
    manifest = json.loads((out2 / "manifest.json").read_text())
    assert manifest["sharding"]["workers"] == 2
    assert {r["device"] for r in manifest["sharding"]["shards"]} == {"cpu"}
    assert json.loads((out1 / "summary.json").read_text())["sharding"] is None

"""The heap benchmark (benchmarks/steer_heap.py) runs a policy on a tiny wind tunnel, in this
process: it counts the edited passes' scored effects and reads the peak resident set, and puts
steer's own trimmer and scoring back afterwards (no memory figure is checked here)."""

from __future__ import annotations

from bayesgeom.analyses.steer import run as steer_run

from .conftest import load_script


def test_a_policy_counts_scored_effects_and_restores_steer(tiny_tunnel):
    before = steer_run.HeapTrimmer, steer_run.score
    got = load_script("steer_heap").child("trim2", str(tiny_tunnel), 2.0)  # 2 s, then stopped
    assert (steer_run.HeapTrimmer, steer_run.score) == before
    assert got["policy"] == "trim2" and got["scored_effects"] > 0
    assert got["peak_rss_mb"] >= got["rss_at_end_mb"] > 0 and got["effects_per_s"] > 0

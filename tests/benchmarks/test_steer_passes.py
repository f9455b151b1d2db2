"""The steering benchmark (benchmarks/steer_passes.py) runs on a tiny wind tunnel with --quick
and writes its ratios; it stacks the passes in this tree (no timing is checked here)."""

from __future__ import annotations

import json
import math
import sys

from .conftest import load_script


def test_quick_run_writes_the_ratios(tiny_tunnel, tmp_path, monkeypatch):
    run = tiny_tunnel
    mod = load_script("steer_passes")
    out = tmp_path / "bench.json"
    monkeypatch.setattr(sys, "argv", ["steer_passes.py", "--quick", "--model", str(run),
                                      "--reps", "1", "--out", str(out)])
    mod.main()
    res = json.loads(out.read_text())["results"]
    assert res["stacked"] and res["quick"] and res["passes_per_condition"] == 4
    assert len(res["edited_pass_s"]) == 3 and len(res["bare_rounds_s"]) == 4
    for k in ("edited_over_bare", "edited_unscored_over_bare"):
        assert math.isfinite(res[k]) and res[k] > 0

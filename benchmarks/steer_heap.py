"""Resident memory of ``bayesgeom steer``'s edited passes under three heap policies, in one run.

glibc keeps the memory a process frees; in steer's loop of edited passes (each with [N, V]
logits and their float64 blocks) what it kept grew without bound on SmolLM2 (``records.heap``).
Each policy runs the default ``steer`` in a fresh process for ``--seconds`` of edited passes
and reports the scored effects per second (two per edited pass) and the peak resident set:

* ``none``   no trimming (the loop as it was before ``records.heap``);
* ``trimN``  ``malloc_trim`` every N scored effects (``HeapTrimmer(every=N)``; steer's own is 16);
* ``mmapN``  no trimming, glibc's mmap threshold fixed at N MiB (every larger array mapped and
             unmapped by the system; ``mallopt(M_MMAP_THRESHOLD)``).

The policies run one after the other (a shared machine's load drifts: compare rates within a run).

    python benchmarks/steer_heap.py                          # SmolLM2, 170 s a policy
    python benchmarks/steer_heap.py --model runs/tiny-bijection --seconds 60
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


class Enough(Exception):
    """The policy's time is up."""


def peak_and_now_mb() -> tuple[float, float]:
    """(VmHWM, VmRSS) of this process in MB."""
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            got[key] = int(rest.split()[0]) / 1e3
    return got["VmHWM"], got["VmRSS"]


def child(policy: str, model: str | None, seconds: float) -> dict:
    """Run the default steer under ``policy`` until ``seconds`` of edited passes have passed."""
    from bayesgeom.analyses.steer import run as steer_run
    from bayesgeom.analyses.steer.config import SteerConfig
    from bayesgeom.records.heap import HeapTrimmer

    every = int(policy[4:]) if policy.startswith("trim") else 10**12
    saved = steer_run.HeapTrimmer, steer_run.score
    steer_run.HeapTrimmer = lambda: HeapTrimmer(every=every)  # type: ignore[assignment]
    if policy.startswith("mmap"):
        libc = ctypes.CDLL("libc.so.6")
        if libc.mallopt(M_MMAP_THRESHOLD, int(policy[4:]) << 20) != 1:
            raise SystemExit("mallopt refused the mmap threshold")
    scored, start = [-1], [0.0]  # the first call scores the clean pass
    score = steer_run.score

    def counted(*args, **kw):
        if scored[0] == 0:
            start[0] = time.perf_counter()  # the clean pass and the axes are not timed
        elif scored[0] > 0 and time.perf_counter() - start[0] >= seconds:
            raise Enough
        scored[0] += 1
        return score(*args, **kw)

    steer_run.score = counted  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.suppress(Enough):
            named = {"model": model} if model else {}
            steer_run.run_steer(SteerConfig(**named, out=Path(tmp) / "run", progress=False))
    finally:
        steer_run.HeapTrimmer, steer_run.score = saved  # type: ignore[misc]
    wall = time.perf_counter() - start[0]
    peak, now = peak_and_now_mb()
    return {"policy": policy, "scored_effects": scored[0], "seconds": round(wall, 1),
            "effects_per_s": round(scored[0] / wall, 3), "peak_rss_mb": round(peak),
            "rss_at_end_mb": round(now)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="a wind-tunnel run or a model (default: SmolLM2)")
    p.add_argument("--seconds", type=float, default=170.0, help="edited passes per policy")
    p.add_argument("--policies", default="none,trim16,mmap1")
    p.add_argument("--out", default="runs/bench/steer_heap.json")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        print(json.dumps(child(a.child, a.model, a.seconds)))
        return
    from bayesgeom.records import run_manifest, write_json

    rows = []
    for policy in a.policies.split(","):
        argv = [sys.executable, __file__, "--child", policy, "--seconds", str(a.seconds)]
        done = subprocess.run(argv + (["--model", a.model] if a.model else []),
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"policy {policy} failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{policy:>8}: {r['scored_effects']:>5} scored effects in {r['seconds']:>6} s "
              f"({r['effects_per_s']:.2f}/s), peak {r['peak_rss_mb']:,} MB, "
              f"{r['rss_at_end_mb']:,} MB at the end", flush=True)
    write_json(a.out, {"results": rows, "model": a.model or "smollm2",
                       "manifest": run_manifest(seed=0, dtype="float32")})


if __name__ == "__main__":
    main()

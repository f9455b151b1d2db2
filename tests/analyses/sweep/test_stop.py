"""A sweep is one unit of work: killed (``kill -9``) or stopped (SIGTERM, Ctrl-C), it leaves no
worker training on or holding its cell's lock, and the same command resumes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("submitit")

ARGV = ["sweep", "--tasks", "bijection", "--archs", "transformer", "--presets", "tiny",
        "--seeds", "0", "--steps", "200", "--eval-every", "100", "--no-progress"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # a zombie is dead: only its exit status is left
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _worker_pid(out: Path, sweep: subprocess.Popen, within: float) -> int:
    """The pid of the process that holds the cell's lock (its owner file), once it trains."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        for owner in out.glob("cells/*/.bayesgeom.owner.json"):
            pid = json.loads(owner.read_text())["pid"]
            if pid != sweep.pid and (owner.parent / "run.json").exists():
                return pid
        assert sweep.poll() is None, sweep.communicate()
        time.sleep(0.2)
    raise AssertionError("no worker started training")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "submitit"])
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_stopped_sweep_leaves_no_worker_and_a_rerun_resumes(tmp_path, backend, stop, scaled):
    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "bayesgeom", *ARGV, "--backend", backend, "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    sweep = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    worker = _worker_pid(out, sweep, scaled(120))
    sweep.send_signal(stop)
    code = sweep.wait(scaled(30))
    assert code == (-signal.SIGKILL if stop == signal.SIGKILL else 130), sweep.communicate()
    t0 = time.monotonic()
    while _alive(worker) and time.monotonic() - t0 < scaled(10):
        time.sleep(0.1)
    assert not _alive(worker), f"worker {worker} survived its sweep ({backend}, {stop.name})"
    rerun = subprocess.run([*cmd, "--json"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=scaled(300))
    assert rerun.returncode == 0, rerun.stderr
    res = json.loads(rerun.stdout)
    assert [c["status"] for c in res["cells"]] == ["trained"] and res["failed"] == 0
    rec = json.loads(next(out.glob("cells/*/run.json")).read_text())
    assert rec["status"] == "done" and rec["steps_done"] == 200

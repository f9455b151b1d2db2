"""A sweep is one unit of work: killed (``kill -9``) or stopped (SIGTERM, Ctrl-C), it leaves no
worker training on or holding its cell's lock -- nor one still starting that claims its cell
later -- says only its one line on stderr, and the same command resumes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bayesgeom.analyses.sweep.guard import HOLD_ENV

pytest.importorskip("submitit")

GRID = ["sweep", "--tasks", "bijection", "--archs", "transformer", "--presets", "tiny",
        "--seeds", "0", "--batch-size", "16", "--eval-size", "100", "--no-progress"]
ARGV = [*GRID, "--steps", "200", "--eval-every", "100"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # a zombie is dead: only its exit status is left
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _training(cell: Path) -> bool:
    """Whether the cell's run has built its model (``params`` in its record): its progress bar,
    and the bar's lock, come next."""
    try:
        return "params" in json.loads((cell / "run.json").read_text())
    except (OSError, ValueError):
        return False


def _worker_pid(out: Path, sweep: subprocess.Popen, within: float) -> int:
    """The pid of the process that holds the cell's lock (its owner file), once it trains."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        for owner in out.glob("cells/*/.bayesgeom.owner.json"):
            pid = json.loads(owner.read_text())["pid"]
            if pid != sweep.pid and _training(owner.parent):
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
    _, err = sweep.communicate(timeout=scaled(30))
    assert code == (-signal.SIGKILL if stop == signal.SIGKILL else 130), err
    if stop == signal.SIGTERM:  # its one line; no resource_tracker warning, no traceback
        assert err == "bayesgeom: interrupted; rerun the same command to resume\n"
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


def _held_worker(hold: Path, sweep: subprocess.Popen, within: float) -> int:
    """The pid of the sweep's worker once it waits in its start-up (:data:`guard.HOLD_ENV`)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        if hold.exists():
            return int(hold.read_text())
        assert sweep.poll() is None, sweep.communicate()
        time.sleep(0.1)
    raise AssertionError("no worker started")


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "rerun"), [("local", False), ("submitit", True)])
def test_a_sweep_killed_while_its_worker_starts_leaves_it_no_cell(tmp_path, backend, rerun,
                                                                  scaled):
    """``kill -9`` lands while the worker is still starting (held there by the test hook, where
    it would be importing torch): the worker ends within a few of its watch's periods, even
    let go at once, and never claims the cell; the same command then trains it (run once: it
    is two thirds of the test's time, and the kill-and-resume test above resumes both
    backends)."""
    out, hold = tmp_path / "sweep", tmp_path / "hold"
    cmd = [sys.executable, "-m", "bayesgeom", *GRID, "--steps", "20", "--eval-every", "10",
           "--backend", backend, "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    sweep = subprocess.Popen(cmd, cwd=tmp_path, env={**env, HOLD_ENV: str(hold)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    worker = _held_worker(hold, sweep, scaled(120))
    sweep.kill()
    sweep.wait(scaled(30))
    hold.unlink()  # let it go on to its imports and its cell, as if they had been quick
    t0 = time.monotonic()
    while _alive(worker) and time.monotonic() - t0 < scaled(5):
        time.sleep(0.1)
    outlived = _alive(worker)
    if outlived:
        os.kill(worker, signal.SIGKILL)
    assert not outlived, f"worker {worker} outlived its sweep ({backend})"
    assert not list(out.glob("cells/*/*")), "the worker claimed its cell after its sweep died"
    if not rerun:
        return
    again = subprocess.run([*cmd, "--json"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=scaled(300))
    assert again.returncode == 0, again.stderr
    assert [c["status"] for c in json.loads(again.stdout)["cells"]] == ["trained"]

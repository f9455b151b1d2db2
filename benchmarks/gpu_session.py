"""The GPU session: one command, at most 8 minutes (318 s on one H200, 2026-11-27, before the
scale part), that checks every CUDA path against the CPU, pins a sweep's and a sharded
geometry's workers to the GPU, and trains Paper I's models at paper scale for as long as the
budget goes.

    python benchmarks/gpu_session.py --out runs/gpu-session      # on a GPU machine (8 min)
    python benchmarks/gpu_session.py --dry-run --out /tmp/gs     # anywhere, CPU, seconds
    make gpu-session ARGS=--dry-run

Parts, each stopped at its own budget (benchmarks/gpu/):
1. correctness (30 s): capture, the three edits, steering's scoring pass, the attention taps
   and ``dynamics verify`` on tiny random-init models of ten families, float32 and bfloat16,
   on the device against the same call on the CPU (tolerances in gpu/correctness.py);
2. throughput (50 s): training steps/s per preset, device against CPU;
3. scale (60 s): ``sweep --devices <the GPU>`` of two tiny cells, each cell's recorded device
   read back; ``geometry --workers 1 --devices <the GPU>`` on a committed tunnel against the
   in-process run on the same GPU (gpu/scale.py; the dry run: the sweep alone, on the CPU);
4. Paper I (the rest, 115 s of training per task): bijection on ``paper``, HMM on
   ``paper-hmm`` (K = 20, 30, 50, beside the control ladder), associative recall if time
   allows.
Results: at most seven files in ``--out`` (gpu/session.py lists them). Exit status 0 when
every part ran and every judged check passed.

The GPU machine has no network and bayesgeom is not installed there: this script imports
``bayesgeom`` from the checkout it sits in, and the two missing dependencies it needs (dacite,
plotly: gpu/wheels.py) travel as wheels (``make gpu-wheels`` -> ``.whl/``, 9.3 MiB). The
device command (carry ``.whl``, timeout_s 570; docs/results/gpu.md):

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit; export
    HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1; set -o pipefail; python3 benchmarks/gpu_session.py
    --out $OUT 2>&1 | tee $OUT/log.txt

(one line). Without a GPU and without ``--device`` the script runs its dry run (so ``make
bench`` stays short). ``--emulate-gpu-machine`` hides here what that machine lacks (the test
suite's dry run uses it). The scale part's worker processes are spawned: each runs this file
as ``__mp_main__``, which imports ``bayesgeom`` from the checkout as the session did.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_checkout() -> None:
    """Import ``bayesgeom`` from this checkout, installed or not: its subpackages are the
    repository's top-level folders, linked into ``bayesgeom/``; the repository root is on the
    package's search path too, for a copy of the tree that did not keep the links."""
    spec = importlib.util.spec_from_file_location(
        "bayesgeom", ROOT / "bayesgeom" / "__init__.py",
        submodule_search_locations=[str(ROOT / "bayesgeom"), str(ROOT)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bayesgeom"] = module
    spec.loader.exec_module(module)


def _drop_editable_finders() -> None:
    """Forget an editable install of bayesgeom (as on the GPU machine, where none exists)."""
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not type(f).__module__.startswith("__editable__")]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or
                                                     "runs/gpu-session"),
                    help="result folder (default: $OUT, else runs/gpu-session)")
    ap.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    ap.add_argument("--dry-run", action="store_true", help="every part shrunk to seconds")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="the parts' wall time (default 465: with start-up, 8 min; dry run 120)")
    ap.add_argument("--paper-s", type=float, default=None,
                    help="training seconds per Paper I run (default 115)")
    ap.add_argument("--tasks", default=None,
                    help="the Paper I runs, comma-separated, in order (default: bijection,hmm,"
                         "assoc_recall)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads (default: torch's; the dry run: 1)")
    ap.add_argument("--keep-runs", type=Path, default=None,
                    help="keep the Paper I run folders here (default: a scratch folder)")
    ap.add_argument("--emulate-gpu-machine", action="store_true",
                    help="hide what the GPU machine lacks (and an editable install)")
    ap.add_argument("--wheels", action="store_true",
                    help="print the wheels the GPU machine needs (name==version) and exit")
    a = ap.parse_args(argv)
    for flag, value in (("--budget-s", a.budget_s), ("--paper-s", a.paper_s)):
        if value is not None and not (math.isfinite(value) and value > 0):
            ap.error(f"{flag}: a number of seconds above 0 (got {value})")
    if a.threads is not None and a.threads < 1:
        ap.error(f"--threads: at least 1 (got {a.threads})")
    if a.device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?", a.device):
        ap.error(f"--device: cpu, cuda or cuda:N (got {a.device!r})")
    for flag, folder in (("--out", a.out), ("--keep-runs", a.keep_runs)):
        if folder is not None and folder.exists() and not folder.is_dir():
            ap.error(f"{flag}: {folder} is a file; name a folder")
    if a.tasks is not None:
        known = ("bijection", "hmm", "assoc_recall")
        a.tasks = tuple(t.strip() for t in a.tasks.split(",") if t.strip())
        wrong = [t for t in a.tasks if t not in known]
        if wrong or not a.tasks or len(set(a.tasks)) != len(a.tasks):
            ap.error(f"--tasks: a comma-separated list of distinct tasks of {', '.join(known)}"
                     f" (got {','.join(a.tasks) or 'nothing'})")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # the gpu/ package
    from gpu import wheels

    if a.wheels:
        print("\n".join(wheels.requirements()))
        return 0
    hidden = []
    if a.emulate_gpu_machine:
        hidden = wheels.emulate_machine()
        _drop_editable_finders()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    recorder = wheels.ImportRecorder().install()
    import_checkout()
    import torch
    from gpu.session import Plan, run_session

    if a.threads or a.dry_run:
        torch.set_num_threads(a.threads or 1)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not (torch.cuda.is_available() and
                                          int(device.partition(":")[2] or 0)
                                          < torch.cuda.device_count()):
        print(f"gpu session: --device {device}: no such CUDA device here "
              f"({torch.cuda.device_count()} visible); --device cpu runs it on the CPU",
              file=sys.stderr)
        return 2
    if a.device is None and device == "cpu" and not a.dry_run:
        print("no GPU here: running the dry run (--device cpu runs the whole session on the CPU)")
        a.dry_run = True
        torch.set_num_threads(a.threads or 1)
    plan = Plan.make(a.dry_run, a.budget_s, a.paper_s, a.tasks)
    return run_session(a.out, device, plan, recorder, hidden, a.keep_runs)


if __name__ == "__mp_main__":  # a worker the scale part spawned: the session's bayesgeom
    import_checkout()

if __name__ == "__main__":
    sys.exit(main())

"""Peak resident memory of one experiment, per phase, measured inside the process that runs it.

Used by ``benchmarks/experiment_memory.py`` (the benchmark) and by the memory test of
``tests/analyses/geometry/test_memory.py``; both run it as a child process:

    python benchmarks/memory_phases.py OUT.json geometry --model DIR --out RUN ...

Exact per-phase peaks, no sampling: on Linux, writing ``5`` to ``/proc/self/clear_refs`` resets
the process's high-water mark (``VmHWM``) to its current resident set. At every phase boundary
the high-water mark since the previous boundary is read, credited to every phase open at that
moment (innermost to outermost), and reset. A phase's peak therefore includes its sub-phases;
``peak_phase`` names the innermost phase that was open when the whole run peaked.

Phases are the experiment's own steps, entered by wrapping the functions its run module calls
(``PHASES``: module, attribute, phase name); nothing in the product code is changed. Also
recorded:

* ``baseline_mib``: the resident set just before the model is loaded (torch, transformers,
  bayesgeom and the experiment's modules imported): the interpreter's fixed cost;
* ``weights_mib``: the loaded model's parameters and buffers (each tensor storage once, so tied
  embeddings count once), from the model the experiment itself opened;
* peak CUDA memory per phase (``torch.cuda.max_memory_allocated``) where CUDA is initialised.

Linux only (``/proc``). All sizes in MiB.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20

#: experiment -> (module or ``module:Class``, attribute, phase); a phase opened inside another
#: nests in it
PHASES: dict[str, list[tuple[str, str, str]]] = {
    "geometry": [
        ("bayesgeom.analyses.geometry.run", "open_model", "load"),
        ("bayesgeom.analyses.geometry.run", "candidate_pool", "pool"),
        ("bayesgeom.analyses.geometry.run", "score_pool", "scoring"),
        ("bayesgeom.analyses.geometry.run", "model_keys", "key_orthogonality"),
        ("bayesgeom.analyses.geometry.run", "capture_set", "capture"),
        ("bayesgeom.analyses.geometry.run", "analyse", "numerics"),
        ("bayesgeom.analyses.geometry.run", "random_init_baseline", "random_init"),
        ("bayesgeom.interp", "random_init_twin", "twin_build"),
        ("bayesgeom.analyses.geometry.sets", "capture_set", "twin_capture"),
        ("bayesgeom.analyses.geometry.sets", "analyse", "twin_numerics"),
        ("bayesgeom.analyses.geometry.run", "write_run", "write"),
    ],
    "steer": [
        ("bayesgeom.analyses.steer.run", "open_model", "load"),
        ("bayesgeom.analyses.steer.run", "posterior_prompts", "prompts"),
        ("bayesgeom.analyses.steer.passes:Runner", "clean", "clean_pass"),
        ("bayesgeom.analyses.steer.run", "fit_axes", "axes"),
        ("bayesgeom.analyses.steer.run", "edit_directions", "directions"),
        ("bayesgeom.analyses.steer.passes:Runner", "edited", "edited_passes"),
        ("bayesgeom.analyses.steer.run", "score", "scoring"),
        ("bayesgeom.analyses.steer.run", "write_run", "write"),
    ],
    "capture": [
        ("bayesgeom.analyses.kit.models", "open_model", "load"),
        ("bayesgeom.interp", "capture", "capture"),
    ],
    "verify": [
        ("bayesgeom.analyses.verify.run", "open_model", "load"),
        ("bayesgeom.analyses.verify.run", "prompts_for", "prompts"),
        ("bayesgeom.analyses.verify.run", "read_model", "read_model"),
        ("bayesgeom.interp", "random_init_twin", "twin_build"),
        ("bayesgeom.analyses.verify.run", "head_tracking", "head_tracking"),
        ("bayesgeom.analyses.verify.run", "write_run", "write"),
    ],
}


def _kib(field: str) -> int:
    m = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    if m is None:
        raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")
    return int(m.group(1))


def _reset_hwm() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _cuda() -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda
    return None


class PhaseMemory:
    """Per-phase peak RSS (and CUDA memory): see the module doc."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.peak_kib: dict[str, int] = {}
        self.cuda_peak: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.overall = (0, "other")  # (peak KiB, innermost phase then)
        self.baseline_kib: int | None = None
        self.weights_bytes: int | None = None
        self.failed_in: str | None = None  # the innermost phase an exception left
        self._reset_ok = True
        try:
            _reset_hwm()
        except OSError:  # no clear_refs: phases then see the peak so far
            self._reset_ok = False

    def boundary(self) -> None:
        """Credit the high-water mark since the last boundary to every open phase; reset it."""
        hwm = _kib("VmHWM")
        cuda = _cuda()
        c = cuda.max_memory_allocated() if cuda is not None else 0
        for p in self.stack:
            self.peak_kib[p] = max(self.peak_kib.get(p, 0), hwm)
            self.cuda_peak[p] = max(self.cuda_peak.get(p, 0), c)
        if hwm > self.overall[0]:
            self.overall = (hwm, self.stack[-1])
        if self._reset_ok:
            _reset_hwm()
        if cuda is not None:
            cuda.reset_peak_memory_stats()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.boundary()
        self.stack.append(name)
        t = time.perf_counter()
        try:
            yield
        except BaseException:
            self.failed_in = self.failed_in or name
            raise
        finally:
            self.boundary()
            self.stack.pop()
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t

    def wrap(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*args: Any, **kw: Any) -> Any:
            if name == "load" and self.baseline_kib is None:
                self.baseline_kib = _kib("VmRSS")
            with self.phase(name):
                out = fn(*args, **kw)
            if name == "load" and self.weights_bytes is None:
                self.weights_bytes = weight_bytes(out)
            return out
        return inner

    def summary(self) -> dict[str, Any]:
        self.boundary()
        base = self.baseline_kib or 0
        w = self.weights_bytes or 0
        return {
            "baseline_mib": round(base / 1024, 1),
            "weights_mib": round(w / MIB, 1),
            "peak_mib": round(self.overall[0] / 1024, 1),
            "peak_phase": self.overall[1],
            "ratio_above_baseline": round((self.overall[0] - base) * 1024 / w, 2) if w else None,
            "ratio_total": round(self.overall[0] * 1024 / w, 2) if w else None,
            "phases": {p: {"peak_mib": round(k / 1024, 1),
                           "ratio_above_baseline": (round((k - base) * 1024 / w, 2)
                                                    if w else None),
                           "cuda_peak_mib": round(self.cuda_peak.get(p, 0) / MIB, 1),
                           "seconds": round(self.seconds.get(p, 0.0), 1)}
                       for p, k in self.peak_kib.items()},
        }


def weight_bytes(model: Any) -> int:
    """Bytes of the parameters and buffers of ``model`` (an InterpModel or nn.Module), each
    storage once (tied weights share one)."""
    mod = getattr(model, "hf", model)
    seen: dict[int, int] = {}
    for t in [*mod.parameters(), *mod.buffers()]:
        st = t.untyped_storage()
        seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
    return sum(seen.values())


def install(experiment: str, tracker: PhaseMemory) -> None:
    """Wrap the experiment's phase functions (``PHASES``) in ``tracker``'s phases."""
    for module, attr, name in PHASES[experiment]:
        mod_name, _, cls = module.partition(":")
        owner: Any = importlib.import_module(mod_name)
        if cls:
            owner = getattr(owner, cls)
        setattr(owner, attr, tracker.wrap(getattr(owner, attr), name))


def main(argv: list[str]) -> int:
    """``OUT.json EXPERIMENT CLI-ARGS...``: run ``bayesgeom EXPERIMENT CLI-ARGS`` in this
    process with phases tracked; write the summary (with the exit status) to OUT.json."""
    out, experiment, args = Path(argv[0]), argv[1], argv[2:]
    tracker = PhaseMemory()
    with tracker.phase("import"):
        import torch  # noqa: F401
        import transformers  # noqa: F401

        from bayesgeom.analyses.cli import main as cli_main

        install(experiment, tracker)
    t = time.perf_counter()
    error = None
    try:
        rc = cli_main([experiment, *args])
    except Exception as e:  # the peaks up to the failure are still measured
        rc, error = 1, f"{type(e).__name__}: {e}"[:300]
        error += f" (in phase {tracker.failed_in})"
    summary = {"experiment": experiment, "args": args, "rc": rc, "error": error,
               "wall_s": round(time.perf_counter() - t, 1), **tracker.summary()}
    out.write_text(json.dumps(summary, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Part 1, CUDA correctness: every call of :mod:`gpu.calls` on a tiny model of every family
(:mod:`gpu.families`), in float32 and bfloat16, on the device against the same call on the CPU
in the same dtype.

A quantity passes when ``max |device − cpu| / max |cpu|`` (over its entries; NaN/inf must sit in
the same places) is within its dtype's tolerance (:func:`tolerance`): 1e-4 in float32 (TF32 is
switched off for the part, so both sides are true float32 and differ only in summation order);
in bfloat16 5e-2, or twice the CPU's own bf16 error against its float32 result where that is
larger (8 significant bits: one rounding is 3.9e-3; on the tiny models the CPU's bf16 call is
up to 4.4e-2 from its float32 one, in the taps' gradients, 2026-11-26), so two bf16
implementations may differ by about the sum of their errors and no more. ``dynamics verify``
is checked in float32 only (its identities hold to ~1e-7 there; bf16 cannot resolve them): each
identity's error on the device must be within the command's own bound, 1e-4, as on the CPU;
the controls (deliberately wrong laws) and the value-step gaps are recorded beside the CPU's,
not judged. Steering's scores are computed on the CPU in float64 from the pass's logits; a
score's tolerance also widens to twice its conditioning (:func:`conditioning`: how far one
more rounding of the logits in the model's dtype moves it), since a Pearson correlation over
six prompts whose entropies barely differ moves by tenths when the logits move by one
bfloat16 rounding (the random-init LSTM on an H200, 2026-11-27). Quantities named
``info.*`` are records (which path ran, the padding positions' logits, the jitter), not
judged. Every device call runs twice:
``repeat_max_abs`` (the largest difference between the two runs) states which kernels are not
deterministic.
"""

from __future__ import annotations

import copy
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from bayesgeom import interp

from .calls import CALLS, Outputs, prompts
from .clock import Deadline
from .families import FAMILIES, Family, build, vocab_of

TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2}
#: a bf16 quantity may also differ by this multiple of the CPU's own bf16 error vs float32
BF16_NOISE_FACTOR = 2.0
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
#: ``dynamics verify``'s bound in float32 (DynamicsVerifyConfig.bound)
VERIFY_BOUND = 1e-4
#: identities judged against the bound (the rest of verify's outputs are recorded only)
VERIFY_JUDGED = ("attention_weight_grad", "routing_law", "score_rows_sum_zero", "value_grad",
                 "query_grad", "key_grad", "feedback", "masked_entries")


def difference(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """(max |a − b|, that over max |b|) for two tensors of one shape; inf when the shapes or
    the places of non-finite entries differ."""
    if a.shape != b.shape:
        return float("inf"), float("inf")
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    na, nb = a[~fa], b[~fb]  # NaN, +inf, -inf: the same ones in the same places
    if not torch.equal(fa, fb) or not (torch.equal(na.isnan(), nb.isnan())
                                       and torch.equal(na.nan_to_num(), nb.nan_to_num())):
        return float("inf"), float("inf")
    if not bool(fa.any()):
        return 0.0, 0.0
    d = float((a[fa] - b[fb]).abs().max())
    scale = float(b[fb].abs().max())
    return d, (d / scale if scale > 0 else (0.0 if d == 0 else float("inf")))


def conditioning(cpu: torch.Tensor, jitter: torch.Tensor | None) -> float | None:
    """A derived quantity's conditioning relative to its scale: max of ``jitter`` (the CPU
    call's change under one more rounding of its logits, :func:`calls.score_jitter`) over
    max |``cpu``|; None where the call records no jitter."""
    if jitter is None:
        return None
    scale = float(cpu.nan_to_num(0.0).abs().max())
    worst = float(jitter.max())
    return worst / scale if scale > 0 else (0.0 if worst == 0 else float("inf"))


def tolerance(dtype: str, bf16_noise: float | None = None) -> float:
    """The largest relative difference that passes: :data:`TOLERANCE` of ``dtype``, in
    bfloat16 widened to :data:`BF16_NOISE_FACTOR` × the CPU's bf16-vs-float32 error."""
    base = TOLERANCE[dtype]
    return base if bf16_noise is None else max(base, BF16_NOISE_FACTOR * bf16_noise)


@contextmanager
def strict_float32() -> Iterator[dict[str, bool]]:
    """TF32 off for matmuls and cuDNN while the part runs (restored after); yields what it
    found, for the record."""
    m, c = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield {"matmul_allow_tf32_default": m, "cudnn_allow_tf32_default": c}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = m, c


def _model(hf: torch.nn.Module, family: str, device: str, dtype: torch.dtype,
           ) -> interp.InterpModel:
    return interp.InterpModel(copy.deepcopy(hf).to(device=device, dtype=dtype), name=family)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _rows(fam: Family, dtype: str, check: str, ref: Outputs, runs: list[Outputs],
          seconds: float, ref32: Outputs | None = None) -> list[dict[str, Any]]:
    """One row per quantity; ``ref32``: the CPU's float32 results (bf16 checks: the noise)."""
    rows = []
    for q, b in ref.items():
        a = runs[0].get(q)
        rep = 0.0 if len(runs) < 2 else difference(runs[1][q], a)[0]
        row = {"family": fam.name, "dtype": dtype, "check": check, "quantity": q,
               "numel": int(b.numel()), "repeat_max_abs": rep, "seconds": round(seconds, 3),
               "status": "ok", "device_value": float("nan"), "cpu_value": float("nan")}
        if a is None:
            rows.append({**row, "status": "missing on the device", "passed": False})
            continue
        if b.numel() == 1:
            row.update(device_value=float(a), cpu_value=float(b))
        d, rel = difference(a, b)
        if q.startswith("info."):  # a record (e.g. which path ran), not a result
            row.update(max_abs_diff=d, rel_diff=rel, tolerance=None, passed=None)
        elif check == "dynamics_verify":
            name = q.removeprefix("identity.")
            judged = name in VERIFY_JUDGED
            row.update(max_abs_diff=d, rel_diff=rel, tolerance=VERIFY_BOUND if judged else None,
                       passed=bool(float(a) <= VERIFY_BOUND) if judged else None)
        else:
            noise = None if ref32 is None or q not in ref32 else difference(b, ref32[q])[1]
            tol = tolerance(dtype, noise)
            cond = conditioning(b, ref.get(f"info.jitter.{q}"))
            if cond is not None:
                tol = max(tol, BF16_NOISE_FACTOR * cond)
            row.update(max_abs_diff=d, rel_diff=rel, bf16_noise=noise, conditioning=cond,
                       tolerance=tol, passed=bool(rel <= tol))
        rows.append(row)
    return rows


def check_family(fam: Family, dtype: str, device: str, checks: tuple[str, ...],
                 deadline: Deadline, repeats: int = 2) -> list[dict[str, Any]]:
    """Every check of ``checks`` that applies to ``fam`` in ``dtype`` (the device call run
    ``repeats`` times): rows of :func:`_rows`, or one row with the error where a call raised."""
    hf = build(fam)
    ps = prompts(vocab_of(hf))
    dt = DTYPES[dtype]
    ref_m, dev_m = _model(hf, fam.name, "cpu", dt), _model(hf, fam.name, device, dt)
    ref32_m = None if dt == torch.float32 else _model(hf, fam.name, "cpu", torch.float32)
    out: list[dict[str, Any]] = []
    for check in checks:
        call, needs_heads, dtypes = CALLS[check]
        base = {"family": fam.name, "dtype": dtype, "check": check}
        if (needs_heads and not fam.attention) or (dtypes and dtype not in dtypes):
            continue
        if deadline.over():
            out.append({**base, "quantity": "*", "status": "skipped: part budget spent"})
            continue
        t0 = time.perf_counter()
        try:
            ref = call(ref_m, ps)
            ref32 = None if ref32_m is None else call(ref32_m, ps)
            runs = []
            for _ in range(repeats):
                runs.append(call(dev_m, ps))
                _sync(device)
        except Exception as e:  # recorded: the session goes on to the next check
            out.append({**base, "quantity": "*", "passed": False,
                        "status": f"error: {type(e).__name__}: {' '.join(str(e).split())[:300]}",
                        "traceback": traceback.format_exc(limit=6)[-2000:]})
            continue
        out += _rows(fam, dtype, check, ref, runs, time.perf_counter() - t0, ref32)
    return out


def full_plan(families: tuple[Family, ...] = FAMILIES) -> list[tuple[Family, str]]:
    """Every family in every dtype, float32 first (so a short budget checks it fully)."""
    return [(f, d) for d in DTYPES for f in families]


def dry_plan(families: tuple[Family, ...] = FAMILIES) -> list[tuple[Family, str]]:
    """Every family once, the dtypes alternating (the dry run: each path, each dtype, once)."""
    names = tuple(DTYPES)
    return [(f, names[i % len(names)]) for i, f in enumerate(families)]


def run_correctness(device: str, deadline: Deadline, plan: list[tuple[Family, str]],
                    checks: tuple[str, ...] = tuple(CALLS), repeats: int = 2,
                    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows, summary) of every (family, dtype) of ``plan``: all rows, and per family × dtype
    × check the worst relative difference and whether every quantity passed. The CPU side
    runs on one thread (tiny models: more threads only add overhead); restored after."""
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with strict_float32() as tf32:
            for fam, dtype in plan:
                if deadline.over():
                    rows.append({"family": fam.name, "dtype": dtype, "check": "*",
                                 "quantity": "*", "status": "skipped: part budget spent"})
                    continue
                rows += check_family(fam, dtype, device, checks, deadline, repeats)
    finally:
        torch.set_num_threads(threads)
    return rows, summarise(rows, tf32)


def summarise(rows: list[dict[str, Any]], tf32: dict[str, bool]) -> dict[str, Any]:
    cells: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = f"{r['family']}/{r['dtype']}/{r['check']}"
        c = cells.setdefault(key, {"passed": True, "worst_rel_diff": 0.0, "status": "ok",
                                   "repeat_max_abs": 0.0})
        if r.get("status", "ok") != "ok":
            c["status"] = r["status"]
            c["passed"] = None if r["status"].startswith("skipped") else False
            continue
        if r.get("passed") is False:
            c["passed"] = False
        if r.get("tolerance") is not None:
            c["worst_rel_diff"] = max(c["worst_rel_diff"], r["rel_diff"])
        c["repeat_max_abs"] = max(c["repeat_max_abs"], r.get("repeat_max_abs", 0.0))
    failed = sorted(k for k, c in cells.items() if c["passed"] is False)
    return {"tolerance": TOLERANCE, "verify_bound_float32": VERIFY_BOUND, **tf32,
            "cells": cells, "n_cells": len(cells), "failed": failed,
            "skipped": sorted(k for k, c in cells.items() if c["passed"] is None),
            "nondeterministic": sorted(k for k, c in cells.items() if c["repeat_max_abs"] > 0)}

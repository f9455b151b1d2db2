"""Extra held-out evaluations of a sweep cell at changed task parameters, e.g. the HMM trained at
K = 20 and evaluated at K = 30 and 50 (Paper I's length generalisation).

``eval_params`` maps a task to a list of parameter overrides, ``{"hmm": [{"K": 30}, {"K": 50}]}``.
After a cell has trained, its final model is evaluated on each overridden task with the cell's
seed and final-evaluation size (:func:`windtunnel.evaluate.evaluate`, the same held-out streams
as its own final evaluation), and each metric is added to the cell's row as
``<metric>@<label>``, e.g. ``entropy_mae_bits@K=50``. The results are cached in the cell's
folder (``extra_evals.json``) beside the SHA-256 of the weights they came from, so a rerun
evaluates nothing again and a retrained cell is never paired with stale numbers.

Example:
    >>> eval_label({"K": 50})
    'K=50'
    >>> metric_names([{"K": 30}], ("entropy_mae_bits",))
    ['entropy_mae_bits@K=30']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...records import file_sha256, read_json, write_json
from ...windtunnel.task import TokenTask
from ...windtunnel.task_registry import make_token_task

#: the calibration metrics each extra evaluation adds (the final report's names)
EVAL_METRICS = ("entropy_mae_bits", "entropy_mae_curve_bits", "kl_bits", "tvd", "accuracy")
CACHE = "extra_evals.json"
WEIGHTS = Path("model") / "model.safetensors"


def eval_label(override: dict[str, Any]) -> str:
    """``K=50`` for ``{"K": 50}``; several keys are joined by commas in name order."""
    return ",".join(f"{k}={override[k]}" for k in sorted(override))


def metric_names(overrides: list[dict[str, Any]],
                 metrics: tuple[str, ...] = EVAL_METRICS) -> list[str]:
    """The row columns ``overrides`` add, in order."""
    return [f"{m}@{eval_label(o)}" for o in overrides for m in metrics]


def eval_task(task: str, task_params: dict[str, Any], override: dict[str, Any]) -> TokenTask:
    """The cell's task with ``override`` applied (raises the task's one-line config error)."""
    return make_token_task(task, **{**task_params, **override})


def check_overrides(task: str, task_params: dict[str, Any], overrides: Any) -> list[str]:
    """Problems with ``overrides`` for ``task`` (a list of dicts each giving a valid task), as
    one-line messages; empty when they are fine."""
    if not isinstance(overrides, list) or not all(isinstance(o, dict) and o for o in overrides):
        return [f"eval_params for {task} must be a list of non-empty objects, e.g. "
                f"[{{\"K\": 50}}], got {json.dumps(overrides)}"]
    bad = []
    trained = make_token_task(task, **task_params)
    for o in overrides:
        try:
            t = eval_task(task, task_params, o)
        except Exception as e:  # the task's own message names the parameter
            bad.append(f"eval_params {task} {json.dumps(o)}: {' '.join(str(e).split())}")
            continue
        if t.vocab_size != trained.vocab_size or t.seq_len > trained.max_seq_len:
            bad.append(f"eval_params {task} {json.dumps(o)}: its sequences ({t.seq_len} tokens, "
                       f"vocabulary {t.vocab_size}) do not fit the trained models (at most "
                       f"{trained.max_seq_len} tokens, vocabulary {trained.vocab_size}); raise "
                       f"the training task's size limit (e.g. max_K) in task_params")
    return bad


def cached(out: Path, overrides: list[dict[str, Any]]) -> dict[str, float] | None:
    """The metrics of every override from ``out``'s cache, if all are there and were measured
    on the weights now in ``out/model``; else None."""
    path = out / CACHE
    if not overrides:
        return {}
    if not path.exists() or not (out / WEIGHTS).exists():
        return None
    data = read_json(path, expect=dict, keys=("weights_sha256", "evals"),
                     fix="delete it; the sweep evaluates again")
    if data["weights_sha256"] != file_sha256(out / WEIGHTS):
        return None
    evals = data["evals"]
    if any(eval_label(o) not in evals for o in overrides):
        return None
    return {f"{m}@{eval_label(o)}": evals[eval_label(o)][m]
            for o in overrides for m in EVAL_METRICS}


def evaluate_overrides(out: Path, task: str, task_params: dict[str, Any], seed: int, n: int,
                       overrides: list[dict[str, Any]]) -> dict[str, float]:
    """Evaluate the finished run in ``out`` at each override (``n`` sequences, ``seed``),
    cache the results in ``out/extra_evals.json`` and return them as row columns."""
    if not overrides:
        return {}
    hit = cached(out, overrides)
    if hit is not None:
        return hit
    from ...windtunnel.checkpoint import load_model
    from ...windtunnel.evaluate import evaluate

    model = load_model(out / "model")
    evals = {}
    for o in overrides:
        rep = evaluate(model, eval_task(task, task_params, o), n, seed, logit_lens=False)
        d = rep.to_dict()
        evals[eval_label(o)] = {m: d[m] for m in EVAL_METRICS}
    write_json(out / CACHE, {"weights_sha256": file_sha256(out / WEIGHTS), "evals": evals})
    return cached(out, overrides) or {}

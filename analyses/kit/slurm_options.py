"""What a run asks submitit for, declared once for every command that submits jobs (a sweep's
cells, a geometry run's or a capture's shards): the options that become
``AutoExecutor.update_parameters``'s keyword arguments (Slurm's ``#SBATCH`` lines), the check of
``--slurm-additional-parameters``, and the executor itself. Torch-free; submitit is imported
only when an executor is made.

Example:
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(timeout_min=60, gpus_per_node=1, cpus_per_task=None, mem_gb=None,
    ...                       slurm_partition="gpu", slurm_account=None,
    ...                       slurm_additional_parameters={})
    >>> submitit_parameters(cfg, workers=4)
    {'timeout_min': 60, 'slurm_array_parallelism': 4, 'gpus_per_node': 1, 'slurm_partition': 'gpu'}
    >>> sbatch_problem({"constraint": ["a100"]})
    "--slurm-additional-parameters: constraint must be a string, a number or true, got ['a100']"
"""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import Any

from ...records import option
from .errors import ExperimentError

#: the fields passed to submitit under the same name (None: not passed, submitit's or the
#: cluster's default); the ``slurm_`` ones reach only Slurm, the others also submitit's local
#: executor (``gpus_per_node``: the GPUs each local job sees)
PASSED = ("gpus_per_node", "cpus_per_task", "mem_gb", "slurm_partition", "slurm_account")

#: the #SBATCH options with a flag of their own
OWN = {"gpus-per-node": "--gpus-per-node", "cpus-per-task": "--cpus-per-task",
       "mem": "--mem-gb", "time": "--timeout-min", "partition": "--slurm-partition",
       "account": "--slurm-account", "array": "--workers (the array's parallelism)"}


def submitit_parameters(cfg: Any, workers: int) -> dict[str, Any]:
    """The keyword arguments of ``AutoExecutor.update_parameters`` for ``cfg`` (a config with
    the :func:`resource_option` fields) with ``workers`` jobs at once (the array's
    parallelism)."""
    params: dict[str, Any] = {"timeout_min": cfg.timeout_min,
                              "slurm_array_parallelism": workers}
    params.update({k: getattr(cfg, k) for k in PASSED if getattr(cfg, k) is not None})
    if cfg.slurm_additional_parameters:
        params["slurm_additional_parameters"] = dict(cfg.slurm_additional_parameters)
    return params


def sbatch_problem(extra: Any) -> str | None:
    """One line if ``extra`` (``--slurm-additional-parameters``) is not a table of option
    names and values (a string, a number, or true for a flag without a value), else None."""
    flag = "--slurm-additional-parameters"
    if not isinstance(extra, dict):
        return f"{flag} must be a JSON object such as {{\"constraint\": \"a100\"}}, got {extra!r}"
    for key, value in extra.items():
        if not isinstance(key, str) or not key.strip() or key.strip() != key:
            return f"{flag}: {key!r} is no #SBATCH option name"
        own = OWN.get(key.replace("_", "-"))
        if own is not None:
            return f"{flag}: give {key} as {own}"
        if value is True or (isinstance(value, str | int | float) and
                             not isinstance(value, bool)):
            continue
        return f"{flag}: {key} must be a string, a number or true, got {value!r}"
    return None


def json_flags(text: str) -> dict[str, Any]:
    """``--slurm-additional-parameters``' JSON object of #SBATCH options, checked by
    :func:`sbatch_problem`."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError("expected an object such as {\"constraint\": "
                                         f"\"a100\"}}, got {text!r}")
    problem = sbatch_problem(obj)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return obj


#: per field: default, help, and the rest of its :func:`records.option`
_RESOURCES: dict[str, tuple[Any, str, dict[str, Any]]] = {
    "gpus_per_node": (None, "GPUs each job requests (Slurm --gpus-per-node)", {"min": 0}),
    "cpus_per_task": (None, "CPUs each job requests (Slurm --cpus-per-task)", {"min": 1}),
    "mem_gb": (None, "memory each job requests, GB (Slurm --mem)", {"above": 0}),
    "timeout_min": (24 * 60, "time limit of each job, minutes (Slurm --time)", {"min": 1}),
    "slurm_partition": (None, "Slurm partition (--partition)", {}),
    "slurm_account": (None, "Slurm account (--account)", {}),
    "slurm_additional_parameters": (
        None, "other #SBATCH options as JSON, e.g. '{\"constraint\": \"a100\", \"qos\": "
        "\"high\"}' (true: a flag without a value)",
        {"factory": dict, "parse": json_flags, "metavar": "JSON"}),
}


def resource_option(name: str, needs: str) -> Any:
    """The option ``name`` (one of :data:`PASSED`, ``timeout_min`` or
    ``slurm_additional_parameters``): how a job runs, never what it computes (not part of a
    run's identity), read only when ``needs`` holds (e.g. ``"backend=submitit"``)."""
    default, text, extra = _RESOURCES[name]
    return option(default, text, identity=False, needs=needs, **extra)


def submitit_executor(folder: Path, parameters: dict[str, Any]) -> Any:
    """submitit's ``AutoExecutor`` in ``folder`` (Slurm where ``srun`` is found, else its local
    executor) with ``parameters`` (:func:`submitit_parameters`)."""
    try:
        import submitit
    except ImportError:
        raise ExperimentError("submitting jobs needs submitit: pip install submitit") from None
    ex = submitit.AutoExecutor(folder=folder)
    ex.update_parameters(**parameters)
    return ex


def cancel_job(job: Any) -> None:
    """Cancel a submitit job. A local one's controller is sent SIGTERM, which it forwards to
    the job's process and then exits quietly; ``job.cancel`` sends it SIGINT, whose
    KeyboardInterrupt traceback lands on the caller's stderr after its one-line message. A
    Slurm job is cancelled (``scancel``)."""
    controller = getattr(job, "_process", None)  # submitit keeps a local job's Popen here
    if controller is not None:
        controller.send_signal(signal.SIGTERM)
    else:
        job.cancel(check=False)

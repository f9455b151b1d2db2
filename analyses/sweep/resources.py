"""What a sweep asks submitit for: the options of :class:`~analyses.sweep.config.SweepConfig`
that become ``AutoExecutor.update_parameters``'s keyword arguments (Slurm's ``#SBATCH``
lines), and the check of ``--slurm-additional-parameters``. Torch-free.

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

from typing import Any

#: the sweep's fields passed to submitit under the same name (None: not passed, submitit's
#: or the cluster's default); the ``slurm_`` ones reach only Slurm, the others also
#: submitit's local executor (``gpus_per_node``: the GPUs each local job sees)
PASSED = ("gpus_per_node", "cpus_per_task", "mem_gb", "slurm_partition", "slurm_account")


#: the #SBATCH options the sweep has its own flag for
OWN = {"gpus-per-node": "--gpus-per-node", "cpus-per-task": "--cpus-per-task",
       "mem": "--mem-gb", "time": "--timeout-min", "partition": "--slurm-partition",
       "account": "--slurm-account", "array": "--workers (the array's parallelism)"}


def submitit_parameters(cfg: Any, workers: int) -> dict[str, Any]:
    """The keyword arguments of ``AutoExecutor.update_parameters`` for sweep ``cfg`` with
    ``workers`` cells at once (the array's parallelism)."""
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

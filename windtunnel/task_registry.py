"""The task registry: every task's class and parameter dataclass by name, and the functions
that build a task from a name and parameters or from a :meth:`windtunnel.task.Task.config`.

A task module registers its class with :func:`register_task` when it is imported; every
function here first imports all of them (:func:`load_tasks`), so the registry is complete
however it was reached.

Example:
    >>> task = make_token_task("bijection", V=4)
    >>> task.name, task_from_config(task.config()).config() == task.config()
    ('bijection', True)
    >>> make_task("nope")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    TaskConfigError: unknown task 'nope'; available: ...
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .names import TASK_NAMES, TaskConfigError
from .task import Task, TokenTask
from .task_configs import TASK_CONFIGS, task_params_problem


@dataclass(frozen=True)
class _Registered:
    cls: type[Task]
    config_cls: type


#: task name -> its class and config class, filled by :func:`register_task`
TASKS: dict[str, _Registered] = {}


def register_task(config_cls: type):
    """Class decorator: register a Task under its ``name`` with the dataclass that configures
    it (fields declared with :func:`records.option`)."""

    def wrap(cls: type[Task]) -> type[Task]:
        TASKS[cls.name] = _Registered(cls, config_cls)
        TASK_CONFIGS[cls.name] = config_cls  # the command line reads its options from there
        return cls

    return wrap


def load_tasks() -> None:
    """Import every task module (:data:`windtunnel.names.TASK_NAMES`: each task's module has its
    name), so that :data:`TASKS` is complete however this module was reached: the package
    imports its public names lazily, and a task registers itself when its module is imported."""
    for module in TASK_NAMES:
        importlib.import_module(f".{module}", __package__)


def make_task(name: str, **params: Any) -> Task:
    """Build a registered task; unknown names, parameters or values raise
    :class:`TaskConfigError`."""
    load_tasks()
    if name not in TASKS:
        raise TaskConfigError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}")
    reg = TASKS[name]
    problem = task_params_problem(name, params)
    if problem is not None:
        raise TaskConfigError(problem)
    return reg.cls(reg.config_cls(**params))


def make_token_task(name: str, **params: Any) -> TokenTask:
    """:func:`make_task` for a task models can be trained on (a wind tunnel)."""
    task = make_task(name, **params)
    if not isinstance(task, TokenTask):
        token = sorted(n for n, r in TASKS.items() if issubclass(r.cls, TokenTask))
        raise TaskConfigError(f"task {name!r} is a text task for pretrained LLMs (no token "
                              f"vocabulary to train on); wind tunnels: {', '.join(token)}")
    return task


def _params(cfg: dict[str, Any]) -> dict[str, Any]:
    """A :meth:`Task.config` read back from JSON as task parameters (lists as tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items() if k != "task"}


def task_from_config(cfg: dict[str, Any]) -> Task:
    """Inverse of :meth:`Task.config`."""
    return make_task(cfg["task"], **_params(cfg))


def token_task_from_config(cfg: dict[str, Any]) -> TokenTask:
    """Inverse of :meth:`Task.config` for a task models are trained on (a wind tunnel)."""
    return make_token_task(cfg["task"], **_params(cfg))

"""Wind tunnels: tasks with exact Bayes posteriors, small models, training, calibration."""

from windtunnel.bijection import BijectionConfig, BijectionTask
from windtunnel.hmm import HMMConfig, HMMTask
from windtunnel.task import TASKS, Task, TaskBatch, TaskConfigError, make_task, task_from_config

__all__ = [
    "TASKS",
    "BijectionConfig",
    "BijectionTask",
    "HMMConfig",
    "HMMTask",
    "Task",
    "TaskBatch",
    "TaskConfigError",
    "make_task",
    "task_from_config",
]

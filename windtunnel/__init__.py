"""Wind tunnels: tasks with exact Bayes posteriors, small models, training, calibration.

Tasks share one contract (:mod:`windtunnel.task`): token tasks (bijection, hmm, assoc_recall,
long_recall) for training small models, and the text task SULA for pretrained LLMs.
:func:`load_run` opens a trained run with its task attached. Errors are :mod:`records` one-liners:
:class:`TaskConfigError` and :class:`RunDirError` are usage errors (exit status 2),
:class:`CheckpointError` a damaged or altered file (exit status 1).
"""

from windtunnel.assoc_recall import AssocRecallConfig, AssocRecallTask
from windtunnel.bijection import BijectionConfig, BijectionTask
from windtunnel.checkpoint import CheckpointError
from windtunnel.hmm import HMMConfig, HMMTask
from windtunnel.long_recall import LongRecallConfig, LongRecallTask
from windtunnel.posterior_prompts import PosteriorPrompts, PromptSetError
from windtunnel.runs import LoadedRun, NotARunError, RunDirError, is_windtunnel_dir, load_run
from windtunnel.sula import SulaError, SulaTask, SulaTaskConfig
from windtunnel.task import (
    TASKS,
    Task,
    TaskBatch,
    TaskConfigError,
    TokenTask,
    make_task,
    make_token_task,
    task_from_config,
    token_task_from_config,
)

__all__ = [
    "TASKS",
    "AssocRecallConfig",
    "AssocRecallTask",
    "BijectionConfig",
    "BijectionTask",
    "CheckpointError",
    "HMMConfig",
    "HMMTask",
    "LoadedRun",
    "LongRecallConfig",
    "LongRecallTask",
    "NotARunError",
    "PosteriorPrompts",
    "PromptSetError",
    "RunDirError",
    "SulaError",
    "SulaTask",
    "SulaTaskConfig",
    "Task",
    "TaskBatch",
    "TaskConfigError",
    "TokenTask",
    "is_windtunnel_dir",
    "load_run",
    "make_task",
    "make_token_task",
    "task_from_config",
    "token_task_from_config",
]

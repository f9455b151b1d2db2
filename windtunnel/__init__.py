"""Wind tunnels: tasks with exact Bayes posteriors, small models, training, calibration.

Tasks share one contract (:mod:`windtunnel.task`): token tasks (bijection, hmm) for training
small models, and the text task SULA for pretrained LLMs. :func:`load_run` opens a trained run
with its task attached.
"""

from windtunnel.bijection import BijectionConfig, BijectionTask
from windtunnel.hmm import HMMConfig, HMMTask
from windtunnel.posterior_prompts import PosteriorPrompts, PromptSetError
from windtunnel.runs import LoadedRun, RunDirError, is_windtunnel_dir, load_run
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
    "BijectionConfig",
    "BijectionTask",
    "HMMConfig",
    "HMMTask",
    "LoadedRun",
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

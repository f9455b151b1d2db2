"""Wind tunnels: tasks with exact Bayes posteriors, small models, training, calibration.

Tasks share one contract (:mod:`windtunnel.task`; their registry,
:mod:`windtunnel.task_registry`): token tasks (bijection, hmm, assoc_recall, long_recall) for
training small models, and the text task SULA for pretrained LLMs.
:func:`patch_pairs` and :func:`sula_patch_pairs` make clean/corrupt pairs with the exact
posterior of both, for activation patching scored against the truth.
:func:`load_run` opens a trained run with its task attached. Errors are :mod:`records` one-liners:
:class:`TaskConfigError` and :class:`RunDirError` are usage errors (exit status 2),
:class:`CheckpointError` a damaged or altered file (exit status 1).
"""

from typing import TYPE_CHECKING

from ..records.lazy import lazy_exports

if TYPE_CHECKING:
    from .architectures import register_auto_classes
    from .assoc_recall import AssocRecallConfig, AssocRecallTask
    from .bijection import BijectionConfig, BijectionTask
    from .checkpoint import CheckpointError
    from .hmm import HMMConfig, HMMTask
    from .long_recall import LongRecallConfig, LongRecallTask
    from .patch_kinds import pairs_problem
    from .patch_pairs import PatchPairs, patch_pairs
    from .patch_sula import TextPatchPairs, sula_patch_pairs
    from .posterior_prompts import PosteriorPrompts, PromptSetError
    from .runs import LoadedRun, NotARunError, RunDirError, is_windtunnel_dir, load_run
    from .sula import SulaError, SulaTask, SulaTaskConfig
    from .task import Task, TaskBatch, TaskConfigError, TokenTask
    from .task_registry import (
        TASKS,
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
    "PatchPairs",
    "PosteriorPrompts",
    "PromptSetError",
    "RunDirError",
    "SulaError",
    "SulaTask",
    "SulaTaskConfig",
    "Task",
    "TaskBatch",
    "TaskConfigError",
    "TextPatchPairs",
    "TokenTask",
    "is_windtunnel_dir",
    "load_run",
    "make_task",
    "make_token_task",
    "pairs_problem",
    "patch_pairs",
    "register_auto_classes",
    "sula_patch_pairs",
    "task_from_config",
    "token_task_from_config",
]

#: every public name is imported on first use (records.lazy): importing a light submodule
#: (a config, a list of names) imports no torch; the first use imports them all, so the task
#: registry is complete and the wind tunnels' model classes are registered with transformers
__getattr__ = lazy_exports(__name__, whole=True)

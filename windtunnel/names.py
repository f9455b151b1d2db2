"""The names the command line checks before anything heavy loads: the transformer presets and
tasks of the wind tunnels, and the one error of a bad task or training option (the architectures'
names: :data:`windtunnel.arch_registry.ARCH_NAMES`). This module imports no torch;
``tests/windtunnel/test_names.py`` holds it equal to the registries
(:data:`windtunnel.transformer.TRANSFORMER_PRESETS`, :data:`windtunnel.task.TASKS`).

Example:
    >>> "small" in PRESET_NAMES, TEXT_TASK_NAMES
    (True, ('sula',))
"""

from __future__ import annotations

from ..records import UsageError

#: the model sizes (:data:`windtunnel.transformer.TRANSFORMER_PRESETS`), in its order
PRESET_NAMES: tuple[str, ...] = ("paper", "paper-hmm", "small", "small-deep", "tiny")

#: the tasks models train on (token tasks) and the text task for pretrained LLMs
TOKEN_TASK_NAMES: tuple[str, ...] = ("assoc_recall", "bijection", "hmm", "long_recall")
TEXT_TASK_NAMES: tuple[str, ...] = ("sula",)
TASK_NAMES: tuple[str, ...] = (*TOKEN_TASK_NAMES, *TEXT_TASK_NAMES)

#: the sticky Markov chain's seeds (:mod:`windtunnel.sticky_chain`), the authors' in their
#: order (``dynamics em-vs-sgd --seeds N`` takes the first N)
STICKY_SEEDS: tuple[int, ...] = (42, 2024, 1337, 7777, 9999)


class TaskConfigError(UsageError):
    """A task (or a model or training run on it) was asked for with parameters that cannot
    work (V < 2, L > V, more memory than the machine has ...): a usage error, exit status 2."""

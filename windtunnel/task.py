"""The wind-tunnel task contract: a seeded batch sampler with an exact posterior.

Every task emits a :class:`TaskBatch`. Predictions are read at the same ``query_pos`` positions
in every sequence, from the *hypothesis slice* of the vocabulary (the tokens that name the
hypotheses: value tokens for bijection, state tokens for HMM filtering).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
import torch


class TaskConfigError(ValueError):
    """A task was asked for with parameters that cannot work (V < 2, L > V, ...)."""


@dataclass(frozen=True)
class TaskBatch:
    """One batch of sequences with their exact (fp64) posteriors.

    Shapes: ``input_ids`` [B, T] int64; ``query_pos`` [Q] int64 (shared by all sequences);
    ``targets`` [B, Q] int64, the true hypothesis as an index into the slice;
    ``posterior`` [B, Q, H] float64, the exact Bayes posterior over the H hypotheses;
    ``entropy_bits`` [B, Q] float64, its entropy in bits.
    """

    input_ids: torch.Tensor
    query_pos: torch.Tensor
    targets: torch.Tensor
    posterior: torch.Tensor
    entropy_bits: torch.Tensor

    @property
    def n(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device: torch.device | str) -> TaskBatch:
        return TaskBatch(
            self.input_ids.to(device),
            self.query_pos.to(device),
            self.targets.to(device),
            self.posterior.to(device),
            self.entropy_bits.to(device),
        )


def entropy_bits_fp64(p: np.ndarray) -> np.ndarray:
    """Entropy in bits over the last axis of a probability array (0·log 0 = 0), float64."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=-1)


class Task(ABC):
    """A task with an exact posterior. Subclasses set ``name`` and implement ``_sample``."""

    name: ClassVar[str]
    #: ``True`` when training uses the full posterior as a soft target (HMM), else the true answer.
    soft_targets: ClassVar[bool] = False

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @property
    @abstractmethod
    def hyp_slice(self) -> slice:
        """Vocabulary ids of the hypotheses, in hypothesis order."""

    @property
    @abstractmethod
    def seq_len(self) -> int:
        """Length T of the sequences this task samples."""

    @property
    def max_seq_len(self) -> int:
        """The longest sequence any evaluation of this task may use (sizes position tables)."""
        return self.seq_len

    @property
    def n_hypotheses(self) -> int:
        s = self.hyp_slice
        return s.stop - s.start

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """JSON-serialisable parameters that rebuild this task with :func:`make_task`."""

    @abstractmethod
    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch: ...

    def sample(self, n: int, seed: int | tuple[int, ...] | list[int]) -> TaskBatch:
        """Draw ``n`` sequences, each with a fresh hypothesis, deterministically from ``seed``.

        ``seed`` may be a tuple (e.g. ``(run_seed, step)``) so that every training step has its own
        independent, reproducible stream.
        """
        if n < 1:
            raise TaskConfigError(f"n must be >= 1, got {n}")
        return self._sample(np.random.default_rng(seed), int(n))

    def uniform_entropy_bits(self) -> float:
        """Entropy of the context-blind uniform predictor over the hypothesis slice."""
        return math.log2(self.n_hypotheses)

    def describe_tokens(self) -> dict[str, Any]:
        """A short human-readable description of the token layout (for ``sample --json``)."""
        return {
            "vocab_size": self.vocab_size,
            "hyp_slice": [self.hyp_slice.start, self.hyp_slice.stop],
        }


@dataclass(frozen=True)
class _Registered:
    cls: type[Task]
    config_cls: type


TASKS: dict[str, _Registered] = {}


def register_task(config_cls: type):
    """Class decorator: register a Task under its ``name`` with the dataclass that configures it."""

    def wrap(cls: type[Task]) -> type[Task]:
        TASKS[cls.name] = _Registered(cls, config_cls)
        return cls

    return wrap


def make_task(name: str, **params: Any) -> Task:
    """Build a registered task; unknown names or parameters raise :class:`TaskConfigError`."""
    if name not in TASKS:
        raise TaskConfigError(f"unknown task {name!r}; available: {', '.join(sorted(TASKS))}")
    reg = TASKS[name]
    fields = set(reg.config_cls.__dataclass_fields__)
    unknown = set(params) - fields
    if unknown:
        raise TaskConfigError(
            f"task {name!r} has no parameter(s) {sorted(unknown)}; valid: {sorted(fields)}"
        )
    return reg.cls(reg.config_cls(**params))


def task_from_config(cfg: dict[str, Any]) -> Task:
    """Inverse of :meth:`Task.config`."""
    cfg = dict(cfg)
    return make_task(cfg.pop("task"), **cfg)


def config_dict(name: str, cfg: Any) -> dict[str, Any]:
    return {"task": name, **asdict(cfg)}

"""The task contract: a seeded sampler of prompts whose answer has an exact Bayes posterior.

Every registered task (``make_task(name, **params)``) gives :class:`PosteriorPrompts` -- prompts
with the exact posterior over their hypotheses at the final position -- the one currency of
calibration, geometry and steering. Two kinds implement it:

* :class:`TokenTask` -- the wind tunnels (bijection, hmm): a small token vocabulary whose
  *hypothesis slice* names the hypotheses, dense batches (:class:`TaskBatch`) with the exact
  posterior at every supervised position; models are trained on these.
* text tasks -- SULA (:mod:`windtunnel.sula`): text prompts for a pretrained LLM whose
  hypotheses are label words; they are evaluated, never trained on.

A task's parameters are a dataclass registered with it; each field is declared with
:func:`records.option` (help, range), so the command line derives its task options from the
registry and a new task needs no CLI edit.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

from .memory import format_bytes, memory_limit
from .names import TASK_NAMES, TaskConfigError
from .posterior_prompts import PosteriorPrompts
from .seeds import Purpose, stream
from .sparse_posterior import SparsePosterior
from .task_configs import TASK_CONFIGS, task_params_problem

#: tasks with a sparse posterior form carry the dense [B, Q, H] one only up to this many
#: hypotheses (bijection V = 1,000 would need ~1 GB per 128 sequences)
DENSE_MAX_H = 256


@dataclass(frozen=True)
class TaskBatch:
    """One batch of sequences with their exact (fp64) posteriors.

    Shapes: ``input_ids`` [B, T] int64; ``query_pos`` [Q] int64 (shared by all sequences);
    ``targets`` [B, Q] int64, the true hypothesis as an index into the slice;
    ``posterior`` [B, Q, H] float64, the exact Bayes posterior over the H hypotheses (None
    when only ``sparse`` is given: H > :data:`DENSE_MAX_H`);
    ``entropy_bits`` [B, Q] float64, its entropy in bits; ``sparse``, the same posterior as a
    :class:`~windtunnel.sparse_posterior.SparsePosterior` where the task has one.
    """

    input_ids: torch.Tensor
    query_pos: torch.Tensor
    targets: torch.Tensor
    posterior: torch.Tensor | None
    entropy_bits: torch.Tensor
    sparse: SparsePosterior | None = None

    @property
    def n(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def oracle(self) -> torch.Tensor | SparsePosterior:
        """The exact posterior in the form the metrics read: dense where held, else sparse."""
        if self.posterior is not None:
            return self.posterior
        assert self.sparse is not None, "a TaskBatch needs a dense or a sparse posterior"
        return self.sparse

    def bayes_max(self) -> torch.Tensor:
        """[B, Q] float64: the largest posterior probability (the Bayes predictor's expected
        accuracy at each position)."""
        if self.posterior is not None:
            return self.posterior.max(-1).values
        return self.oracle.top()[1]  # type: ignore[union-attr]

    def dense_posterior(self) -> torch.Tensor:
        """[B, Q, H] float64, built from the sparse form where no dense one is held (refused
        with :class:`TaskConfigError` beyond the machine's memory)."""
        if self.posterior is not None:
            return self.posterior
        sp = self.sparse
        assert sp is not None
        B, Q, H = sp.shape
        need = 8 * B * Q * H
        if need > memory_limit() // 4:
            raise TaskConfigError(f"a dense posterior [{B}, {Q}, {H}] needs "
                                  f"{format_bytes(need)}; read batch.sparse instead")
        return sp.to_dense()

    def to(self, device: torch.device | str) -> TaskBatch:
        return TaskBatch(self.input_ids.to(device), self.query_pos.to(device),
                         self.targets.to(device),
                         None if self.posterior is None else self.posterior.to(device),
                         self.entropy_bits.to(device),
                         None if self.sparse is None else self.sparse.to(device))


class Task(ABC):
    """A task with an exact posterior. ``group_name`` says what a prompt's group index is."""

    name: ClassVar[str]
    group_name: ClassVar[str] = "q"

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """JSON-serialisable parameters that rebuild this task with :func:`task_from_config`."""

    @abstractmethod
    def posterior_prompts(self, n: int, seed: int) -> PosteriorPrompts:
        """``n`` prompts with the exact posterior at their final position, deterministic in
        ``seed``."""


@dataclass(frozen=True)
class QueryCuts:
    """Fresh sequences cut just after one prediction position each: ``tokens`` [n] id lists;
    ``query`` [n] prediction index q; ``posterior`` [n, H] and ``entropy_bits`` [n] there."""

    tokens: list[list[int]]
    query: np.ndarray
    posterior: np.ndarray
    entropy_bits: np.ndarray


class TokenTask(Task):
    """A wind tunnel: predictions are read at the same ``query_pos`` positions in every
    sequence, from the *hypothesis slice* of the vocabulary (value tokens for bijection, state
    tokens for HMM filtering). Subclasses implement ``_sample``."""

    #: True when training uses the full posterior as a soft target (HMM), else the true answer
    soft_targets: ClassVar[bool] = False
    #: the task options that size a batch's dense arrays (named when a batch would not fit)
    size_options: ClassVar[tuple[str, ...]] = ()
    #: the task option that :meth:`at_length` sets to evaluate a trained model at another
    #: sequence length (HMM: ``K``; ``windtunnel eval --K``), or None where there is none
    length_option: ClassVar[str | None] = None

    def at_length(self, value: int) -> TokenTask:
        """The same task with its :attr:`length_option` set to ``value`` (length
        generalisation); refused where the task has none or the model was sized shorter."""
        raise TaskConfigError(f"task {self.name!r} has no length option")

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

    @property
    def n_queries(self) -> int:
        """Supervised positions Q per sequence (default: an upper bound, ``seq_len``)."""
        return self.seq_len

    def batch_bytes(self, n: int, logits: bool = True) -> int:
        """Estimated peak memory of the dense arrays of an ``n``-sequence batch: building it
        (the exact posterior, float64 [n, Q, H], about three copies while it is computed) and,
        with ``logits``, the logits a model returns over the vocabulary (float32
        [n, T, vocab], about three copies with log-softmax and gradient). Measured for
        bijection V = 200 and 400: sampling takes 3.2x the posterior."""
        post = self.posterior_bytes()
        return n * (post + (3 * 4 * self.seq_len * self.vocab_size if logits else 0))

    def posterior_bytes(self) -> int:
        """Peak bytes per sequence of building its exact posteriors (dense: about three
        float64 copies of [Q, H]; tasks with a sparse form say less)."""
        return 3 * 8 * self.n_queries * self.n_hypotheses

    def check_memory(self, n: int, need: int, lower: str = "", logits: bool = True,
                     extra: str = "") -> None:
        """Refuse (:class:`TaskConfigError`) a batch of ``n`` sequences whose estimated
        memory ``need`` exceeds the machine's, saying what it holds (``logits``; ``extra``
        names more, such as attention) and the options to lower (the task's
        :attr:`size_options`, then ``lower``)."""
        limit = memory_limit()
        if need <= limit:
            return
        sizes = " ".join(f"{k}={v}" for k, v in self.config().items()
                         if k in self.size_options)
        held = [f"exact posteriors [{n}, {self.n_queries}, {self.n_hypotheses}]"]
        if logits:
            held.append(f"logits [{n}, {self.seq_len}, {self.vocab_size}]")
        held += [extra] if extra else []
        opts = [f"--{o.replace('_', '-')}" for o in self.size_options] + ([lower] if lower
                                                                            else [])
        raise TaskConfigError(
            f"{self.name}{' ' + sizes if sizes else ''} needs about {format_bytes(need)} for "
            f"a batch of {n} sequences ({', '.join(held)}), more than this machine's "
            f"{format_bytes(limit)}; lower {' or '.join(opts)}")

    @abstractmethod
    def _sample(self, rng: np.random.Generator, n: int) -> TaskBatch: ...

    def sample(self, n: int, seed: int | Sequence[int] | np.random.Generator
               | np.random.SeedSequence) -> TaskBatch:
        """Draw ``n`` sequences, each with a fresh hypothesis, deterministically from ``seed``:
        anything :func:`numpy.random.default_rng` takes. The library itself passes a named
        stream (:func:`windtunnel.seeds.stream`); plain int and tuple seeds alias one another
        (``s`` and ``(s, 0)`` are the same stream), so do not mix them to keep draws apart."""
        if n < 1:
            raise TaskConfigError(f"n must be >= 1, got {n}")
        self.check_memory(n, self.batch_bytes(n, logits=False), "the number of sequences",
                          logits=False)
        return self._sample(np.random.default_rng(seed), int(n))

    def cut_at_queries(self, n: int, seed: int = 0,
                       purpose: Purpose = Purpose.QUERY_CUTS) -> QueryCuts:
        """``n`` fresh sequences, each cut just after a random prediction position (so its
        final token is where the model predicts a hypothesis), deterministic in ``seed``.

        Sequences come from stream ``(seed, purpose, 0)``, the cut positions from
        ``(seed, purpose, 1)`` (:mod:`windtunnel.seeds`): disjoint from training and
        evaluation batches for every seed."""
        batch = self.sample(n, stream(seed, purpose, 0))
        rng = stream(seed, purpose, 1)
        q = rng.integers(0, int(batch.query_pos.numel()), size=n)
        ends = batch.query_pos.numpy()[q] + 1
        ids = batch.input_ids.numpy()
        rows = np.arange(n)
        post = (batch.posterior.numpy()[rows, q] if batch.posterior is not None
                else batch.oracle.select(rows, q))  # type: ignore[union-attr]
        return QueryCuts([ids[i, : ends[i]].tolist() for i in range(n)], q,
                         post, batch.entropy_bits.numpy()[rows, q])

    def posterior_prompts(self, n: int, seed: int) -> PosteriorPrompts:
        """``n`` prompts cut at a query (:meth:`cut_at_queries` on the stream purpose
        ``POSTERIOR_PROMPTS``, so they are not the ``QUERY_CUTS`` pool of the same seed), with
        the hypothesis tokens and the exact posterior there; ``group`` = the prediction index
        q."""
        cuts = self.cut_at_queries(n, seed, Purpose.POSTERIOR_PROMPTS)
        hyp = np.arange(self.hyp_slice.start, self.hyp_slice.stop)
        bayes = cuts.posterior / cuts.posterior.sum(1, keepdims=True)
        meta = pd.DataFrame({"document": [f"seq-{i}" for i in range(n)],
                             "n_tokens": [len(t) for t in cuts.tokens]})
        return PosteriorPrompts(name=self.name, prompts=cuts.tokens, bayes=bayes,
                                group=cuts.query, group_name="q",
                                hyp_ids=np.broadcast_to(hyp, (n, hyp.size)).copy(), meta=meta)

    def uniform_entropy_bits(self) -> float:
        """Entropy of the context-blind uniform predictor over the hypothesis slice."""
        return math.log2(self.n_hypotheses)

    def describe_tokens(self) -> dict[str, Any]:
        """A short description of the token layout (for ``sample --json``)."""
        return {"vocab_size": self.vocab_size,
                "hyp_slice": [self.hyp_slice.start, self.hyp_slice.stop]}


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


def config_dict(name: str, cfg: Any) -> dict[str, Any]:
    return {"task": name, **asdict(cfg)}

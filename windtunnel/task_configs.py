"""The options of the token tasks (each one's dataclass, fields declared with
:func:`records.option`) and :data:`TASK_CONFIGS`, every task's by name: what the command line
turns into ``--V``, ``--K`` ... and checks before a task module (torch) is imported.

Example:
    >>> TASK_CONFIGS["bijection"] is BijectionConfig, TASK_CONFIGS["hmm"]().K
    (True, 20)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..records import OptionError, check_options, option, same_option
from .priors import PRIORS
from .sula_config import SulaTaskConfig

Layout = Literal["sepvocab", "paired"]


@dataclass(frozen=True)
class BijectionConfig:
    """``V`` hypotheses (values), ``L`` revealed keys (default V-1), ``layout``, key sampling."""

    V: int = option(20, "bijection: number of hypotheses (values; a batch holds dense "
                        "[V-1, V] posteriors per sequence, so V in the thousands needs GiBs)",
                    min=2)
    L: int | None = option(None, "bijection: number of revealed keys (default V - 1)", min=1)
    layout: Layout = option("sepvocab", "bijection: token layout", choices=("sepvocab", "paired"))
    replacement: bool = option(False, "bijection: draw keys with replacement (saw-tooth "
                                      "entropy curve)")
    query_from_context: bool = option(True, "bijection, paired layout: the final query is a "
                                            "revealed key", negate="--query-anywhere")
    noise: float = option(0.0, "observation noise: each observation (bijection: a shown value; "
                               "long_recall: a record's key and value) is replaced by a uniformly "
                               "random symbol with this probability, folded into the exact "
                               "posterior", min=0.0, max=0.5)


@dataclass(frozen=True)
class HMMConfig:
    """``S`` states, ``O`` symbols, ``K`` observations per training sequence; ``max_K`` sizes
    position tables for length-generalisation evaluation; ``target_window`` W > 0 makes the
    target (and every metric read against it) the filter from the last W observations instead
    of the exact filter."""

    S: int = option(5, "hmm: hidden states (the tokenizer fixes S = O = 5)", min=2)
    O: int = option(5, "hmm: observation symbols", min=2)  # noqa: E741
    K: int = option(20, "hmm: observations per sequence", min=1)
    max_K: int = option(50, "hmm: the longest K to size position tables for", min=1)
    target_window: int = option(0, "hmm: target the filter from the last W observations "
                                "(windowed_filter; 0: the exact filter, the paper's task)", min=0)


Variant = Literal["recall", "binding"]


VARIANTS = ("recall", "binding")


@dataclass(frozen=True)
class AssocRecallConfig:
    """``variant``; ``N`` pairs shown; ``M`` queries and ``F`` fillers (recall only);
    ``n_keys`` and ``n_values``, the key and value vocabularies. Unset options take the
    variant's defaults (:data:`DEFAULTS`)."""

    variant: Variant = option(
        "recall", "assoc_recall: 'recall' (the spec's [STORE k SEP v]xN, fillers, [QUERY k PAD]"
                  "xM episodes; every answer is bound, 0 bits) or 'binding' (keys with "
                  "replacement in a k v k v ... k stream; 0 bits for a seen key, else "
                  "log2 n_values)", choices=VARIANTS)
    N: int | None = option(None, "assoc_recall: key-value pairs shown (default 64 for recall, "
                                 "19 for binding)", min=1)
    M: int | None = option(None, "assoc_recall, recall variant: queries, drawn from the stored "
                                 "keys without replacement (default 3)", min=1)
    F: int | None = option(None, "assoc_recall, recall variant: filler tokens after the pairs "
                                 "(F // 2 between queries; default 32)", min=0)
    n_keys: int | None = option(None, "assoc_recall: key vocabulary (default 256 for recall, "
                                      "20 for binding)", min=1)
    n_values: int | None = option(None, "assoc_recall: value vocabulary, the hypotheses "
                                        "(default 256 for recall, 20 for binding)", min=2)


@dataclass(frozen=True)
class LongRecallConfig:
    """``length`` tokens, ``key_vocab`` keys, ``value_vocab`` values (the hypotheses), one
    record per ``record_every`` tokens, observation ``noise``, a ``prior`` over the values
    (``prior_scale``, ``prior_shape``), and ``max_length`` to size position tables."""

    length: int = option(64, "long_recall: sequence length T in tokens (records among filler, "
                             "then QUERY k); evaluate at other lengths with with_length", min=4)
    key_vocab: int = option(64, "long_recall: number of keys K", min=2)
    value_vocab: int = option(64, "long_recall: number of values V, the hypotheses (a sparse "
                                  "posterior at any V; a dense one too up to 256)", min=2)
    record_every: int = option(4, "long_recall: one key-value record per block of this many "
                                  "tokens, at a random offset among fillers", min=2)
    noise: float = same_option(BijectionConfig, "noise", default=0.05)
    prior: str = option("uniform", "long_recall: prior over the values in value order: uniform, "
                                   "gaussian exp(-z^2/2) or generalised_gaussian exp(-|z|^shape), "
                                   "z = (v - (V-1)/2) / (prior_scale V)", choices=PRIORS)
    prior_scale: float = option(0.25, "long_recall: width of a gaussian or generalised_gaussian "
                                      "prior, as a fraction of V", above=0)
    prior_shape: float = option(1.0, "long_recall: exponent of the generalised_gaussian prior "
                                     "(2: gaussian of sd prior_scale V/sqrt 2; 1: Laplace)",
                                above=0)
    max_length: int | None = option(None, "long_recall: longest length to size position tables "
                                          "for (default: length)", min=4)


#: every task's options by task name: the built-in ones here, a task registered later
#: (:func:`windtunnel.task_registry.register_task`) joins them
TASK_CONFIGS: dict[str, type] = {"assoc_recall": AssocRecallConfig, "bijection": BijectionConfig,
                                 "hmm": HMMConfig, "long_recall": LongRecallConfig,
                                 "sula": SulaTaskConfig}


def task_params_problem(name: str, params: dict[str, Any]) -> str | None:
    """The first problem with ``params`` as the options of task ``name`` (one of
    :data:`TASK_CONFIGS`) -- an unknown name, or a value of the wrong type or outside its
    declared range -- as one line, or None. Torch-free, so a command line checks it before any
    task module is imported; checks across parameters stay with the task's constructor
    (:func:`windtunnel.task_registry.make_task`, which uses this for the per-field ones).

    Example:
        >>> task_params_problem("hmm", {"Q": 3})
        "task 'hmm' has no parameter(s) ['Q']; valid: ['K', 'O', 'S', 'max_K', 'target_window']"
        >>> task_params_problem("hmm", {"K": 30}) is None
        True
    """
    cls = TASK_CONFIGS[name]
    fields = set(cls.__dataclass_fields__)
    unknown = set(params) - fields
    if unknown:
        return f"task {name!r} has no parameter(s) {sorted(unknown)}; valid: {sorted(fields)}"
    try:
        check_options(cls(**params))
    except OptionError as e:
        return f"task {name!r}: {e}"
    return None

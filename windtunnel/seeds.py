"""Named random streams: every draw the library makes from a task comes from one of these.

A stream is addressed by ``(seed, purpose, index)`` -- the run's seed, what the draw is for
(:class:`Purpose`) and a counter within that purpose (the training step, the evaluation batch).
It is the NumPy generator of ``SeedSequence(seed, spawn_key=(tag(purpose), index))``.

Why not plain tuples: NumPy pads a short entropy with zeros, so ``default_rng(s)``,
``default_rng((s, 0))`` and ``default_rng((s, 0, 0, 0))`` are one and the same stream, and an
integer of 2**32 or more spreads over several words (``default_rng(2**32)`` is
``default_rng((0, 1))``). Streams written as ``s`` and ``(s, step)`` therefore overlap.

Why these cannot alias each other: ``SeedSequence`` pads the entropy of a non-empty spawn key to
its four-word pool, so the words it hashes are ``[seed as 4 words, tag, index]`` -- exactly six
32-bit words when ``0 <= seed < 2**128`` and ``0 <= index < 2**32`` (both checked), which is a
one-to-one encoding of ``(seed, purpose, index)``. Distinct word lists hash to distinct 128-bit
pools except with negligible probability. ``tag(purpose)`` is the CRC-32 of the purpose's
namespaced name: stable across runs and machines (unlike ``hash``), and it makes the one plain
entropy that would reproduce a stream, the six-tuple ``(seed, 0, 0, 0, tag, index)``, one no
user writes by accident.
"""

from __future__ import annotations

import operator
import zlib
from enum import StrEnum

import numpy as np


class Purpose(StrEnum):
    """What a stream is drawn for. Each has its own tag, so no two purposes share data."""

    #: the training batch of one optimiser step (index = step)
    TRAIN = "train"
    #: a held-out evaluation batch (index = batch number within one evaluation)
    EVAL = "eval"
    #: :meth:`TokenTask.cut_at_queries` pools (e.g. the geometry task pool); index 0 = the
    #: sequences, 1 = the cut positions
    QUERY_CUTS = "query_cuts"
    #: :meth:`TokenTask.posterior_prompts` (the steering prompts); indices as ``QUERY_CUTS``
    POSTERIOR_PROMPTS = "posterior_prompts"
    #: sequences shown by ``bayesgeom windtunnel sample``
    INSPECT = "inspect"
    #: the fixed held-out batch a training monitor reads (index 0; training never draws it)
    MONITOR = "monitor"
    #: the clean sequences of patch pairs (:mod:`windtunnel.patch_pairs`; index = pool chunk)
    PATCH_PAIRS = "patch_pairs"
    #: the edits of patch pairs (index = pool chunk × 4 + the kind's place in
    #: :data:`windtunnel.patch_kinds.ALL_KINDS`; an unrelated pair's sequences too)
    PATCH_EDITS = "patch_edits"


#: exclusive upper bounds that keep the seed to four 32-bit words and the index to one
SEED_LIMIT = 2**128
INDEX_LIMIT = 2**32


def tag(purpose: Purpose) -> int:
    """The 32-bit tag of ``purpose`` in the spawn key: CRC-32 of ``bayesgeom.windtunnel.<name>``."""
    return zlib.crc32(f"bayesgeom.windtunnel.{Purpose(purpose).value}".encode())


_TAGS = {p: tag(p) for p in Purpose}
if len(set(_TAGS.values())) != len(_TAGS):  # pragma: no cover - a new name would have to clash
    raise RuntimeError("two stream purposes share a CRC-32 tag; rename one")


def seed_sequence(seed: int, purpose: Purpose, index: int = 0) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` of stream ``(seed, purpose, index)``.

    Raises ``ValueError`` unless ``0 <= seed < 2**128`` and ``0 <= index < 2**32`` (outside
    those ranges the encoding stops being one-to-one)."""
    seed, index = operator.index(seed), operator.index(index)
    if not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed must be in [0, 2**128), got {seed}")
    if not 0 <= index < INDEX_LIMIT:
        raise ValueError(f"stream index must be in [0, 2**32), got {index}")
    return np.random.SeedSequence(seed, spawn_key=(_TAGS[Purpose(purpose)], index))


def stream(seed: int, purpose: Purpose, index: int = 0) -> np.random.Generator:
    """A fresh generator on stream ``(seed, purpose, index)``: the same arguments give the same
    draws, different ones give unrelated draws."""
    return np.random.default_rng(seed_sequence(seed, purpose, index))

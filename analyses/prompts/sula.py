"""SULA prompts for one tokenizer: label words that are single tokens after ``": "``, and the
task's posterior prompts (:class:`windtunnel.SulaTask`) with those token ids.

Label words must each be a single token after ``": "`` for the model's tokenizer; the first that
are among :data:`windtunnel.sula.LABEL_CANDIDATES` (then consonant–vowel–consonant words, then
vocabulary words) are picked, and given labels that are not single tokens are refused with the
reason and single-token alternatives.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ...windtunnel import PosteriorPrompts, SulaError, TaskConfigError, make_task
from ...windtunnel.sula import ALPHA, CARRIER_WORDS, KS, LABEL_CANDIDATES, cvc_words

#: a context word the label follows in every prompt (used for the single-token check)
PROBE_CONTEXT = "good:"


def label_token(tokenizer: Any, word: str, context: str = PROBE_CONTEXT) -> int | None:
    """The one token id ``" " + word`` adds after ``context``, or None when it takes more than
    one token (or merges with the context)."""
    if tokenizer is None:
        raise SulaError("SULA needs a text model with a tokenizer (a wind-tunnel model has none; "
                        "use its own task instead)")
    base = tokenizer.encode(context, add_special_tokens=False)
    full = tokenizer.encode(f"{context} {word}", add_special_tokens=False)
    if len(full) != len(base) + 1 or full[: len(base)] != base:
        return None
    return int(full[-1])


def pick_labels(tokenizer: Any, labels: tuple[str, str] | None = None,
                remap_labels: tuple[str, str] | None = None,
                ) -> tuple[tuple[str, str], tuple[str, str], dict[str, int]]:
    """(labels, remap_labels, word → token id), each word one token for ``tokenizer``; missing
    pairs are filled from the candidates in order. Raises :class:`SulaError` naming a given
    label that is not a single token, with single-token alternatives."""
    given = [w for pair in (labels, remap_labels) if pair for w in pair]
    if len(set(given)) != len(given):
        raise SulaError(f"label words must all differ, got {given}")
    ids = {w: label_token(tokenizer, w) for w in given}
    pool = [w for w in (*LABEL_CANDIDATES, *cvc_words(400)) if w not in given]

    def free(n: int) -> list[str]:
        """The first ``n`` candidates that are single tokens distinct from every chosen one."""
        out: list[str] = []
        for w in itertools.chain(pool, _vocab_words(tokenizer, set(given) | set(pool))):
            if len(out) >= n:
                break
            t = label_token(tokenizer, w)
            if t is not None and t not in ids.values():
                out.append(w)
                ids[w] = t
        return out

    for w, t in list(ids.items()):
        if t is None:
            n = len(tokenizer.encode(f"{PROBE_CONTEXT} {w}", add_special_tokens=False)) \
                - len(tokenizer.encode(PROBE_CONTEXT, add_special_tokens=False))
            del ids[w]
            raise SulaError(f"label {w!r} is not a single token for this tokenizer (' {w}' "
                            f"takes {n} tokens after ':'); choose single-token labels, e.g. "
                            f"{', '.join(free(4))}")
    if len(set(ids.values())) != len(given):
        raise SulaError(f"labels {given} map to the same token")
    need = (0 if labels else 2) + (0 if remap_labels else 2)
    found = free(need) if need else []
    if len(found) < need:
        raise SulaError(f"found only {len(found)} single-token label words for this tokenizer "
                        f"({', '.join(found) or 'none'}) among {len(pool)} candidates; pass "
                        "labels and remap_labels that are one token each after ': '")
    it = iter(found)
    lab = labels or (next(it), next(it))
    rem = remap_labels or (next(it), next(it))
    return lab, rem, {w: ids[w] for w in (*lab, *rem)}


def _vocab_words(tokenizer: Any, skip: set[str]) -> Iterator[str]:
    """Last-resort label candidates: vocabulary entries that decode to a space and 2–8 lowercase
    letters (not a carrier word), in id order."""
    n = len(tokenizer) if hasattr(tokenizer, "__len__") else 0
    for i in range(n):
        text = tokenizer.decode([i])
        w = text[1:]
        if text.startswith(" ") and 2 <= len(w) <= 8 and w.isascii() and w.isalpha() \
                and w.islower() and w not in skip and w not in CARRIER_WORDS:
            yield w


def sula_prompts(condition: str, *, ks: Sequence[int], n_per_k: int,
                 alpha: float, seed: int, labels: tuple[str, str],
                 remap_labels: tuple[str, str], ids: dict[str, int]) -> PosteriorPrompts:
    """One SULA condition's prompts (``n_per_k`` per k, k-major) with the label token ids
    ``ids`` (from :func:`pick_labels`) as hypotheses."""
    task = make_task("sula", ks=tuple(ks), alpha=alpha, condition=condition, labels=labels,
                     remap_labels=remap_labels)
    pp = task.posterior_prompts(n_per_k * len(ks), seed)
    return pp.with_token_ids([ids[w] for w in pp.hyp_words or ()])


class PromptOptions(Protocol):
    """The prompt options of an experiment's config (``steer``, ``verify``)."""

    task: str | None
    n_prompts: int
    seed: int
    labels: tuple[str, str] | None
    n_per_k: int
    sula_seed: int


def model_posterior_prompts(model: Any, opts: PromptOptions, *, ks: Sequence[int] = KS,
                            alpha: float = ALPHA) -> PosteriorPrompts:
    """A model's posterior prompts: its own task's (``opts.n_prompts`` at ``opts.seed``) for a
    wind tunnel, SULA's main condition (``opts.n_per_k`` per k of ``ks``) for a text model. A
    task the model cannot run is a one-line :class:`windtunnel.TaskConfigError`."""
    task = opts.task
    if model.task is not None:
        name = model.task.name
        if task not in (None, name):
            raise TaskConfigError(f"this wind-tunnel model was trained on {name!r}; it cannot "
                                  f"run task {task!r} (use --task {name} or leave it out)")
        return model.task.posterior_prompts(opts.n_prompts, opts.seed)
    if task not in (None, "sula"):
        raise TaskConfigError(f"task {task!r} needs a wind-tunnel model trained on it; text "
                              "models run the in-context task 'sula'")
    lab, rem, ids = pick_labels(model.tokenizer, opts.labels)
    return sula_prompts("main", ks=ks, n_per_k=opts.n_per_k, alpha=alpha, seed=opts.sula_seed,
                        labels=lab, remap_labels=rem, ids=ids)

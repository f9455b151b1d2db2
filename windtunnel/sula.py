"""SULA: an in-context task for pretrained LLMs with an exact Bayes posterior (Paper III §5.2).

A latent label y ∈ {L1, L2} has a uniform prior; each of k examples ``"word: label"`` carries
y with probability α (0.9), else the other label, independently; the carrier words are
decorative (35 positive + 35 negative sentiment words, unrelated to the labels). The prompt
ends with a query word and a colon, so the next token is a label. The posterior depends only
on the number m of examples labelled L1:

    p(y = L1 | D_k) = 1 / (1 + exp((k − 2m) · log(α / (1 − α))))

Its binary entropy H_Bayes, averaged over the draws (exactly, by summing over the binomial
number of agreeing examples), is 1.000, 0.469, 0.258, 0.078, 0.0081 bits at k = 0, 1, 2, 4, 8.

Conditions, built from the same latent draws (paired by index):

- ``main``: labels L1/L2;
- ``remap``: another label pair, same examples: the posterior is unchanged;
- ``shuffled``: every example label drawn uniformly and independently of y: the labels carry no
  evidence, the posterior is flat (1 bit) at every k;
- ``ablated``: the evidence (each example's label token) replaced by ``[MASK]``: no label is
  observed, the posterior is flat. (Paper III's wording is "carrier tokens replaced by [MASK]";
  only masking the label tokens makes its stated flat posterior exact, so that is what is done.)

Registered as the text task ``sula`` (:class:`SulaTask`): its posterior prompts carry the label
words as hypotheses; a tokenizer turns them into token ids (:mod:`analyses.prompts.sula` checks
that each is a single token). Pure numpy and strings: no tokenizer here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..infotheory import entropy_bits_from_probs
from .posterior_prompts import PosteriorPrompts
from .sula_config import (
    ALPHA,
    CONDITIONS,
    KS,
    LABEL_CANDIDATES,  # noqa: F401 (re-exported: its long-standing home)
    SulaError,
    SulaTaskConfig,
)
from .task import Task, config_dict
from .task_registry import register_task

MASK = "[MASK]"

POSITIVE_WORDS = (
    "happy", "joyful", "wonderful", "excellent", "great", "good", "lovely", "bright", "kind",
    "warm", "brilliant", "cheerful", "delightful", "pleasant", "superb", "gentle", "calm",
    "hopeful", "proud", "brave", "fresh", "sweet", "glad", "fine", "nice", "rich", "clean",
    "strong", "smart", "friendly", "generous", "honest", "lucky", "charming", "peaceful",
)
NEGATIVE_WORDS = (
    "sad", "angry", "terrible", "awful", "bad", "poor", "ugly", "dark", "cruel", "cold",
    "gloomy", "bitter", "horrible", "nasty", "weak", "rude", "dull", "harsh", "lonely", "tired",
    "afraid", "guilty", "sick", "dirty", "broken", "empty", "lazy", "stupid", "evil", "grim",
    "hostile", "selfish", "miserable", "painful", "anxious",
)
CARRIER_WORDS = POSITIVE_WORDS + NEGATIVE_WORDS


def posterior_first(k: int | np.ndarray, m: int | np.ndarray, alpha: float = ALPHA,
                    ) -> np.ndarray:
    """p(y = L1 | k examples, m of them labelled L1), float64 (any broadcastable shapes)."""
    _check_alpha(alpha)
    k = np.asarray(k, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    z = (k - 2.0 * m) * math.log(alpha / (1.0 - alpha))
    return 1.0 / (1.0 + np.exp(z))


def expected_entropy_bits(k: int, alpha: float = ALPHA) -> float:
    """E[H_Bayes] (bits) over the draws of k examples: Σ_a Binom(a; k, α) · H(posterior when a
    examples show the true label) — exact, float64."""
    _check_alpha(alpha)
    a = np.arange(k + 1)
    w = np.array([math.comb(k, int(i)) for i in a], dtype=np.float64) \
        * alpha ** a * (1.0 - alpha) ** (k - a)
    p = posterior_first(k, a, alpha)
    return float((w * entropy_bits_from_probs(np.stack([p, 1.0 - p], -1))).sum())


def cvc_words(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct consonant–vowel–consonant nonsense words (the label fallback)."""
    cons, vows = "bdfgklmnprstvz", "aeiou"
    allw = [a + v + b for a in cons for v in vows for b in cons if a != b]
    rng = np.random.default_rng(seed)
    return [allw[i] for i in rng.permutation(len(allw))[:n]]


@dataclass(frozen=True)
class SulaDraws:
    """The latent draws every condition is built from; arrays over N = len(ks)·n_per_k prompts.

    ``k`` [N]; ``y`` [N] (0 = L1, 1 = L2); ``labels`` [N, K] example label indices (−1 past k);
    ``shuffled`` [N, K] labels drawn independently of y; ``carriers`` [N, K] indices into
    :data:`CARRIER_WORDS` (−1 past k); ``query`` [N] index of the query word."""

    k: np.ndarray
    y: np.ndarray
    labels: np.ndarray
    shuffled: np.ndarray
    carriers: np.ndarray
    query: np.ndarray
    alpha: float
    seed: int

    def __len__(self) -> int:
        return int(self.k.size)


def draw(ks: Sequence[int] = KS, n_per_k: int = 50, alpha: float = ALPHA, seed: int = 42,
         ) -> SulaDraws:
    """Sample ``n_per_k`` prompts for each k (k-major order), deterministically from ``seed``."""
    _check_alpha(alpha)
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 0 or len(set(ks)) != len(ks):
        raise SulaError(f"ks must be distinct non-negative integers, got {list(ks)}")
    if n_per_k < 1:
        raise SulaError(f"n_per_k must be at least 1, got {n_per_k}")
    rng = np.random.default_rng(seed)
    n, width = len(ks) * n_per_k, max(max(ks), 1)
    k = np.repeat(np.asarray(ks, dtype=np.int64), n_per_k)
    y = rng.integers(0, 2, size=n)
    agree = rng.random((n, width)) < alpha
    labels = np.where(agree, y[:, None], 1 - y[:, None])
    shuffled = rng.integers(0, 2, size=(n, width))
    carriers = rng.integers(0, len(CARRIER_WORDS), size=(n, width))
    query = rng.integers(0, len(CARRIER_WORDS), size=n)
    past = np.arange(width)[None, :] >= k[:, None]
    for a in (labels, shuffled, carriers):
        a[past] = -1
    return SulaDraws(k, y, labels, shuffled, carriers, query, float(alpha), int(seed))


@dataclass(frozen=True)
class SulaPrompts:
    """One condition rendered: ``texts`` [N]; ``label_words`` (L1, L2); ``posterior`` [N, 2]
    float64 exact p(L1), p(L2); ``k``, ``y``, ``m`` (examples labelled L1 shown) [N]."""

    condition: str
    texts: list[str]
    label_words: tuple[str, str]
    posterior: np.ndarray
    k: np.ndarray
    y: np.ndarray
    m: np.ndarray

    @property
    def entropy_bits(self) -> np.ndarray:
        """H_Bayes [N] (bits, float64)."""
        return entropy_bits_from_probs(self.posterior)


def render(d: SulaDraws, condition: str, labels: tuple[str, str],
           remap_labels: tuple[str, str] | None = None) -> SulaPrompts:
    """Texts and exact posteriors for one condition (``remap`` uses ``remap_labels``)."""
    if condition not in CONDITIONS:
        raise SulaError(f"unknown SULA condition {condition!r}; choose from "
                        f"{', '.join(CONDITIONS)}")
    words = labels
    if condition == "remap":
        if remap_labels is None:
            raise SulaError("the remap condition needs remap_labels (a second label pair)")
        if set(remap_labels) & set(labels):
            raise SulaError(f"remap labels {remap_labels} must differ from {labels}")
        words = remap_labels
    if len(set(words)) != 2:
        raise SulaError(f"need two different labels, got {words}")
    shown = d.shuffled if condition == "shuffled" else d.labels
    texts: list[str] = []
    for i in range(len(d)):
        parts = []
        for j in range(int(d.k[i])):
            lab = MASK if condition == "ablated" else words[int(shown[i, j])]
            parts.append(f"{CARRIER_WORDS[int(d.carriers[i, j])]}: {lab}")
        parts.append(f"{CARRIER_WORDS[int(d.query[i])]}:")
        texts.append(", ".join(parts))
    m = np.where(shown >= 0, shown == 0, False).sum(1).astype(np.int64)
    if condition in ("main", "remap"):
        p1 = posterior_first(d.k, m, d.alpha)
    else:
        p1 = np.full(len(d), 0.5)
        if condition == "ablated":
            m = np.zeros(len(d), dtype=np.int64)
    post = np.stack([p1, 1.0 - p1], -1)
    return SulaPrompts(condition, texts, (words[0], words[1]), post, d.k.copy(), d.y.copy(), m)


def _check_alpha(alpha: float) -> None:
    if not 0.5 < alpha < 1.0:
        raise SulaError(f"alpha (the chance an example shows the true label) must be in "
                        f"(0.5, 1), got {alpha}")


@register_task(SulaTaskConfig)
class SulaTask(Task):
    """SULA as a task: ``posterior_prompts(n, seed)`` draws ``n / len(ks)`` prompts per k
    (k-major order) and renders the configured condition; hypotheses are the two label
    words; ``group`` is k."""

    name = "sula"
    group_name = "k"

    def __init__(self, cfg: SulaTaskConfig):
        _check_alpha(cfg.alpha)
        self.cfg = SulaTaskConfig(tuple(int(k) for k in cfg.ks), float(cfg.alpha),
                                  cfg.condition, tuple(cfg.labels), tuple(cfg.remap_labels))

    def config(self) -> dict:
        return config_dict(self.name, self.cfg)

    def posterior_prompts(self, n: int, seed: int) -> PosteriorPrompts:
        ks = self.cfg.ks
        if n < len(ks) or n % len(ks):
            raise SulaError(f"SULA draws the same number of prompts for each of the {len(ks)} "
                            f"values of k; n = {n} is not a positive multiple of {len(ks)}")
        d = draw(ks, n // len(ks), self.cfg.alpha, seed)
        sp = render(d, self.cfg.condition, self.cfg.labels, self.cfg.remap_labels)
        meta = pd.DataFrame({"condition": sp.condition, "y": sp.y, "m": sp.m,
                             "label_1": sp.label_words[0], "label_2": sp.label_words[1],
                             "text": sp.texts})
        return PosteriorPrompts(name=f"sula-{sp.condition}", prompts=sp.texts,
                                bayes=sp.posterior, group=sp.k, group_name="k",
                                hyp_words=sp.label_words, meta=meta)

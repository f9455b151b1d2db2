"""The candidate prompt pool (Paper III §4.2): ≥ 1,000 real-text prompts over several domains.

Every available source is cut into non-overlapping windows (:mod:`analyses.prompts.segmentation`);
exact duplicates are dropped; the pool size is split as evenly as possible over the domains, and
each domain's share over its sources (a source with too few windows passes its shortfall on).
Each source samples its share without replacement. Everything is drawn from generators seeded by
``(seed, domain, source)``, so the same seed and corpora give the same pool.

Prompt sets: ``"mixed"`` is the pool of the :data:`~analyses.prompts.corpora.DOMAINS`; a domain
name (``"code"``, ``"math"``, ...) is the pool filtered to that domain, as in the paper's
domain-restricted sets. A definition domain (``"gcide-medical"``, ...) is added to the pool only
when ``domains`` names it, never to ``mixed``, and draws as many prompts as one domain's share of
``size`` over all five :data:`DOMAINS` (200 of 1,000), each from its own seeded generator, so
neither the mixed pool nor a definition domain's draw depends on which definition domains are
added.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...records import UsageError
from .corpora import (
    ALL_DOMAINS,
    DEFINITION_DOMAINS,
    DOMAINS,
    MIXED,
    PROMPT_SETS,
    CorpusPaths,
    CorpusReport,
    read_corpora,
)
from .segmentation import WindowSpec, windows


class PoolError(UsageError):
    """The pool cannot be built as asked (unknown set, domain unavailable, too few prompts)."""


@dataclass(frozen=True)
class PoolConfig:
    """``size`` prompts over ``domains`` (those available), cut by ``windows``, seeded."""

    size: int = 1000
    seed: int = 0
    domains: tuple[str, ...] = DOMAINS
    windows: WindowSpec = field(default_factory=WindowSpec)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PromptPool:
    """``table``: one row per prompt — ``prompt_id``, ``domain``, ``source``, ``document``,
    ``text``, ``n_words``; ``unavailable``: (domain, source) -> why it was skipped."""

    table: pd.DataFrame
    config: PoolConfig
    unavailable: dict[tuple[str, str], str]

    @property
    def domains(self) -> list[str]:
        return [d for d in ALL_DOMAINS if d in set(self.table["domain"])]

    def select(self, prompt_set: str) -> pd.DataFrame:
        """The rows of ``"mixed"`` (every row of the mixed pool's domains) or of one domain."""
        if prompt_set == MIXED:
            return self.table[self.table["domain"].isin(DOMAINS)]
        if prompt_set not in ALL_DOMAINS:
            raise PoolError(f"unknown prompt set {prompt_set!r}; choose from "
                            f"{', '.join(PROMPT_SETS)}")
        rows = self.table[self.table["domain"] == prompt_set]
        if rows.empty:
            why = [m for (d, _), m in self.unavailable.items() if d == prompt_set]
            raise PoolError(why[0] if why else f"no {prompt_set} prompts in the pool")
        return rows

    def sha256(self) -> str:
        """Hash of the prompt texts and domains, in order."""
        payload = json.dumps(self.table[["domain", "text"]].values.tolist())
        return hashlib.sha256(payload.encode()).hexdigest()

    def messages(self) -> list[str]:
        """One line per unavailable source (which package, how to install it)."""
        return [f"skipped {m}" for m in self.unavailable.values()]


def allocate(total: int, capacities: list[int]) -> list[int]:
    """Split ``total`` as evenly as possible under per-slot ``capacities`` (earlier slots get
    the remainder first); slots that fill up pass the rest on. Returns the counts."""
    counts = [0] * len(capacities)
    left = total
    open_ = [i for i, c in enumerate(capacities) if c > 0]
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for j, i in enumerate(open_):
            take = min(capacities[i] - counts[i], share + (1 if j < extra else 0))
            counts[i] += take
            left -= take
        open_ = [i for i in open_ if counts[i] < capacities[i]]
        if share == 0 and extra == 0:
            break
    return counts


def _source_windows(report: CorpusReport, spec: WindowSpec, seed: int,
                    ) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(domain, source) -> unique (document, text) windows, in document order."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    seen: set[str] = set()
    for (dom, src), docs in report.documents.items():
        rng = np.random.default_rng([seed, ALL_DOMAINS.index(dom), _stable_id(src)])
        wins = []
        for doc in docs:
            for text in windows(doc, spec, rng):
                if text not in seen:
                    seen.add(text)
                    wins.append((doc.name, text))
        out[(dom, src)] = wins
    return out


def _stable_id(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def definition_share(size: int) -> int:
    """Prompts a definition domain draws for a pool of ``size``: one domain's share of ``size``
    over all the :data:`DOMAINS` of the mixed pool, rounded up.

    Example:
        >>> definition_share(1000), definition_share(12)
        (200, 3)
    """
    return -(-size // len(DOMAINS))


def build_pool(config: PoolConfig | None = None, paths: CorpusPaths | None = None,
               report: CorpusReport | None = None) -> PromptPool:
    """Read the corpora (or use ``report``) and draw the pool (see the module doc)."""
    cfg = config or PoolConfig()
    if cfg.size < 1:
        raise PoolError(f"pool size must be at least 1, got {cfg.size}")
    rep = report or read_corpora(cfg.domains, paths)
    wins = _source_windows(rep, cfg.windows, cfg.seed)
    have = {k[0] for k in wins}
    doms = [d for d in DOMAINS if d in cfg.domains and d in have]
    extra = [d for d in DEFINITION_DOMAINS if d in cfg.domains and d in have]
    if not doms and not extra:
        raise PoolError("no corpus is available: " + "; ".join(rep.unavailable.values()))
    dom_cap = [sum(len(w) for k, w in wins.items() if k[0] == d) for d in doms]
    if doms and sum(dom_cap) < cfg.size:
        raise PoolError(f"the available corpora ({', '.join(doms)}) give only {sum(dom_cap)} "
                        f"distinct prompts, fewer than the pool size {cfg.size}")
    counts = allocate(cfg.size, dom_cap) if doms else []
    counts += [min(definition_share(cfg.size), sum(len(w) for k, w in wins.items()
                                                    if k[0] == d)) for d in extra]
    rows = []
    for d, n_dom in zip(doms + extra, counts, strict=True):
        keys = [k for k in wins if k[0] == d]
        for key, n_src in zip(keys, allocate(n_dom, [len(wins[k]) for k in keys]), strict=True):
            rng = np.random.default_rng([cfg.seed, ALL_DOMAINS.index(d), _stable_id(key[1]), 1])
            pick = np.sort(rng.choice(len(wins[key]), size=n_src, replace=False))
            for i in pick:
                doc, text = wins[key][i]
                rows.append({"domain": d, "source": key[1], "document": doc, "text": text,
                             "n_words": len(text.split())})
    table = pd.DataFrame(rows)
    table.insert(0, "prompt_id", np.arange(len(table)))
    return PromptPool(table, cfg, dict(rep.unavailable))

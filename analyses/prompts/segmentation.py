"""Cut documents into prompt-sized windows at sentence-like boundaries.

Prose: a window is 1–``max_units`` consecutive sentences of one paragraph, starting at a sentence
start. It ends at a sentence end or — with probability ``clause_cut`` — at a clause boundary
(``,`` ``;`` ``:``) inside its last sentence, so prompts end both where the next token is open
(after a full stop) and where it is constrained (mid-sentence). A sentence ends at ``.``, ``!``
or ``?`` (plus closing quotes/brackets) before whitespace and a capital, digit or opening quote,
unless the word before the stop is a common abbreviation or a single letter.

Code: a window is 1–``max_units`` consecutive lines, starting and ending on a non-blank line,
dedented. Windows never overlap: each document is walked once, window after window, with the
window lengths drawn from the caller's generator (deterministic by seed).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

import numpy as np

from .corpora import Document

_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "cf", "inc", "ltd",
    "co", "corp", "fig", "approx", "dept", "jan", "feb", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "u.s",
})
_SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*(?=\s+[\"'‘“(\[]?[A-Z0-9])")
_CLAUSE = re.compile(r"[,;:](?=\s)")


@dataclass(frozen=True)
class WindowSpec:
    """Window sizes: words counted as whitespace-separated pieces."""

    min_words: int = 5
    max_words: int = 40
    max_chars: int = 320
    max_units: int = 3
    max_code_lines: int = 6
    clause_cut: float = 0.5


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one whitespace-normalised paragraph (see the module doc for the rule)."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        before = paragraph[start: m.start()].split()
        word = before[-1].lower().rstrip(".") if before else ""
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        out.append(paragraph[start: m.end()].strip())
        start = m.end()
    tail = paragraph[start:].strip()
    if tail:
        out.append(tail)
    return out


def clause_cuts(sentence: str) -> list[int]:
    """Character offsets just after each clause mark (``,`` ``;`` ``:`` before a space)."""
    return [m.end() for m in _CLAUSE.finditer(sentence)]


def _n_words(text: str) -> int:
    return len(text.split())


def _fits(text: str, spec: WindowSpec) -> bool:
    return spec.min_words <= _n_words(text) <= spec.max_words and len(text) <= spec.max_chars


def prose_windows(doc: Document, spec: WindowSpec, rng: np.random.Generator) -> list[str]:
    """Non-overlapping sentence windows of every paragraph of ``doc``."""
    out = []
    for para in doc.text.split("\n\n"):
        sents = split_sentences(" ".join(para.split()))
        i = 0
        while i < len(sents):
            k = min(int(rng.integers(1, spec.max_units + 1)), len(sents) - i)
            while k > 1 and _n_words(" ".join(sents[i: i + k])) > spec.max_words:
                k -= 1
            text = " ".join(sents[i: i + k])
            prefix = " ".join(sents[i: i + k - 1]) + " " if k > 1 else ""
            last = sents[i + k - 1]
            cuts = [prefix + last[:c] for c in clause_cuts(last)]
            cuts = [c for c in cuts if _fits(c, spec)]
            cut_here = rng.random() < spec.clause_cut
            if cuts and (cut_here or not _fits(text, spec)):
                text = cuts[int(rng.integers(len(cuts)))]  # end at a clause mark of the last one
            if _fits(text, spec):
                out.append(text)
            i += k
    return out


def code_windows(doc: Document, spec: WindowSpec, rng: np.random.Generator) -> list[str]:
    """Non-overlapping line windows of ``doc`` (start and end on non-blank lines)."""
    lines = doc.text.expandtabs(4).splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        k = int(rng.integers(1, spec.max_code_lines + 1))
        chunk = lines[i: i + k]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        text = textwrap.dedent("\n".join(line.rstrip() for line in chunk))
        if _fits(text, spec):
            out.append(text)
        i += k
    return out


def windows(doc: Document, spec: WindowSpec, rng: np.random.Generator) -> list[str]:
    """Prompt windows of one document, by its kind."""
    if doc.kind == "code":
        return code_windows(doc, spec, rng)
    return prose_windows(doc, spec, rng)

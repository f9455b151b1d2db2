"""Definitions by subject from GCIDE, the GNU Collaborative International Dictionary of English
(the 1913 Webster with later additions), as Debian's ``dict-gcide`` installs it for dictd:
``/usr/share/dictd/gcide.index`` + ``gcide.dict.dz``. GCIDE is GPL-2+; it is read where it is
installed, at run time, and none of its text is part of this repository.

The dictd format: each index line is ``headword TAB offset TAB length``, the numbers in
dictd's base 64 (digits ``A-Z a-z 0-9 + /``, most significant first), counting bytes of the
uncompressed dictionary; ``.dict.dz`` is gzip (dictzip adds a random-access table in the gzip
header's extra field, which :mod:`zlib` skips). Several headwords may share one article
(variant spellings); each article is parsed once. Both files are read strictly
(:mod:`.dictd`): a damaged install (a truncated or corrupt ``.dict.dz``, an index line that
does not parse, an index cut mid-line, a span past the data) is a one-line
:class:`~records.FileFault` naming the file and saying to reinstall ``dict-gcide``, never a
traceback nor a smaller dictionary; :func:`check_dictionary` makes those checks without
parsing the articles, for a config check before any model loads.

An article holds entries; an entry starts at column 0 with its headword, pronunciation
(``\\Ab*do"men\\``), part of speech, etymology in brackets and, for the whole entry, an
optional subject label in parentheses (``(Law)``); its senses follow, numbered or not, each
optionally labelled itself (``1. (Anat.) The belly, ...``), and phrase definitions
(``{Abdominal ring} (Anat.), a fancied ...``). A sense or phrase ends at its source tag
(``[1913 Webster]``); quotations, ``Note:`` and ``Syn.`` paragraphs are not definitions. A
definition's labels are its own, else (for a sense, not a phrase) its entry's; a label like
``(Anat. & Zool.)`` has two parts. A definition belongs to a subject of :data:`SUBJECTS` when a
part of a label matches it; one that matches two subjects is left out (ambiguous).

Its text is cleaned for reading: pronunciations, etymologies and usage tags (``[Obs.]``) are
dropped, GCIDE's character escapes (``[ae]``, ``[=a]``) become Unicode, cross-reference braces
are removed and a closing citation (``--Bouvier.``) is cut. Left out: definitions that only
point elsewhere (``See Ileus.``) and those with a ``?`` where the dictionary lost a Greek or
other character.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from . import dictd

#: subject -> a pattern one part of a label must match in full
SUBJECTS: dict[str, re.Pattern[str]] = {
    "medical": re.compile(r"(Human )?Anat\.|Anatomy|Med\.?|Surg\.|Surgery|Physiol\.|Physiology"
                          r"|Pathol\.|Pathology|Pharm\.|Pharmacy|Dentistry|Obstetrics"),
    "legal": re.compile(r"(.+[ .])?Law\.?|Law (of|Pleadings)\b.*"),
    "math": re.compile(r"Math\.?|Geom\.?|Geometry|(Descriptive|Anal\.|Gr\.) Geom(\.|etry)"
                       r"|Geom\. of .+|Alg\.|Algebra|Arith\.|Arithmetic|Trig\.|Trigonometry"
                       r"|(Integral |Differential )?Calculus|Statistics|Quaternions"),
    "computing": re.compile(r"Computers?|Computing|Computer (programming|science)"),
}
INDEX_FILE, DICT_FILE = "gcide.index", "gcide.dict.dz"
#: the Debian package that installs them (named by every fault)
PACKAGE = "dict-gcide"
_SOURCE_TAG = re.compile(r"^\s*\[[^\]]*(Webster|WordNet|PJC|Century|RDH|\bAS\b)[^\]]*\]")
_LABEL = re.compile(r"\(([A-Z][^()]{0,40})\)")
_LABEL_PARTS = re.compile(r"\s*(?:&|,|\bor\b|\band\b)\s*")
_SENSE = re.compile(r"^(\d+\.)\s*(\(([A-Z][^()]{0,40})\))?\s*")
_PHRASE = re.compile(r"^\{([^}]*)\}(?:,?\s*(?:or|and)\s*\{[^}]*\})*\s*(?:\(([A-Z][^()]{0,40})\))?"
                     r"\s*,\s*")
_ACCENTS = {"`": "\u0300", "'": "\u0301", "^": "\u0302", "~": "\u0303", "=": "\u0304",
            "-": "\u0306", ".": "\u0307", ":": "\u0308", '"': "\u0308"}
#: a definition that only points elsewhere (left out): "See Ileus.", "Same as Antepileptic."
_XREF = re.compile(r"((See|Same as|Alt\. of)\b[^.;]*)?\.?")
_LIGATURES = {"ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ"}


@dataclass(frozen=True)
class Definition:
    """One labelled definition: ``headword`` (or phrase), the subject ``labels`` as written
    (``("Med.",)``), its ``subject`` (a key of :data:`SUBJECTS`) and the cleaned ``text``."""

    headword: str
    labels: tuple[str, ...]
    subject: str
    text: str

    @property
    def prompt(self) -> str:
        """``"Headword: definition"``, the one form every subject shares."""
        return f"{self.headword}: {self.text}"


def read_articles(index: Path, data: Path) -> list[str]:
    """Every distinct article of a dictd dictionary (in offset order), skipping the
    ``00-database-*`` records; a damaged file is a :class:`~records.FileFault`."""
    entries = dictd.read_index(index, PACKAGE)
    raw = dictd.read_data(data, PACKAGE)
    dictd.check_spans(entries, len(raw), index, data, PACKAGE)
    spans = sorted({(off, n) for word, off, n in entries if not word.startswith("00-")})
    return [raw[off: off + n].decode("utf-8", errors="replace") for off, n in spans]


def clean(text: str) -> str:
    """Readable text: escapes to Unicode, brackets and braces dropped, citations cut."""
    text = re.sub(r"\[(ae|AE|oe|OE)\]", lambda m: _LIGATURES[m.group(1)], text)
    text = re.sub(r"\[([`'^~=\-.:\"])([A-Za-z])\]",
                  lambda m: m.group(2) + _ACCENTS[m.group(1)], text)
    text = re.sub(r"\s*\[[^\]]*\]", "", text)
    text = re.split(r"\s--\s?[A-Z]", " " + text, maxsplit=1)[0]
    text = " ".join(text.replace("{", "").replace("}", "").split())
    return unicodedata.normalize("NFC", text)


def subject_of(labels: list[str]) -> str | None:
    """The one subject the labels' parts name, or None (none, or two subjects)."""
    hits = {s for lab in labels for part in _LABEL_PARTS.split(lab.strip())
            for s, pat in SUBJECTS.items() if part and pat.fullmatch(part)}
    return hits.pop() if len(hits) == 1 else None


def _header_split(lines: list[str]) -> int:
    """How many lines of an entry's first paragraph are its header (headword, pronunciation,
    part of speech, etymology, label): up to where brackets balance and no continuation
    follows."""
    depth, k = 0, 0
    while k < len(lines):
        line = lines[k]
        depth += sum(line.count(c) for c in "[(") - sum(line.count(c) for c in "])")
        k += 1
        nxt = lines[k].strip() if k < len(lines) else ""
        text = " ".join(x.strip() for x in lines[:k])
        more = nxt.startswith("[") or _LABEL.fullmatch(nxt) is not None
        if depth <= 0 and text.count("\\") % 2 == 0 and not more \
                and not text.endswith((",", ";", "pl.")):
            break
    return k


def _body(lines: list[str]) -> str:
    """A paragraph's text up to its source tag."""
    out = []
    for line in lines:
        if _SOURCE_TAG.match(line):
            break
        out.append(line)
    return " ".join(x.strip() for x in out)


def _headword(first_line: str) -> str:
    return clean(re.split(r"\s\\|,|\s\(", first_line, maxsplit=1)[0]).strip(" .")


def entry_definitions(paragraphs: list[list[str]]) -> list[tuple[str, list[str], str]]:
    """(headword, labels, raw text) of every sense and phrase of one entry; ``paragraphs``
    are its blank-line-separated line groups, the first starting with the headword."""
    first = paragraphs[0]
    cut = _header_split(first)
    head = " ".join(x.strip() for x in first[:cut])
    word = _headword(first[0])
    head_labels = _LABEL.findall(re.sub(r"\[[^\]]*\]", "", head.split("\\")[-1]))
    out = []
    for i, para in enumerate(paragraphs):
        lines = para[cut:] if i == 0 else para
        if not lines or (i > 0 and not re.match(r"^ {3}\S", lines[0])):
            continue  # a quotation (indented deeper) or nothing after the header
        body = _body(lines)
        if not body or body.startswith(("Note:", "Syn.", "Syn:")):
            continue
        phrase = _PHRASE.match(body)
        if phrase is not None:
            labels = [phrase.group(2)] if phrase.group(2) else []
            out.append((clean(phrase.group(1)), labels, body[phrase.end():]))
            continue
        sense = _SENSE.match(body)
        own = [sense.group(3)] if sense is not None and sense.group(3) else []
        text = body[sense.end():] if sense else body
        out += [(word, sub or own or head_labels, t) for sub, t in _sub_senses(text)]
    return out


def _sub_senses(text: str) -> list[tuple[list[str], str]]:
    """A sense's lettered parts (``(a) ... (b) ...``), each with its own label if it has one
    (``(b) (Equity) ...``); a sense without letters is one part."""
    if not text.startswith("(a)"):
        return [([], text)]
    out = []
    for part in re.split(r"(?:^|\s)\([a-z]\)\s+", text):
        label = _LABEL.match(part)
        out.append(([label.group(1)] if label else [], part[label.end():] if label else part))
    return [(lab, t) for lab, t in out if t.strip()]


def article_definitions(article: str) -> list[tuple[str, list[str], str]]:
    """(headword, labels, raw text) of every definition of one article."""
    paras = [p.splitlines() for p in re.split(r"\n\s*\n", article) if p.strip()]
    out: list[tuple[str, list[str], str]] = []
    entry: list[list[str]] = []
    for p in paras:
        if p[0][:1].strip() and "\\" in p[0]:  # column 0 with a pronunciation: a new entry
            if entry:
                out += entry_definitions(entry)
            entry = [p]
        elif entry:
            entry.append(p)
    if entry:
        out += entry_definitions(entry)
    return out


@functools.lru_cache(maxsize=4)
def _by_subject(index: Path, data: Path, stamp: tuple[int, int]) -> dict[str, list[Definition]]:
    out: dict[str, list[Definition]] = {s: [] for s in SUBJECTS}
    seen: set[tuple[str, str]] = set()
    for article in read_articles(index, data):
        for word, labels, raw in article_definitions(article):
            subject = subject_of(labels)
            text = clean(raw)
            if subject is None or _XREF.fullmatch(text) or "?" in text[:-1] \
                    or (word, text) in seen:
                continue
            seen.add((word, text))
            out[subject].append(Definition(word, tuple(labels), subject, text))
    return out


def definitions_by_subject(folder: Path) -> dict[str, list[Definition]]:
    """Subject -> its definitions, in dictionary order, from the dictd files in ``folder``
    (parsed once per process and file version). Raises ``FileNotFoundError`` when a file is
    missing and :class:`~records.FileFault` when one is damaged (module doc)."""
    index, data = folder / INDEX_FILE, folder / DICT_FILE
    stamp = (data.stat().st_mtime_ns, data.stat().st_size)
    index.stat()
    return _by_subject(index, data, stamp)


def check_dictionary(folder: Path) -> None:
    """The dictd files in ``folder`` are whole: the index parses, the data inflates and every
    span lies within it; a :class:`~records.FileFault` otherwise. Cheaper than reading the
    definitions (no article is parsed; about 1 s for GCIDE's 204k index lines and 40 MB),
    and done once per process and file version (``compare`` checks a config per model)."""
    index, data = folder / INDEX_FILE, folder / DICT_FILE
    _checked(index, data, (*_stamp(index), *_stamp(data)))


def _stamp(path: Path) -> tuple[int, int]:
    """(modification time in ns, size in bytes) of ``path``; (0, 0) if it cannot be stat'ed
    (the read that follows says why)."""
    try:
        st = path.stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4)
def _checked(index: Path, data: Path, stamp: tuple[int, ...]) -> None:
    dictd.check(index, data, PACKAGE)

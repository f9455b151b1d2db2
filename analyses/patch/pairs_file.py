"""Free prompt pairs for ``bayesgeom patch --pairs FILE``: JSON lines, one pair a line,
``{"clean": ..., "corrupt": ..., "answer": ..., "foil": ...}``, scored by the logit difference
logit[answer] − logit[foil] at each prompt's last token (the anchors' metric; no exact posterior
exists for free text). ``answer`` and ``foil`` are the continuations as the tokenizer sees them
(usually with a leading space, ``" Paris"``), each one token.

Read and checked without torch (:func:`read_pairs_file`), and, where the model's tokenizer is on
this machine already (an embedded model converted before, a local folder), tokenised before the
model loads (:func:`check_token_lengths`): a pair whose prompts differ in length cannot be
patched position by position, and is refused in one line naming it.

Example:
    >>> import tempfile, json, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "pairs.jsonl"
    >>> _ = p.write_text(json.dumps({"clean": "a b", "corrupt": "a c", "answer": " x",
    ...                              "foil": " y"}) + "\\n")
    >>> [r.answer for r in read_pairs_file(p)]
    [' x']
    >>> _ = p.write_text('{"clean": "a b"}\\n')
    >>> read_pairs_file(p)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValueError: ...pairs.jsonl line 1: missing "corrupt", "answer", "foil" ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the keys every line holds
KEYS = ("clean", "corrupt", "answer", "foil")
#: the most pairs a file may hold (each pair is patched at every cell)
MAX_PAIRS = 100_000


@dataclass(frozen=True)
class TextPair:
    """One free pair: the two prompts and the answer / foil continuations."""

    clean: str
    corrupt: str
    answer: str
    foil: str


def read_pairs_file(path: str | Path) -> list[TextPair]:
    """The pairs of a JSON-lines file (module doc); raises ``ValueError`` with one line naming
    the file and line for a missing file, bad JSON, a missing or empty key, ``answer`` equal
    to ``foil``, or no pair at all."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(f"--pairs {p}: no such file")
    out: list[TextPair] = []
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"--pairs {p}: cannot read it as UTF-8 text ({e})") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row: Any = json.loads(line)
        except ValueError:
            raise ValueError(f"--pairs {p} line {i}: not a JSON object") from None
        if not isinstance(row, dict):
            raise ValueError(f"--pairs {p} line {i}: not a JSON object")
        missing = [k for k in KEYS if k not in row]
        if missing:
            raise ValueError(f"--pairs {p} line {i}: missing "
                             f"{', '.join(json.dumps(k) for k in missing)} (each line needs "
                             f"{', '.join(KEYS)})")
        bad = [k for k in KEYS if not isinstance(row[k], str) or not row[k]]
        if bad:
            raise ValueError(f"--pairs {p} line {i}: {bad[0]!r} must be a non-empty string")
        if row["answer"] == row["foil"]:
            raise ValueError(f"--pairs {p} line {i}: answer and foil are the same "
                             f"({row['answer']!r}); the logit difference would be 0")
        out.append(TextPair(row["clean"], row["corrupt"], row["answer"], row["foil"]))
        if len(out) > MAX_PAIRS:
            raise ValueError(f"--pairs {p}: more than {MAX_PAIRS:,} pairs")
    if not out:
        raise ValueError(f"--pairs {p}: the file holds no pair (an empty pair set)")
    return out


def single_token(tokenizer: Any, text: str) -> int | None:
    """The one token id of continuation ``text`` (no special tokens), or None when it takes
    more or fewer than one."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    return int(ids[0]) if len(ids) == 1 else None


def token_problem(tokenizer: Any, pairs: list[TextPair]) -> str | None:
    """The first problem with ``pairs`` for ``tokenizer`` as one line (a pair whose prompts
    tokenise to different lengths, an answer or foil that is not one token), or None. The
    prompts are tokenised as :meth:`interp.InterpModel.encode` does (special tokens added)."""
    clean = tokenizer([p.clean for p in pairs], add_special_tokens=True)["input_ids"]
    corrupt = tokenizer([p.corrupt for p in pairs], add_special_tokens=True)["input_ids"]
    for i, (a, b) in enumerate(zip(clean, corrupt, strict=True)):
        if len(a) != len(b):
            return (f"pair {i}: the clean prompt has {len(a)} tokens, the corrupt one {len(b)}; "
                    "positions are patched index for index, so each pair needs equal lengths")
    if len({len(a) for a in clean}) == len(clean):
        return ("no two pairs have the same token length; the unrelated-source control "
                "patches from another pair's clean prompt of the same length, so give at least "
                "two pairs of equal length")
    for i, p in enumerate(pairs):
        for role in ("answer", "foil"):
            text = getattr(p, role)
            if single_token(tokenizer, text) is None:
                n = len(tokenizer.encode(text, add_special_tokens=False))
                return (f"pair {i}: {role} {text!r} is {n} tokens; the logit difference reads "
                        "one token (give the continuation as the tokenizer splits it, e.g. "
                        "with its leading space)")
    return None


def local_tokenizer_dir(spec: object) -> Path | None:
    """The folder of ``spec``'s tokenizer where it is on this machine without converting or
    downloading anything (an embedded model already converted, a local folder with a tokenizer
    file); None otherwise (then the pairs are checked once the model is loaded)."""
    from ...interp.embedded_catalogue import resolve

    folder: Path | None = None
    if spec is None or isinstance(spec, str):
        embedded = resolve(spec)
        if embedded is not None:
            from ...interp.embedded_model import cached_dir

            folder = cached_dir(embedded)
    if folder is None:
        folder = Path(str(spec)).expanduser()
    if folder.is_dir() and any((folder / f).is_file() for f in TOKENIZER_FILES):
        return folder
    return None


#: files whose presence says a folder holds a tokenizer
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def check_token_lengths(spec: object, pairs: list[TextPair]) -> str | None:
    """:func:`token_problem` with ``spec``'s tokenizer where it is on this machine (imports
    transformers then); None when it is not (checked after the model loads) or all is well."""
    where = local_tokenizer_dir(spec)
    if where is None:
        return None
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(where))
    except (OSError, ValueError):
        return None  # no usable tokenizer there: the model's load names the problem
    return token_problem(tok, pairs)

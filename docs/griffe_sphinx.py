"""Griffe extension for the API reference: the docstrings' Sphinx habits, read as Markdown.

``:func:`x``` and the other roles become the code span ``x`` (plain names: the docstrings name
objects relative to their folder, e.g. ``interp.sites``), and an ``Example:`` heading becomes
an ``Examples:`` section, so ``>>>`` lines render as code rather than as a paragraph. An
attribute without a docstring takes the ``#:`` comment lines just above it as one (Sphinx's
habit, which the packages use for their constants: ``#: the index of a sharded model``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const|ref):`~?([^`]+)`")
EXAMPLE = re.compile(r"(?m)^(\s*)Example:[ \t]*$")


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.is_attribute and obj.docstring is None and obj.lineno:
            comment = doc_comment(obj)
            if comment:
                obj.docstring = griffe.Docstring(comment, parent=obj)
        doc = obj.docstring
        if doc is not None:
            doc.value = EXAMPLE.sub(r"\1Examples:", ROLE.sub(r"`\1`", doc.value))


def doc_comment(obj: griffe.Object) -> str:
    """The ``#:`` comment lines right above ``obj``'s first line, without their ``#:``."""
    try:
        lines = obj.lines_collection[obj.filepath]
    except (KeyError, TypeError, ValueError):
        return ""
    out: list[str] = []
    i = (obj.lineno or 1) - 2
    while i >= 0 and lines[i].lstrip().startswith("#:"):
        out.insert(0, lines[i].lstrip()[2:].strip())
        i -= 1
    return "\n".join(out)

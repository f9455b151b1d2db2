"""Griffe extension for the API reference: the docstrings' Sphinx habits, read as Markdown.

``:func:`x``` and the other roles become the code span ``x`` (plain names: the docstrings name
objects relative to their folder, e.g. ``interp.sites``), and an ``Example:`` heading becomes
an ``Examples:`` section, so ``>>>`` lines render as code rather than as a paragraph.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const|ref):`~?([^`]+)`")
EXAMPLE = re.compile(r"(?m)^(\s*)Example:[ \t]*$")


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        doc = obj.docstring
        if doc is not None:
            doc.value = EXAMPLE.sub(r"\1Examples:", ROLE.sub(r"`\1`", doc.value))

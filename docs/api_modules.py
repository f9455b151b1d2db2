"""mkdocs hook for the API reference: every module of a package, listed from the source tree.

A page line ``<!-- modules: bayesgeom.probes -->`` becomes a "Modules" section with one entry
per module under ``probes/`` (subpackages included, sorted by dotted name), each its docstring:
``::: bayesgeom.probes.key_frame`` with ``members: false``. A module the page already renders
(a ``::: name`` line of its own) is left to that entry. A module named like a name its package
exports (``interp/capture.py`` and ``interp.capture``) shows that name as well: griffe gives a
package attribute of a submodule's name to the submodule, so the package's own entry lacks it.
A new module needs no edit here; tests/test_api_reference.py checks the built inventory.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- modules: (bayesgeom(?:\.\w+)+) -->$", re.M)
RENDERED = re.compile(r"^::: ([\w.]+)", re.M)


def package_exports(init: Path) -> set[str]:
    """The names a package ``__init__.py`` imports relatively (``from .x import a``), at its top
    level or inside ``if TYPE_CHECKING:``."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    nodes = [*body, *(n for b in body if isinstance(b, ast.If) for n in b.body)]
    return {a.asname or a.name for n in nodes if isinstance(n, ast.ImportFrom) and n.level
            for a in n.names}


def modules(package: str) -> list[str]:
    """Every module and subpackage under ``package`` (``bayesgeom.probes``), dotted, sorted;
    none whose name starts with ``_``."""
    folder = ROOT.joinpath(*package.split(".")[1:])
    out = []
    for path in folder.rglob("*.py"):
        parts = path.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and not any(p.startswith("_") for p in parts):
            out.append(".".join((package, *parts)))
    return sorted(out)


def entry(name: str) -> str:
    """The ``:::`` block of module ``name``."""
    path = ROOT.joinpath(*name.split(".")[1:])
    stem = name.rpartition(".")[2]
    init = path.parent / "__init__.py"
    shadowed = not (path / "__init__.py").is_file() and stem in package_exports(init)
    members = f"[{stem}]" if shadowed else "false"
    return (f"::: {name}\n    options:\n      members: {members}\n      heading_level: 3\n"
            f"      show_root_full_path: true\n")


def section(package: str, page: str) -> str:
    """The "Modules" section of ``package`` for a page whose markdown is ``page``."""
    done = set(RENDERED.findall(page))
    blocks = [entry(m) for m in modules(package) if m not in done]
    return "## Modules\n\n" + "\n".join(blocks)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda m: section(m.group(1), markdown), markdown)

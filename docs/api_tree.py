"""MkDocs hook: lay out ``bayesgeom`` for the API reference as it is installed.

The distribution maps ``bayesgeom.<folder>`` onto the repository's top-level folders
(``setup.py``); griffe, which reads the sources for mkdocstrings, looks for packages on disk.
This hook builds ``build/docs-api/bayesgeom/`` from links to those folders before the build,
and ``mkdocs.yml`` points mkdocstrings there.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("records", "infotheory", "interp", "probes", "windtunnel", "analyses")
TREE = ROOT / "build" / "docs-api" / "bayesgeom"


def lay_out() -> None:
    TREE.mkdir(parents=True, exist_ok=True)
    links = {"__init__.py": ROOT / "bayesgeom" / "__init__.py",
             **{f: ROOT / f for f in FOLDERS}}
    for name, target in links.items():
        link = TREE / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def on_config(config: object, **_: object) -> object:
    lay_out()
    return config


if __name__ == "__main__":
    # `make docs` lays the tree out before mkdocs starts: mkdocstrings reads its search paths
    # when it is configured, which is before this hook runs on a fresh clone
    lay_out()

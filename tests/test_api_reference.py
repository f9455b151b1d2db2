"""The API reference shows the API: the built site's inventory (``objects.inv``, which
mkdocstrings writes) has an entry for every façade name (``bg.capture`` ...), every name a
package exports and every module of every package.

The site is built once, into a temporary folder (``mkdocs build``, about 15 s on 2 cores); the
test needs the docs extras, which ``make test`` installs (so CI, whose ``make test`` runs before
``make docs``, runs it). Without them it is skipped with that reason.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import bayesgeom
from bayesgeom import SUBPACKAGES

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(\S+)\s+(\S+)\s+(-?\d+)\s+(\S*)\s+(.*)$")
#: packages whose ``__init__`` names are their API (analyses' are its experiments, each a folder)
EXPORTING = tuple(p for p in SUBPACKAGES if p != "analyses")

Inventory = dict[str, tuple[str, int]]  # name -> (role such as "py:function", priority)


def read_inventory(data: bytes) -> Inventory:
    """Name -> (role, priority) of a Sphinx-style ``objects.inv`` (version 2: four header lines,
    then zlib-compressed ``name role priority uri display-name`` lines)."""
    header = data.split(b"\n", 4)
    assert header[0] == b"# Sphinx inventory version 2", header[0]
    out: Inventory = {}
    for line in zlib.decompress(header[4]).decode("utf-8").splitlines():
        m = LINE.match(line)
        if m:
            name, role, priority = m.group(1), m.group(2), int(m.group(3))
            if name not in out or priority < out[name][1]:
                out[name] = (role, priority)
    return out


def documented(inv: Inventory, name: str, module: bool = False) -> bool:
    """``name`` has its own entry (priority 1, not a cross-reference to another page's), a
    module entry when ``module``, else an object entry."""
    role, priority = inv.get(name, ("", -1))
    return priority == 1 and (role == "py:module") == module


def relative_imports(init: Path, package: str, guarded: bool = False) -> dict[str, str]:
    """Name -> dotted module it comes from, for every relative import of a package's
    ``__init__`` (top level or inside ``if TYPE_CHECKING:``; ``guarded``: inside it only)."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    out = {}
    top = [] if guarded else body
    for node in [*top, *(n for b in body if isinstance(b, ast.If) for n in b.body)]:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            where = ".".join(base + ([node.module] if node.module else []))
            out |= {a.asname or a.name: f"{where}.{a.name}" for a in node.names}
    return out


#: the façade's names beside its subpackages (``bg.capture``, ``bg.train`` ...)
FACADE = [n for n in bayesgeom.__all__ if n not in bayesgeom.SUBPACKAGES and n != "__version__"]


def missing_facade(inv: Inventory) -> list[str]:
    return [f"bayesgeom.{n}" for n in FACADE if not documented(inv, f"bayesgeom.{n}")]


def public_modules() -> list[str]:
    """Every module and subpackage of every subpackage (no part starting with ``_``)."""
    out = []
    for pkg in SUBPACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if not any(p.startswith("_") for p in parts):
                out.append(".".join(("bayesgeom", *parts)))
    return sorted(out)


def missing_modules(inv: Inventory, modules: list[str]) -> list[str]:
    return [m for m in modules if not documented(inv, m, module=True)]


def missing_exports(inv: Inventory, package: str, names: list[str],
                    origin: dict[str, str]) -> list[str]:
    """The names of ``package.__all__`` without an entry as ``package.name`` or, where griffe
    reads ``package.name`` as a submodule of that name, as ``origin-module.name``."""
    return [f"{package}.{n}" for n in names
            if not (documented(inv, f"{package}.{n}") or documented(inv, origin.get(n, "")))]


@pytest.fixture(scope="session")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("the docs extras are not installed: make docs (or make test) installs them")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--no-strict", "-q",
                           "-d", str(site)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return read_inventory((site / "objects.inv").read_bytes())


def test_every_facade_name_has_an_entry(inventory: Inventory) -> None:
    assert not missing_facade(inventory)


def test_every_module_has_an_entry(inventory: Inventory) -> None:
    modules = public_modules()
    assert "bayesgeom.probes.key_frame" in modules and "bayesgeom.analyses.steer.run" in modules
    assert not missing_modules(inventory, modules)


@pytest.mark.parametrize("pkg", EXPORTING)
def test_every_exported_name_has_an_entry(inventory: Inventory, pkg: str) -> None:
    package = f"bayesgeom.{pkg}"
    names = list(importlib.import_module(package).__all__)
    origin = relative_imports(ROOT / pkg / "__init__.py", package)
    assert not missing_exports(inventory, package, names, origin)


def test_the_checks_catch_what_is_missing() -> None:
    """Each check fails on an inventory lacking an entry: a façade name, a module, an export
    (and accepts a shadowed export's entry under its module)."""
    inv: Inventory = {f"bayesgeom.{n}": ("py:function", 1) for n in FACADE}
    inv |= {"bayesgeom.probes.key_frame": ("py:module", 1),
            "bayesgeom.interp.capture.capture": ("py:function", 1),
            "bayesgeom.probes.score_frame": ("py:function", 2)}
    assert missing_facade(inv) == []
    del inv["bayesgeom.capture"]
    assert missing_facade(inv) == ["bayesgeom.capture"]
    assert missing_modules(inv, ["bayesgeom.probes.key_frame", "bayesgeom.probes.cka"]) == [
        "bayesgeom.probes.cka"]
    origin = {"capture": "bayesgeom.interp.capture.capture"}
    assert missing_exports(inv, "bayesgeom.interp", ["capture"], origin) == []
    assert missing_exports(inv, "bayesgeom.probes", ["score_frame"], {}) == [
        "bayesgeom.probes.score_frame"]  # a cross-reference (priority 2) is not an entry


def test_the_facade_type_checking_block_is_its_names() -> None:
    """``bayesgeom/__init__.py`` declares each façade name once, as an ``if TYPE_CHECKING:``
    import from its defining module (what griffe, type checkers and editors read, and what
    ``records.lazy`` imports on first use); ``__all__`` lists the same names."""
    declared = relative_imports(ROOT / "bayesgeom" / "__init__.py", "bayesgeom", guarded=True)
    assert sorted(declared) == sorted(n for n in bayesgeom.__all__ if n != "__version__")
    assert len(FACADE) >= 23
    for name, where in declared.items():
        module, _, attr = where.rpartition(".")
        assert getattr(importlib.import_module(module), attr) is getattr(bayesgeom, name), name


@pytest.mark.parametrize("pkg", EXPORTING)
def test_all_lists_what_the_package_imports(pkg: str) -> None:
    """A name imported in a package's ``__init__`` but left out of ``__all__`` is missing from
    its page (griffe renders ``__all__``); one in ``__all__`` only does not import."""
    package = f"bayesgeom.{pkg}"
    names = set(relative_imports(ROOT / pkg / "__init__.py", package))
    exported = set(importlib.import_module(package).__all__)
    assert exported == names - {"lazy_exports"}

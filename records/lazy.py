"""Packages whose public names are imported on first use (PEP 562), so that importing one of
their light submodules (a config, a list of names) does not import torch. Every package of
bayesgeom that exports names lazily does it this one way: the façade (``bayesgeom``),
``records``, ``interp``, ``probes``, ``windtunnel`` and each experiment folder of ``analyses``.

A package lists its public names as ordinary relative imports inside ``if TYPE_CHECKING:``
(type checkers and the API reference read them there) and sets
``__getattr__ = lazy_exports(__name__)``; :func:`exports` reads those imports from the package's
source, so each name is declared once (``__all__ = [*exports(__name__)]`` where the package
lists no others). ``from package import name`` and ``package.name`` then import ``name``'s
submodule when first asked for (``from . import sub`` exports the subpackage itself);
``whole=True`` imports every listed submodule at the first such request (a package whose
submodules register themselves, like the wind tunnels' task registry). This module imports
nothing but the standard library, so that any package, the bottom one included, can use it.
A name that is no export but one of the package's submodules is that submodule, imported on
first use (:func:`submodule`), so every module is reachable from ``import bayesgeom as bg`` by
attributes alone (``bg.interp.attention_taps``).

Example:
    >>> from bayesgeom import interp
    >>> exports(interp.__name__)["load"], exports(interp.__name__)["capture"]
    (('.loading', 'load'), ('.capture', 'capture'))
    >>> import bayesgeom  # the façade exports its subpackages: ``from . import interp``
    >>> exports("bayesgeom")["interp"], bayesgeom.interp is interp, callable(bayesgeom.capture)
    (('.', 'interp'), True, True)
    >>> interp.sites.site_name("attn.v", 3)  # a submodule, imported when first asked for
    'attn.3.v'
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


def exports(package: str) -> dict[str, tuple[str, str]]:
    """Name -> (relative module such as ``".sites"`` or ``"..infotheory"``, its name there) of
    every name that the ``if TYPE_CHECKING:`` blocks of ``package``'s ``__init__`` import."""
    source = Path(sys.modules[package].__file__ or "").read_text(encoding="utf-8")
    names: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                     "typing.TYPE_CHECKING"):
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level:
                    for alias in imp.names:
                        where = "." * imp.level + (imp.module or "")
                        names[alias.asname or alias.name] = (where, alias.name)
    return names


class LazyPackage(types.ModuleType):
    """A package module whose exported names win over its submodules of the same name: the
    import system binds ``package.capture`` to the submodule when it is first imported, which
    would hide the exported ``capture`` function that the eager ``__init__`` used to bind."""

    __lazy_names__: dict[str, tuple[str, str]]

    def __setattr__(self, name: str, value: Any) -> None:
        export = self.__dict__.get("__lazy_names__", {}).get(name)
        if (isinstance(value, types.ModuleType) and export not in (None, (".", name))
                and value.__name__ == f"{self.__name__}.{name}"):
            return  # a submodule named like an export: the export is what ``package.name`` is
        super().__setattr__(name, value)


def submodule(package: str, name: str) -> types.ModuleType:
    """The submodule ``package.name``, imported (a module ``__getattr__``'s last resort); an
    ``AttributeError`` when there is none."""
    if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return importlib.import_module(f"{package}.{name}")


def submodules(package: str) -> Callable[[str], types.ModuleType]:
    """A module ``__getattr__`` for a package with no lazy exports: each submodule imported when
    it is first asked for (:func:`submodule`)."""
    return lambda name: submodule(package, name)


def lazy_exports(package: str, whole: bool = False) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` (its ``__name__``) importing each of its
    :func:`exports` on first use (``whole``: all of them at the first use), and any other
    submodule by its name (:func:`submodule`)."""
    module = sys.modules[package]  # the package being initialised
    names = exports(package)
    module.__class__ = LazyPackage
    vars(module)["__lazy_names__"] = names

    def load(name: str) -> Any:
        where, original = names[name]
        if where == ".":  # ``from . import sub``: the subpackage itself
            value = importlib.import_module(f".{original}", package)
        else:
            value = getattr(importlib.import_module(where, package), original)
        setattr(module, name, value)
        return value

    def __getattr__(name: str) -> Any:
        if name not in names:
            return submodule(package, name)
        if whole:
            for other in names:
                if other not in vars(module):
                    load(other)
            return vars(module)[name]
        return load(name)

    return __getattr__

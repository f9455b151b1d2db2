"""Every public function and class of every ``probes`` module is exported from ``probes`` (the
step a new probe module most often forgets), and importing ``probes`` stays light."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from bayesgeom import probes
from bayesgeom.records.lazy import exports

FOLDER = Path(__file__).resolve().parents[2] / "probes"
MODULES = sorted(p for p in FOLDER.glob("*.py") if p.name != "__init__.py")


def public_definitions(source: str) -> list[str]:
    """The functions and classes a module's source defines at its top level, ``_`` ones out."""
    return [n.name for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and not n.name.startswith("_")]


def unexported(module: str, source: str) -> list[str]:
    """The public definitions of ``probes.<module>`` that ``probes`` does not export from it."""
    names = exports(probes.__name__)
    return [n for n in public_definitions(source)
            if names.get(n) != (f".{module}", n) or n not in probes.__all__]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_every_public_definition_is_exported(path: Path) -> None:
    missing = unexported(path.stem, path.read_text(encoding="utf-8"))
    assert not missing, (f"probes/{path.name} defines {missing}, not exported from "
                         "probes/__init__.py (its TYPE_CHECKING imports and __all__)")
    module = importlib.import_module(f"bayesgeom.probes.{path.stem}")
    for name in public_definitions(path.read_text(encoding="utf-8")):
        assert getattr(probes, name) is getattr(module, name)


def test_the_check_catches_a_module_left_out() -> None:
    source = "def score_frame(k): ...\ndef a_new_probe(x): ...\ndef _helper(): ...\n"
    assert unexported("key_frame", source) == ["a_new_probe"]
    assert unexported("a_new_module", "class Probe:\n    pass\n") == ["Probe"]


def test_all_lists_exactly_the_exports() -> None:
    assert sorted(probes.__all__) == sorted(exports(probes.__name__))
    assert len(probes.__all__) == len(set(probes.__all__))


def test_importing_probes_imports_no_heavy_library() -> None:
    code = ("import sys, bayesgeom.probes; print(sorted(m for m in ('torch', 'sklearn', 'scipy',"
            " 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""Every ``Example:`` block in the packages runs and shows what it says (doctest)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from bayesgeom import SUBPACKAGES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bayesgeom", *SUBPACKAGES)
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                 if ">>>" in p.read_text())


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = "bayesgeom" if name == "bayesgeom" else f"bayesgeom.{name}"
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_the_public_api_has_examples():
    assert {"bayesgeom", "records.reuse", "records.typed", "infotheory.measures", "interp.edits",
            "analyses.kit.options", "analyses.kit.models",
            "windtunnel.posterior_prompts"} <= set(MODULES)

"""docs/development.md's "Adding an experiment", the steps most often forgotten: the folder's name
in ``analyses/registry.py``'s ``FOLDERS`` (else the command does not exist), the command on a
documentation page, and its run module on the API page (``docs/api/analyses.md``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bayesgeom.analyses.kit.experiment import Later
from bayesgeom.analyses.registry import FOLDERS, experiments

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "api" / "analyses.md"


def declares_experiments(init: Path) -> bool:
    """Whether a package ``__init__`` assigns ``EXPERIMENTS`` at its top level."""
    return any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "EXPERIMENTS"
                                                 for t in n.targets)
               for n in ast.parse(init.read_text(encoding="utf-8")).body)


def experiment_folders(root: Path) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py") if declares_experiments(p)}


def command(e) -> str:
    return " ".join(x for x in ("bayesgeom", e.group, e.name) if x)


def prose_pages() -> str:
    """Every documentation page but the generated API reference and ``_*.md`` drafts."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md"))
                     if "api" not in p.relative_to(ROOT / "docs").parts
                     and not p.name.startswith("_"))


EXPERIMENTS = experiments()


def test_every_experiment_folder_is_registered() -> None:
    found = experiment_folders(ROOT / "analyses")
    assert found - set(FOLDERS) == set(), "add these folders to analyses/registry.py FOLDERS"
    assert set(FOLDERS) - found == set(), "FOLDERS names folders without EXPERIMENTS"


def test_the_folder_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "newexp").mkdir()
    (tmp_path / "newexp" / "__init__.py").write_text("EXPERIMENTS = ()\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("X = 1\n")
    assert experiment_folders(tmp_path) == {"newexp"}


@pytest.mark.parametrize("e", EXPERIMENTS, ids=command)
def test_every_command_has_a_documentation_page(e) -> None:
    assert re.search(rf"`{re.escape(command(e))}[` ]", prose_pages()), (
        f"`{command(e)}` appears on no page of docs/ (say what it does and link its results)")


@pytest.mark.parametrize("e", EXPERIMENTS, ids=command)
def test_every_run_function_is_on_the_api_page(e) -> None:
    assert isinstance(e.run, Later), "a registered run function is named lazily"
    rendered = set(re.findall(r"^::: ([\w.]+)", API_PAGE.read_text(encoding="utf-8"), re.M))
    assert e.run.module in rendered, f"add '::: {e.run.module}' to docs/api/analyses.md"

"""The package import flow, read from the source (ast): bottom packages (records, infotheory)
import no other bayesgeom package; interp, probes and windtunnel import none of each other;
analyses sits on top; no module imports itself round a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bayesgeom import SUBPACKAGES

ROOT = Path(__file__).resolve().parent.parent
BOTTOM = {"records", "infotheory"}
SIDE = {"interp", "probes", "windtunnel"}
#: the façade (``bayesgeom/``: lazy names over every subpackage) sits on top with analyses
TOP = {"analyses", "bayesgeom"}
PACKAGES = BOTTOM | SIDE | TOP


def test_the_layers_name_every_subpackage():
    assert BOTTOM | SIDE | {"analyses"} == set(SUBPACKAGES)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports (function-level imports included, and the names a package
    imports lazily under ``if TYPE_CHECKING:``), spelled without the ``bayesgeom.`` prefix;
    ``from PKG import name`` counts as ``PKG.name`` where that is a module (a submodule
    imported by name), else as ``PKG``."""
    out = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("bayesgeom.") for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # the façade's ``.interp`` is the top-level ``interp``, as ``bayesgeom.interp`` is
            module = module.removeprefix("bayesgeom").removeprefix(".")
            for a in node.names:
                sub = f"{module}.{a.name}" if module else a.name
                out.add(sub if (ROOT / sub.replace(".", "/")).is_dir()
                         or (ROOT / (sub.replace(".", "/") + ".py")).is_file() else module)
    return out


MODULES = _modules()
EDGES = {m: {i for i in _imports(m, p) if i.split(".")[0] in PACKAGES} for m, p in
         MODULES.items()}


def _allowed(src: str, dst: str) -> bool:
    if src == dst:
        return True
    if src in BOTTOM:
        return False
    if src in SIDE:
        return dst in BOTTOM
    return True  # analyses may import every other package


def test_no_arrow_points_up_or_sideways():
    bad = sorted(f"{m} -> {d}" for m, ds in EDGES.items() for d in ds
                 if not _allowed(m.split(".")[0], d.split(".")[0]))
    assert not bad, "imports against the flow: " + "; ".join(bad)


def test_no_module_cycle():
    graph = {m: {d for d in ds if d in MODULES} for m, ds in EDGES.items()}
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(" -> ".join([*stack[stack.index(d):], d]))
            elif d not in state:
                visit(d, [*stack, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "module cycles: " + "; ".join(cycles)


def test_the_checker_catches_what_it_should():
    """Both checks can fail: an upward arrow and a cycle are flagged on a made-up graph."""
    assert not _allowed("windtunnel", "probes") and not _allowed("records", "interp")
    assert _allowed("analyses", "interp") and _allowed("probes", "infotheory")
    assert "analyses.cli" in MODULES and "records.reuse" in MODULES


@pytest.mark.parametrize("pkg", sorted(TOP))
def test_experiment_modules_stay_small(pkg):
    long = {m: n for m, p in MODULES.items() if m.startswith(pkg + ".")
            and (n := len(p.read_text().splitlines())) > 360}
    assert not long, f"modules over ~350 lines: {long}"

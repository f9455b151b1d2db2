"""No product module branches on a wind-tunnel arch's name or a saved model's ``model_type``
(``if arch == "mamba2"``, ``cfg.get("model_type") == "gpt2"``): what differs between archs is
declared in each arch's :class:`~windtunnel.arch_spec.ArchSpec` and asked of it
(:mod:`windtunnel.arch_registry`). Read from the source (ast), as test_import_flow.py does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the product trees searched (the façade ``bayesgeom/`` holds only lazy names)
TREES = ("windtunnel", "interp", "probes", "analyses", "benchmarks", "examples")
#: names whose comparison with a string literal is a branch on an arch
ARCH_WORDS = {"arch", "archs", "model_type"}


def _names_an_arch(node: ast.AST) -> bool:
    """The expression reads an arch name or a model type: ``arch``, ``cfg.arch``,
    ``cfg.get("model_type")``, ``getattr(c, "model_type", None)``."""
    return any((isinstance(n, ast.Name) and n.id in ARCH_WORDS)
               or (isinstance(n, ast.Attribute) and n.attr in ARCH_WORDS)
               or (isinstance(n, ast.Constant) and n.value == "model_type")
               for n in ast.walk(node))


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_is_literal(e) for e in node.elts)
    return False


def arch_branches(source: str) -> list[str]:
    """``line: comparison`` for every comparison of an arch name or model type with string
    literals in ``source``, and every ``match`` on one."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(_is_literal(s) for s in sides) and \
                    any(_names_an_arch(s) for s in sides if not _is_literal(s)):
                out.append(f"{n.lineno}: {ast.unparse(n)}")
        elif isinstance(n, ast.Match) and _names_an_arch(n.subject):
            out.append(f"{n.lineno}: match {ast.unparse(n.subject)}")
    return out


@pytest.mark.parametrize("source", [
    'if arch == "mamba2":\n    pass',
    'x = 1 if cfg.arch in ("lstm", "mamba") else 0',
    'kw = {} if cfg.get("model_type") != "gpt2" else {"a": 1}',
    'ok = getattr(getattr(m, "config", None), "model_type", None) in ("mamba", "mamba2")',
    'match spec.arch:\n    case "lstm":\n        pass',
])
def test_the_search_finds_each_form_of_branch(source):
    assert arch_branches(source)


def test_the_search_leaves_lookups_alone():
    assert not arch_branches('spec = ARCHS[cfg.arch]\nok = model_type in fam.model_types\n'
                             'if cfg.arch not in attention_archs():\n    pass')


def test_no_product_module_branches_on_an_arch():
    found = [f"{p.relative_to(ROOT)}:{b}" for tree in TREES
             for p in sorted((ROOT / tree).rglob("*.py")) for b in arch_branches(p.read_text())]
    assert not found, ("branches on an arch name or model type (declare the difference in the "
                       "arch's ArchSpec and ask windtunnel.arch_registry): " + "; ".join(found))

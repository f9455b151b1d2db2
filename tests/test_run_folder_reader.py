"""A wind-tunnel run folder has one reader, :mod:`windtunnel.runs` (``read_run``, ``find_run``,
``load_run``): no module under ``analyses/`` names a run folder's files itself. Read from the
source (ast): a string literal (docstrings aside; f-string pieces included) naming ``run.json``
or ``metrics.parquet``, or using ``checkpoints`` as a path component (``"checkpoints/..."``,
``run / "checkpoints"``, ``Path(..., "checkpoints")``), is a second reader."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ANALYSES = sorted((ROOT / "analyses").rglob("*.py"))
#: file names of a run folder, anywhere in a literal
FILES = re.compile(r"(?<![\w.-])(run\.json|metrics\.parquet)(?![\w-])")
#: ``checkpoints`` beside a path separator
FOLDER = re.compile(r"(?<![\w.-])checkpoints(?=/)|(?<=/)checkpoints(?![\w.-])")
CHECKPOINTS = "checkpoints"


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _is_checkpoints(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == CHECKPOINTS


def _joined(node: ast.AST) -> bool:
    """``x / "checkpoints"``, ``"checkpoints" / x`` or ``Path(..., "checkpoints")``-like calls
    (``Path``, ``joinpath``, ``os.path.join``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _is_checkpoints(node.left) or _is_checkpoints(node.right)
    if isinstance(node, ast.Call):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name in ("Path", "PurePath", "joinpath", "join") and any(
            _is_checkpoints(a) for a in node.args)
    return False


def offences(source: str) -> list[str]:
    """``line: literal`` for every place in ``source`` that names a run folder's files."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if _joined(node):
            out.append(f"{node.lineno}: {CHECKPOINTS!r} joined into a path")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docs
              and (FILES.search(node.value) or FOLDER.search(node.value))):
            out.append(f"{node.lineno}: {node.value!r}")
    return out


@pytest.mark.parametrize("source, bad", [
    ('p = run / "run.json"', True),
    ('x = read_table(Path(run) / "metrics.parquet")', True),
    ('msg = f"{run} holds no log (metrics.parquet)"', True),
    ('ds = sorted((run / "checkpoints").glob("*-*"))', True),
    ('ds = Path(run, "checkpoints")', True),
    ('e = f"{run} has no dense checkpoints (checkpoints/dense-*)"', True),
    ('"""Reads ``run.json`` and ``checkpoints/dense-N``."""', False),
    ('def f():\n    """the run\'s metrics.parquet"""', False),
    ('bar = tqdm(desc="checkpoints")', False),
    ('p = out / "summary.json"; q = out / "my_run.json.bak"', False),
    ('e = f"{run} has no dense checkpoints ({CHECKPOINTS}/{DENSE}-*)"', False),
])
def test_the_scanner_tells_a_reader_from_prose(source, bad):
    assert bool(offences(source)) is bad


def test_only_windtunnel_reads_a_run_folder():
    assert ANALYSES, "analyses/ not found"
    found = {str(p.relative_to(ROOT)): got for p in ANALYSES
             if (got := offences(p.read_text(encoding="utf-8")))}
    assert not found, ("these modules read a wind-tunnel run folder's files themselves; read "
                       f"it with windtunnel.runs.read_run / find_run instead: {found}")

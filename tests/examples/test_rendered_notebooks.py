"""The site's notebook pages (``docs/notebooks/``) are the notebooks of ``examples/`` as last
executed by ``docs/render_notebooks.py``: the same code, every output kept, no error, and every
plotly figure also a PNG (so it shows on a code host and in exported HTML, not only where
plotly's JavaScript runs)."""

from __future__ import annotations

import itertools
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.ipynb"))
PLOTLY = "application/vnd.plotly.v1+json"
STAMP = "bayesgeom-rendered"


def _code(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_rendered_copy_runs_the_same_code(path: Path) -> None:
    rendered = ROOT / "docs" / "notebooks" / path.name
    assert rendered.is_file() and not rendered.is_symlink(), \
        f"{rendered} missing: run docs/render_notebooks.py {path.stem[:2]}"
    nb = nbformat.read(rendered, as_version=4)
    assert _code(nb) == _code(nbformat.read(path, as_version=4)), \
        f"{path.name} changed since it was rendered: run docs/render_notebooks.py {path.stem[:2]}"
    assert nb.cells[0].metadata.get(STAMP) and "commit" in nb.cells[0].source


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_rendered_copy_shows_its_outputs_and_figures(path: Path) -> None:
    nb = nbformat.read(ROOT / "docs" / "notebooks" / path.name, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs, "rendered without outputs"
    assert not [o for o in outputs if o.output_type == "error"]
    for o in outputs:
        data = o.get("data", {})
        if PLOTLY in data:
            assert "image/png" in data, "a plotly figure without its static PNG"
    stderr = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert "Warning" not in stderr, stderr[:500]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_progress_bars_are_stored_as_a_terminal_shows_them(path: Path) -> None:
    """One stream output per run of stdout or stderr, each line its final state (no carriage
    returns): a bar's thousands of redraws are not stored (docs/render_notebooks.py's
    collapse_streams)."""
    nb = nbformat.read(ROOT / "docs" / "notebooks" / path.name, as_version=4)
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        streams = [(i, o) for i, o in enumerate(cell.outputs) if o.output_type == "stream"]
        assert all("\r" not in o.text for _, o in streams)
        assert not any(j == i + 1 and a.name == b.name
                       for (i, a), (j, b) in itertools.pairwise(streams))


def test_collapse_streams_merges_redraws_into_their_last_state() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    from render_notebooks import collapse_streams

    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="\rbar 10%"),
                    nbformat.v4.new_output("stream", name="stderr", text="\rbar 100%\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="done\n")]
    nb = collapse_streams(nbformat.v4.new_notebook(cells=[cell]))
    assert [(o.name, o.text) for o in nb.cells[0].outputs] == [("stderr", "bar 100%\n"),
                                                               ("stdout", "done\n")]

"""The notebooks in examples/ run top to bottom (quick configuration, BAYESGEOM_QUICK=1) and
are stored with their outputs stripped."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def test_there_are_the_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["01_load_and_probe.ipynb",
                                           "02_small_vs_large.ipynb",
                                           "03_causal_steering.ipynb",
                                           "04_training_dynamics.ipynb",
                                           "05_verification_tools.ipynb",
                                           "06_patching.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch, scaled):
    monkeypatch.setenv("BAYESGEOM_QUICK", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=int(scaled(600)), kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=dict(os.environ))  # raises CellExecutionError with the cell's traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors

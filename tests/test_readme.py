"""The README's Python blocks run as they stand: offline, on the embedded SmolLM2, each in a
fresh interpreter inside an empty folder (their ``runs/...`` outputs land there) that sees the
repository's ``tunnels/`` as a user in the repository's root does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)


def test_the_readme_has_its_three_quick_starts():
    assert len(BLOCKS) == 3
    # each user story fits in 15 lines of Python
    assert all(len(b.strip().splitlines()) <= 15 for b in BLOCKS)


def test_the_readme_fits_on_a_few_screens():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("code", BLOCKS, ids=lambda b: f"block-{BLOCKS.index(b) + 1}")
def test_readme_block_runs(code, tmp_path, scaled):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    (tmp_path / "tunnels").symlink_to(ROOT / "tunnels")  # the committed wind tunnels
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=scaled(600))
    assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.stdout.strip(), "each quick start prints what it found"

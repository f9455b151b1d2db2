"""The quick starts run as they stand: the README's Python blocks, then the Python quick start's
(``docs/python.md``) three stories, each in a fresh interpreter, offline, on the embedded
SmolLM2 and tiny sizes.

They share one folder, as a user who follows the README and then the page in one checkout
does: it sees the repository's ``tunnels/`` (linked), and the page's comparison and steering
runs -- the README's own, with the same settings and ``out`` -- find them finished and reuse
them (the kit's rerun path; a settings change would rerun them). The README's blocks run
first: the tests of this file run in order, on one worker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGE = ROOT / "docs" / "python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
BLOCKS = BLOCK.findall(README.read_text(encoding="utf-8"))


def stories(text: str) -> dict[str, str]:
    """Story heading (``## (a) ...``) -> its Python blocks joined, in page order."""
    out = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        code = "\n".join(BLOCK.findall(body))
        if code:
            out[title.strip()] = code
    return out


STORIES = stories(PAGE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's empty folder, seeing the committed wind tunnels."""
    path = tmp_path_factory.mktemp("quick-starts")
    (path / "tunnels").symlink_to(ROOT / "tunnels")
    return path


def run_code(code: str, folder: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done


def test_the_readme_has_its_three_quick_starts():
    assert len(BLOCKS) == 3
    # each user story fits in 15 lines of Python
    assert all(len(b.strip().splitlines()) <= 15 for b in BLOCKS)


def test_the_readme_fits_on_a_few_screens():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("code", BLOCKS, ids=lambda b: f"block-{BLOCKS.index(b) + 1}")
def test_readme_block_runs(code, folder, scaled):
    done = run_code(code, folder, scaled(600))
    assert done.stdout.strip(), "each quick start prints what it found"


def test_the_page_tells_the_three_stories_in_bg_names() -> None:
    assert [t[:3] for t in STORIES] == ["(a)", "(b)", "(c)"]
    code = "\n".join(STORIES.values())
    for call in ("bg.open_model(", "bg.capture(", "bg.fit_entropy_axis(", "bg.train(",
                 "bg.run_compare(", "bg.run_steer(", "bg.intervene("):
        assert call in code, call
    imports = [ln for ln in code.splitlines() if re.match(r"\s*(import|from) ", ln)]
    assert set(imports) == {"import bayesgeom as bg"}, imports


def test_the_page_is_in_the_site_navigation() -> None:
    assert "python.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_stories_split_by_heading() -> None:
    text = "# t\n## (a) one\n```python\nx = 1\n```\nprose\n```python\nprint(x)\n```\n" \
           "## (b) two\nno code\n"
    assert stories(text) == {"(a) one": "x = 1\n\nprint(x)\n"}


@pytest.mark.parametrize("title", STORIES, ids=lambda t: t[1])
def test_story_runs(title: str, folder: Path, scaled) -> None:
    done = run_code(STORIES[title], folder, scaled(900))
    assert len(done.stdout.strip().splitlines()) >= 3, "each story prints what it found"

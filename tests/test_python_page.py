"""The Python quick start (``docs/python.md``) runs as it stands: the Python blocks of each of its
three stories, one after another in a fresh interpreter, offline, inside an empty folder that
sees the repository's ``tunnels/`` (as the README's quick starts do, tests/test_readme.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


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
def test_story_runs(title: str, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_DISABLE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    (tmp_path / "tunnels").symlink_to(ROOT / "tunnels")  # the committed wind tunnels
    code = STORIES[title]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert len(done.stdout.strip().splitlines()) >= 3, "each story prints what it found"

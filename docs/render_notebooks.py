"""Execute the notebooks of ``examples/`` and store the executed copies, outputs and figures
included, as the documentation site's notebook pages (``docs/notebooks/``).

``examples/`` keeps the notebooks without outputs (what a user opens and the test suite runs);
``docs/notebooks/`` holds what they printed and drew when this script last ran them, with
every plotly figure also stored as a PNG (``image/png`` beside the plotly JSON), so the figures
show on the site, on a code host and in exported HTML. A first cell states the date, the
commit, the sizes (full, or ``--quick``) and the wall time of that execution;
``tests/examples/test_rendered_notebooks.py`` fails when a notebook's code no longer matches
its rendered copy.

The PNGs are drawn by kaleido with the machine's Chromium (``pip install -e ".[docs]"``).

Usage::

    .venv/bin/python docs/render_notebooks.py            # every notebook, full sizes
    .venv/bin/python docs/render_notebooks.py 03 --quick # one notebook, quick sizes
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RENDERED = ROOT / "docs" / "notebooks"
#: the first cell's marker, so a re-render replaces it instead of stacking another
STAMP = "bayesgeom-rendered"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def collapse_streams(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Each code cell's consecutive stream outputs of one name (stdout, stderr) merged into one,
    its text as a terminal would show it: a line keeps what follows its last carriage return.
    A progress bar redraws itself with ``\\r``; the kernel sends every redraw as its own output,
    so a 3,000-step training bar would otherwise be stored as thousands of outputs (1 MB for
    one notebook) where a terminal shows its final line. Returns ``nb``, changed in place."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged: list = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and merged and \
                    merged[-1].output_type == "stream" and merged[-1].name == out.name:
                merged[-1].text += out.text
            else:
                merged.append(out)
        for out in merged:
            if out.output_type == "stream":
                lines = out.text.split("\n")
                out.text = "\n".join(line.rsplit("\r", 1)[-1] for line in lines)
        cell.outputs = [o for o in merged if o.output_type != "stream" or o.text.strip()]
    return nb


def render(src: Path, quick: bool, timeout_s: int = 3600) -> Path:
    """Execute ``src`` in a scratch folder and write its executed copy under
    :data:`RENDERED`; returns that path. A cell that raises stops the render (nothing is
    written)."""
    nb = nbformat.read(src, as_version=4)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TQDM_DISABLE="1",
               PLOTLY_RENDERER="plotly_mimetype+png")
    env.pop("BAYESGEOM_QUICK", None)
    if quick:
        env["BAYESGEOM_QUICK"] = "1"
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bayesgeom-nb-") as scratch:
        client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                                resources={"metadata": {"path": scratch}})
        client.execute(env=env)
    wall = time.perf_counter() - t0
    collapse_streams(nb)
    sizes = "quick sizes (`BAYESGEOM_QUICK=1`: a smoke test, not a result)" if quick \
        else "full sizes"
    note = nbformat.v4.new_markdown_cell(
        f"*Rendered by `docs/render_notebooks.py` on {dt.date.today().isoformat()} at commit "
        f"`{_commit()}`, {sizes}, in {wall / 60:.1f} min on a shared 2-core CPU machine. The "
        f"notebook itself is `examples/{src.name}`.*")
    note.metadata[STAMP] = True
    nb.cells.insert(0, note)
    nb.metadata[STAMP] = {"quick": quick, "wall_s": round(wall, 1)}
    out = RENDERED / src.name
    if out.is_symlink():
        out.unlink()
    tmp = out.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="notebook name prefixes (default: all)")
    ap.add_argument("--quick", action="store_true", help="quick sizes (BAYESGEOM_QUICK=1)")
    args = ap.parse_args(argv)
    paths = [p for p in sorted(EXAMPLES.glob("*.ipynb"))
             if not args.only or any(p.name.startswith(o) for o in args.only)]
    if not paths:
        print(f"render_notebooks: no notebook in {EXAMPLES} matches {args.only}",
              file=sys.stderr)
        return 2
    for p in paths:
        t0 = time.perf_counter()
        out = render(p, args.quick)
        print(f"{p.name}: {time.perf_counter() - t0:.0f} s -> {out.relative_to(ROOT)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

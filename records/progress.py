"""The one progress bar class of the package: tqdm's widget bar in a notebook that can draw it,
its text bar everywhere else.

``tqdm.auto`` picks the widget bar in any Jupyter kernel and, where ``ipywidgets`` is missing
(the common case: it is not a dependency), warns "IProgress not found" at import, so every
notebook opened with that warning. This module asks for the widget bar only when
``ipywidgets`` is importable; otherwise the text bar, which Jupyter shows as plain lines.

Example:
    >>> bar = tqdm(range(3), disable=True)
    >>> sum(bar)
    3
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("ipywidgets") is not None:
    from tqdm.auto import tqdm
else:
    from tqdm.std import tqdm

__all__ = ["tqdm"]

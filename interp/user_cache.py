"""Where bayesgeom keeps converted models: ``$BAYESGEOM_CACHE``, else
``$XDG_CACHE_HOME/bayesgeom``, else ``~/.cache/bayesgeom``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The bayesgeom cache directory (not created)."""
    if os.environ.get("BAYESGEOM_CACHE"):
        return Path(os.environ["BAYESGEOM_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "bayesgeom"

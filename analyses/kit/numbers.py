"""How reports and terminal summaries print numbers: one formatter, one word for a value that
is not there.

Example:
    >>> num(0.123456), num(float("nan")), num(1234.5, 3, "g"), count(12345.0), times(2.5)
    ('0.123', 'n/a', '1.23e+03', '12,345', '2.50x')
    >>> cell(12345.0), cell(0.000123456), cell(None)
    ('12,345', '0.0001235', 'n/a')
"""

from __future__ import annotations

import math
from typing import Any

#: what a missing, undefined or non-finite value prints as
MISSING = "n/a"


def _missing(x: Any) -> bool:
    try:
        return x is None or not math.isfinite(float(x))
    except (TypeError, ValueError):
        return True


def num(x: Any, digits: int = 3, kind: str = "f") -> str:
    """``x`` to ``digits`` decimals (``kind="f"``) or significant figures (``"g"``)."""
    return MISSING if _missing(x) else f"{float(x):.{digits}{kind}}"


def count(x: Any) -> str:
    """An integer count with thousands separators."""
    return MISSING if _missing(x) else f"{int(x):,}"


def times(x: Any) -> str:
    """A ratio such as a speed-up: ``2.50x``."""
    return MISSING if _missing(x) else f"{float(x):.2f}x"


def cell(x: Any) -> str:
    """A table cell: whole numbers from 10 up with separators, others to 4 s.f."""
    if _missing(x):
        return MISSING
    x = float(x)
    if x.is_integer() and abs(x) >= 10:
        return f"{int(x):,}"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"

"""How reports, verdict tables and terminal summaries print numbers: every experiment's number
formatting lives here, each function one way of printing.

Two words stand for a value that is not there (None, NaN, ±inf, not a number): :data:`MISSING`
(``n/a``) in terminal tables (:func:`num`, :func:`count`, :func:`times`, :func:`cell`,
:func:`signed`) and :data:`UNDEFINED` in verdict tables and their prose (:func:`sig`,
:func:`fixed`, :func:`pct`), where a finding reads "undefined: <why>".

Example:
    >>> num(0.123456), num(float("nan")), num(1234.5, 3, "g"), count(12345.0), times(2.5)
    ('0.123', 'n/a', '1.23e+03', '12,345', '2.50x')
    >>> cell(12345.0), cell(0.000123456), cell(None)
    ('12,345', '0.0001235', 'n/a')
    >>> sig(0.0123456), sig(2.0), sig(12345.6), sig(float("nan")), sig(-1.5e-7)
    ('0.0123', '2', '12,346', 'undefined', '-1.5e-07')
    >>> fixed(0.5), fixed(float("nan")), pct(0.0009), pct(0.22), pct(1.0)
    ('0.500', 'undefined', '0.09 %', '22 %', '100 %')
    >>> signed(0.0123), signed(-0.0001234), signed(0.0), signed(None)
    ('+0.012', '-1.2e-04', '+0.000', 'n/a')
"""

from __future__ import annotations

import math
from typing import Any

#: what a missing, undefined or non-finite value prints as in a terminal table
MISSING = "n/a"
#: what it prints as in a verdict table and its prose
UNDEFINED = "undefined"


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


def signed(x: Any, digits: int = 3) -> str:
    """An effect with its sign to ``digits`` decimals (``+0.012``); one smaller than half the
    last printed digit, but not zero, in scientific notation (``-1.2e-04``), so that it stays
    visible."""
    if _missing(x):
        return MISSING
    x = float(x)
    if 0 < abs(x) < 0.5 * 10.0 ** -digits:
        return f"{x:+.1e}"
    return f"{x:+.{digits}f}"


def sig(x: Any, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures; whole thousands and above with separators
    (``12,345``); :data:`UNDEFINED` for a missing or non-finite value."""
    if _missing(x):
        return UNDEFINED
    v = float(x)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def fixed(x: Any, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals; :data:`UNDEFINED` for a missing or non-finite value."""
    return UNDEFINED if _missing(x) else f"{float(x):.{digits}f}"


def pct(x: Any) -> str:
    """A share as a percentage, two significant figures below 10 % (``0.0009`` ->
    ``"0.09 %"``, ``0.22`` -> ``"22 %"``, ``1.0`` -> ``"100 %"``); :data:`UNDEFINED` for a
    missing or non-finite value."""
    if _missing(x):
        return UNDEFINED
    v = 100 * float(x)
    return f"{v:.0f} %" if abs(v) >= 10 else f"{v:.2g} %"

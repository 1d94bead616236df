"""Numbers as every report writes them (Markdown, HTML, figures, the terminal).

One format: three decimals (:func:`num`), a sign on differences (:func:`signed`),
shares as percentages with one decimal (:func:`pct`), intervals in brackets
(:func:`bounds`), and :data:`MISSING` (``n/a``) for a value that is undefined.
Negative numbers keep the ASCII minus, so a copied figure is a number again.
"""

from __future__ import annotations

#: what an undefined value is shown as
MISSING = "n/a"
#: decimals of every number shown
DIGITS = 3


def num(value: float | None) -> str:
    """``0.830``; :data:`MISSING` when undefined."""
    return MISSING if value is None else f"{value:.{DIGITS}f}"


def signed(value: float | None) -> str:
    """``+0.012`` / ``-0.012``: a difference, always with its sign."""
    return MISSING if value is None else f"{value:+.{DIGITS}f}"


def pct(value: float | None) -> str:
    """A share as a percentage: ``29.2%``."""
    return MISSING if value is None else f"{100 * value:.1f}%"


def bounds(low: float | None, high: float | None, *, sign: bool = False) -> str:
    """An interval: ``[0.781, 0.872]`` (``sign``: ``[-0.010, +0.034]``)."""
    shown = signed if sign else num
    return f"[{shown(low)}, {shown(high)}]"


def level(confidence: float) -> str:
    """A confidence level as headings quote it: ``95%``."""
    return f"{confidence:.0%}"


def yes_no(flag: bool | None) -> str:
    return MISSING if flag is None else ("yes" if flag else "no")


def unreliable(min_n: int) -> str:
    """The note on a percentile interval drawn from fewer than ``min_n`` cases."""
    return f"interval unreliable: fewer than {min_n} cases"


def tick(value: float) -> str:
    """An axis tick: as few decimals as it needs (at most :data:`DIGITS`): ``0.25``, ``-1``."""
    text = f"{value:.{DIGITS}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text

"""Figure sizing: how wide a label is drawn, so margins fit the longest one.

:func:`text_width` estimates the drawn width of a text per character, from the
advance widths of DejaVu Sans (the widest of the common sans-serif faces and the
default on Linux), rounded up, so an estimate errs wide and nothing is cut off or
trimmed. Widths are of the text as shown: made :func:`~tiap.text.inert` first.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

from tiap.text import inert

#: the font size of every figure's text (px)
FONT_SIZE = 12.0

# Advance widths in em (DejaVu Sans, rounded up); others: 0.68 for Latin, 1.05 beyond.
_WIDTHS: dict[str, float] = {
    **dict.fromkeys("ijlI|!'.,:;", 0.34),
    **dict.fromkeys("ft()[]{}/\\", 0.42),
    **dict.fromkeys("r", 0.45),
    **dict.fromkeys(" -", 0.37),
    **dict.fromkeys("scz", 0.56),
    **dict.fromkeys("abdeghknopquvxy0123456789_#$?", 0.65),
    **dict.fromkeys("ABCDEFGHKLNPRSTUVXYZ&", 0.74),
    **dict.fromkeys("GOQD", 0.8),
    **dict.fromkeys("mw", 1.0),
    **dict.fromkeys("MW@%", 1.02),
    **dict.fromkeys("+=<>~^*−±×÷→", 0.85),
}


def char_width(ch: str) -> float:
    """Estimated advance width of one character, in em."""
    w = _WIDTHS.get(ch)
    if w is not None:
        return w
    if unicodedata.combining(ch):
        return 0.0
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 1.05
    return 0.68 if ord(ch) < 0x2000 else 1.05


def text_width(text: object, size: float = FONT_SIZE) -> float:
    """Estimated drawn width of ``text`` (as shown: control characters made visible)."""
    return size * sum(char_width(ch) for ch in inert(text))


def max_width(labels: Sequence[object], size: float = FONT_SIZE) -> float:
    """The widest of ``labels`` (0 when there are none)."""
    return max((text_width(label, size) for label in labels), default=0.0)


def rotated_extent(
    width: float, size: float = FONT_SIZE, angle: float = 45.0
) -> tuple[float, float]:
    """(horizontal, vertical) extent of a text of ``width`` rotated by ``angle`` degrees."""
    a = math.radians(angle)
    return width * math.cos(a) + size * math.sin(a), width * math.sin(a) + size * math.cos(a)

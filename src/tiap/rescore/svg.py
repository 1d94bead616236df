"""SVG building blocks for the HTML reports: escaped text, measured label widths, axes.

Figures are sized from their labels: :func:`text_width` estimates how wide a text
is drawn (per character, from the advance widths of DejaVu Sans, the widest of the
common sans-serif faces and the default on Linux, rounded up), so margins fit
the longest label and nothing is cut off or trimmed. Every text goes through
:func:`tiap.text.inert_html` (escaped, control characters made visible).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

from tiap.text import inert
from tiap.text import inert_html as e

PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")
FONT_SIZE = 12.0
FONT = f'font-family="sans-serif" font-size="{FONT_SIZE:g}"'
AXIS = "#555555"
GRID = "#e4e4e4"

# Advance widths in em (DejaVu Sans, rounded up); others: 0.65 for Latin, 1.0 beyond.
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


def rotated_extent(
    width: float, size: float = FONT_SIZE, angle: float = 45.0
) -> tuple[float, float]:
    """(horizontal, vertical) extent of a text of ``width`` rotated by ``angle`` degrees."""
    a = math.radians(angle)
    return width * math.cos(a) + size * math.sin(a), width * math.sin(a) + size * math.cos(a)


def svg(width: float, height: float, body: Sequence[str], title: str) -> str:
    """The root element: its own size, shrinking to its container's width (never past it)."""
    w, h = math.ceil(width), math.ceil(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(title)}" '
        'style="max-width:100%;height:auto;display:block">'
        f"<title>{e(title)}</title>" + "".join(body) + "</svg>"
    )


def text(
    x: float,
    y: float,
    content: object,
    anchor: str = "start",
    *,
    tip: object | None = None,
    weight: str | None = None,
    fill: str | None = None,
    size: float | None = None,
) -> str:
    """A text element at baseline ``y``; ``tip`` is a hover title."""
    extra = ""
    if weight:
        extra += f' font-weight="{weight}"'
    if fill:
        extra += f' fill="{fill}"'
    font = FONT if size is None else f'font-family="sans-serif" font-size="{size:g}"'
    title = f"<title>{e(tip)}</title>" if tip is not None else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {font}{extra}>'
        f"{title}{e(content)}</text>"
    )


def rotated_text(x: float, y: float, content: object, angle: float = -45.0) -> str:
    """A label starting at (x, y), turned ``angle`` degrees (column headings)."""
    return (
        f'<text x="0" y="0" transform="translate({x:.1f},{y:.1f}) rotate({angle:g})" '
        f"{FONT}>{e(content)}</text>"
    )


def rect(
    x: float, y: float, w: float, h: float, fill: str, tip: object | None = None, **attrs: str
) -> str:
    more = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    title = f"<title>{e(tip)}</title>" if tip is not None else ""
    return (
        f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{max(h, 0):.2f}" '
        f'fill="{fill}"{more}>{title}</rect>'
    )


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = AXIS, **attrs: str) -> str:
    more = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    return (
        f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{stroke}"{more}/>'
    )


def circle(cx: float, cy: float, r: float, fill: str, tip: object | None = None) -> str:
    title = f"<title>{e(tip)}</title>" if tip is not None else ""
    return f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{r:g}" fill="{fill}">{title}</circle>'


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from at or below ``low`` to at or above ``high`` (about ``count``
    steps)."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high - low < 1e-6:
        return [low, low + 1.0]
    raw = (high - low) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks = [first]
    while ticks[-1] < high - step * 1e-9:
        ticks.append(first + len(ticks) * step)
    return [round(t, 10) + 0.0 for t in ticks]


def tick_label(value: float) -> str:
    text_ = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text_ in ("-0", "") else text_.replace("-", "−")


def max_width(labels: Sequence[object], size: float = FONT_SIZE) -> float:
    return max((text_width(label, size) for label in labels), default=0.0)


def legend(items: Sequence[tuple[str, str]], x: float, y: float) -> tuple[list[str], float]:
    """Colour swatches with their names in one row from (x, y); returns the parts and the
    row's right edge."""
    body = []
    for name, color in items:
        body.append(rect(x, y - 10, 12, 12, color))
        body.append(text(x + 16, y, name))
        x += 16 + text_width(name) + 14
    return body, x

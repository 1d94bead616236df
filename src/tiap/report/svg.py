"""SVG primitives of every report figure: the root element, text, shapes, ticks, a legend.

Each returns one element as a string. Every text and hover title goes through
:func:`tiap.text.inert_html` (escaped, control characters made visible, which XML
forbids anyway); a figure sizes its margins from its labels with
:mod:`tiap.report.sizing`, so nothing is cut off or trimmed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tiap.report.palette import AXIS
from tiap.report.sizing import FONT_SIZE, text_width
from tiap.text import inert_html as e

FONT = f'font-family="sans-serif" font-size="{FONT_SIZE:g}"'


def svg(width: float, height: float, body: Sequence[str], title: str) -> str:
    """The root element: its own size, shrinking to its container's width (never past it)."""
    w, h = math.ceil(width), math.ceil(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(title)}" '
        'style="max-width:100%;height:auto;display:block">'
        f"<title>{e(title)}</title>" + "".join(body) + "</svg>"
    )


def _title(tip: object | None) -> str:
    return f"<title>{e(tip)}</title>" if tip is not None else ""


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
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {font}{extra}>'
        f"{_title(tip)}{e(content)}</text>"
    )


def rotated_text(
    x: float,
    y: float,
    content: object,
    angle: float = -45.0,
    *,
    anchor: str | None = None,
    tip: object | None = None,
) -> str:
    """A label at (x, y), turned ``angle`` degrees (column headings, axis names)."""
    align = f' text-anchor="{anchor}"' if anchor else ""
    return (
        f'<text x="0" y="0" transform="translate({x:.1f},{y:.1f}) rotate({angle:g})"{align} '
        f"{FONT}>{_title(tip)}{e(content)}</text>"
    )


def _attrs(attrs: dict[str, str]) -> str:
    return "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())


def rect(
    x: float, y: float, w: float, h: float, fill: str, tip: object | None = None, **attrs: str
) -> str:
    """A rectangle (negative sizes drawn as 0); ``attrs`` as SVG attributes (``stroke_width``
    for ``stroke-width``)."""
    return (
        f'<rect x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{max(h, 0):.2f}" '
        f'fill="{fill}"{_attrs(attrs)}>{_title(tip)}</rect>'
    )


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = AXIS, **attrs: str) -> str:
    return (
        f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" '
        f'stroke="{stroke}"{_attrs(attrs)}/>'
    )


def circle(cx: float, cy: float, r: float, fill: str, tip: object | None = None) -> str:
    return f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{r:g}" fill="{fill}">{_title(tip)}</circle>'


def polyline(points: Sequence[tuple[float, float]], stroke: str, width: float = 2) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline points="{path}" fill="none" stroke="{stroke}" stroke-width="{width:g}"/>'


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


def legend(items: Sequence[tuple[str, str]], x: float, y: float) -> tuple[list[str], float]:
    """Colour swatches with their names in one row from (x, y), as one group of class
    ``legend``; returns the parts and the row's right edge."""
    body = ['<g class="legend">']
    for name, color in items:
        body.append(rect(x, y - 10, 12, 12, color))
        body.append(text(x + 16, y, name))
        x += 16 + text_width(name) + 14
    body.append("</g>")
    return body, x

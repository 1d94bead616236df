"""Inline SVG figures for ``report.html``: no external assets, every text escaped
(and made inert: no control character, which XML forbids anyway).

Names and labels are shown whole: each figure's margins are sized from its longest
text (:func:`tiap.rescore.svg.text_width`, a per-character estimate that errs wide)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from tiap.rescore.svg import max_width, rotated_extent, text_width
from tiap.text import inert_html

PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")
INVALID_COLOR = "#9e9e9e"
MISSING_COLOR = "#e0e0e0"
FONT = 'font-family="sans-serif" font-size="12"'


def e(text: object) -> str:
    """Text for HTML and SVG: controls made visible (:func:`tiap.text.inert`), escaped."""
    return inert_html(text)


def label_color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    w, h = math.ceil(width), math.ceil(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{e(title)}" '
        'style="max-width:100%;height:auto">'
        f"<title>{e(title)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: object, anchor: str = "start", tip: str | None = None) -> str:
    """A text element; ``tip`` is a hover title."""
    title = f"<title>{e(tip)}</title>" if tip is not None else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}>{title}{e(text)}</text>'


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[int]]],
    segments: Sequence[str],
    colors: Sequence[str],
    title: str,
) -> str:
    """One horizontal bar per row, split into segments proportional to its counts; the
    margin fits the longest row name (shown whole)."""
    pad, bar_w, bar_h, gap = 10.0, 420.0, 18.0, 8.0
    left = pad + max_width([name for name, _ in rows]) + 8
    legend_h = 22.0
    height = legend_h + len(rows) * (bar_h + gap) + 10
    body: list[str] = []
    x = left
    for i, seg in enumerate(segments):
        body.append(f'<rect x="{x:.1f}" y="4" width="12" height="12" fill="{colors[i]}"/>')
        body.append(_text(x + 16, 14, seg))
        x += 16 + text_width(seg) + 10
    legend_end = x
    totals = []
    for r, (name, counts) in enumerate(rows):
        y = legend_h + r * (bar_h + gap)
        body.append(_text(left - 8, y + 13, name, "end", name))
        total = sum(counts)
        totals.append(f"n={total}")
        x = left
        for i, c in enumerate(counts):
            if not total or not c:
                continue
            w = bar_w * c / total
            body.append(
                f'<rect x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" height="{bar_h:.0f}" '
                f'fill="{colors[i]}"><title>{e(name)}: {e(segments[i])} {c} of {total}'
                f"</title></rect>"
            )
            x += w
        body.append(_text(left + bar_w + 6, y + 13, f"n={total}"))
    right = left + bar_w + 6 + max_width(totals) + pad
    return _svg(max(right, legend_end), height, body, title)


def kappa_color(value: float | None) -> str:
    """Red (kappa <= 0) through yellow (0.5) to green (1); grey when undefined."""
    if value is None:
        return "#f0f0f0"
    t = min(max(value, 0.0), 1.0)
    stops = ((0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80)))
    for (t0, c0), (t1, c1) in itertools.pairwise(stops):
        if t <= t1:
            u = (t - t0) / (t1 - t0)
            rgb = tuple(round(a + (b - a) * u) for a, b in zip(c0, c1, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#1a9850"


def heatmap(names: Sequence[str], values: dict[tuple[str, str], float | None], title: str) -> str:
    """A symmetric rater x rater matrix of kappas with values in the cells.

    Rater names are shown whole: the margins are sized from the longest name
    (:func:`tiap.rescore.svg.text_width`), the column names turned 45 degrees."""
    cell, pad = 46.0, 10.0
    n = len(names)
    label_w = max_width(names)
    h_ext, v_ext = rotated_extent(label_w)
    left, top = pad + label_w + 8, pad + v_ext + 6
    body: list[str] = []
    for j, name in enumerate(names):
        x = left + j * cell + cell / 2
        body.append(
            f'<text x="0" y="0" transform="translate({x:.1f},{top - 6:.1f}) rotate(-45)" '
            f"{FONT}>{e(name)}<title>{e(name)}</title></text>"
        )
    for i, a in enumerate(names):
        y = top + i * cell
        body.append(_text(left - 8, y + cell / 2 + 4, a, "end", a))
        for j, b in enumerate(names):
            x = left + j * cell
            v = 1.0 if i == j else values.get((a, b), values.get((b, a)))
            shown = "" if i == j else ("n/a" if v is None else f"{v:.2f}")
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell:.0f}" height="{cell:.0f}" '
                f'fill="{"#ffffff" if i == j else kappa_color(v)}" stroke="#ffffff">'
                f"<title>{e(a)} / {e(b)}: {e(shown or '-')}</title></rect>"
            )
            if shown:
                body.append(_text(x + cell / 2, y + cell / 2 + 4, shown, "middle"))
    width = left + n * cell + max(pad, h_ext - cell / 2 + pad)
    return _svg(math.ceil(width), math.ceil(top + n * cell + pad), body, title)


def confusion(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str) -> str:
    """A confusion matrix: rows the reference, columns the rater; darker = more. Cells are
    as wide as the longest label, which is shown whole."""
    pad = 10.0
    cell = max(54.0, max_width(labels) + 10)
    left, top = 24 + max_width(labels) + 8, 60.0
    k = len(labels)
    peak = max((max(row) for row in matrix), default=0) or 1
    body = [_text(left + k * cell / 2, 14, "rater", "middle")]
    body.append(
        f'<text x="0" y="0" transform="translate(14,{top + k * cell / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" {FONT}>reference</text>'
    )
    for j, lab in enumerate(labels):
        body.append(_text(left + j * cell + cell / 2, top - 8, lab, "middle", lab))
    for i, row in enumerate(matrix):
        y = top + i * cell
        body.append(_text(left - 6, y + cell / 2 + 4, labels[i], "end", labels[i]))
        for j, count in enumerate(row):
            shade = round(245 - 180 * count / peak)
            fill = f"#{shade:02x}{shade:02x}ff" if i != j else f"#{shade:02x}ff{shade:02x}"
            x = left + j * cell
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell:.0f}" height="{cell:.0f}" '
                f'fill="{fill}" stroke="#ffffff"><title>reference {e(labels[i])}, rater '
                f"{e(labels[j])}: {count}</title></rect>"
            )
            body.append(_text(x + cell / 2, y + cell / 2 + 4, count, "middle"))
    return _svg(left + k * cell + pad, top + k * cell + pad, body, title)

"""Confusion matrices are drawn in the report palette (agreement and disagreement colours,
shaded by count), with a legend, not in saturated colours of their own."""

from __future__ import annotations

import re

from tiap.agreement.figures import AGREE, DISAGREE, confusion, confusion_color
from tiap.report.palette import PALE, PALETTE, rgb


def test_cells_are_shaded_in_the_report_palette() -> None:
    matrix = [[8, 2, 0], [1, 5, 0], [0, 3, 4]]
    drawn = confusion(matrix, ["supports", "partial", "does_not_support"], "Confusion of j")
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"', drawn)
    cells = [
        confusion_color(c, 8, i == j) for i, row in enumerate(matrix) for j, c in enumerate(row)
    ]
    assert fills[: len(cells)] == cells
    assert {AGREE, DISAGREE} <= set(PALETTE)
    assert confusion_color(8, 8, True) == AGREE  # the most: the palette colour itself
    assert confusion_color(3, 8, False) != confusion_color(2, 8, False)  # more is darker
    assert confusion_color(0, 8, False) == "#{:02x}{:02x}{:02x}".format(*PALE)
    for fill in fills:  # every shade lies between pale and a palette colour
        r, g, b = rgb(fill)
        assert any(
            all(
                min(p, q) <= v <= max(p, q) for v, p, q in zip((r, g, b), PALE, rgb(c), strict=True)
            )
            for c in (AGREE, DISAGREE)
        ), fill
    legend = re.search(r'<g class="legend">(.*?)</g>', drawn)
    assert legend is not None
    assert ">agreement<" in legend[1]
    assert ">disagreement<" in legend[1]

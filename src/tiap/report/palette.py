"""The colours every report figure draws with.

:data:`PALETTE` colours series (runs, targets, labels) in order; the greys are for
axes, grid lines and what is undefined; :func:`ramp` shades a value in [0, 1]
between colour stops (heatmaps).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

#: colours of series, in order (ColorBrewer Dark2, then a blue)
PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4")
AXIS = "#555555"
GRID = "#e4e4e4"
#: what is neither up nor down, or invalid
GREY = "#9e9e9e"
#: what is missing
LIGHT_GREY = "#e0e0e0"
#: a heatmap cell whose value is undefined
UNDEFINED = "#f0f0f0"
WHITE = "#ffffff"

RGB = tuple[int, int, int]


#: the light end of a one-colour shading (:func:`shading`)
PALE: RGB = (247, 247, 247)


def rgb(color: str) -> RGB:
    """``#rrggbb`` as its (red, green, blue)."""
    return (int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16))


def shading(color: str) -> tuple[tuple[float, RGB], ...]:
    """:func:`ramp` stops from pale (0) to ``color`` (1): how much, in one colour."""
    return ((0.0, PALE), (1.0, rgb(color)))


def series_color(i: int) -> str:
    """The colour of the ``i``-th series (the palette repeats)."""
    return PALETTE[i % len(PALETTE)]


def ramp(value: float | None, stops: Sequence[tuple[float, RGB]]) -> str:
    """``value`` clamped to [0, 1] and shaded linearly between ``stops`` (position, RGB),
    positions increasing from 0 to 1; :data:`UNDEFINED` when there is no value."""
    if value is None:
        return UNDEFINED
    t = min(max(value, 0.0), 1.0)
    for (t0, c0), (t1, c1) in itertools.pairwise(stops):
        if t <= t1:
            u = (t - t0) / (t1 - t0)
            rgb = tuple(round(a + (b - a) * u) for a, b in zip(c0, c1, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#{:02x}{:02x}{:02x}".format(*stops[-1][1])

"""Charts every report can draw from plain rows: interval rows (forest plots), grouped
bars and stacked bars, each sized from its labels (:mod:`tiap.report.sizing`).

Each returns the SVG as a string, or ``""`` when there is nothing to draw. Numbers
shown are written as :mod:`tiap.report.numbers` writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiap.report import svg
from tiap.report.numbers import bounds, num, signed, tick
from tiap.report.palette import GRID, series_color
from tiap.report.sizing import FONT_SIZE, max_width, text_width

#: the margin around every chart
PAD = 10.0


class Scale:
    """A linear map from [lo, hi] to [x0, x1]."""

    def __init__(self, lo: float, hi: float, x0: float, x1: float) -> None:
        self.lo, self.hi, self.x0, self.x1 = lo, hi, x0, x1

    def __call__(self, v: float) -> float:
        span = self.hi - self.lo or 1.0
        return self.x0 + (v - self.lo) / span * (self.x1 - self.x0)


def x_axis(scale: Scale, ticks: Sequence[float], y: float, top: float, label: str) -> list[str]:
    """A horizontal axis at ``y`` with grid lines up to ``top``, tick labels and a name."""
    body = [svg.line(scale.x0, y, scale.x1, y)]
    for t in ticks:
        x = scale(t)
        body.append(svg.line(x, top, x, y, GRID))
        body.append(svg.line(x, y, x, y + 4))
        body.append(svg.text(x, y + 16, tick(t), "middle"))
    body.append(svg.text((scale.x0 + scale.x1) / 2, y + 32, label, "middle"))
    return body


@dataclass(frozen=True)
class IntervalRow:
    label: str
    mean: float
    low: float | None
    high: float | None
    color: str
    tip: str


def interval_rows(
    rows: Sequence[IntervalRow],
    axis_label: str,
    title: str,
    legend: Sequence[tuple[str, str]] = (),
    *,
    sign: bool = True,
) -> str:
    """One row per estimate: a dot at the mean, a whisker over its interval, a zero line
    (``sign``: values written as signed differences, else as plain numbers);
    ``legend`` (name, colour) says what the colours of the rows mean, above them."""
    if not rows:
        return ""
    row_h, plot_w = 20.0, 360.0
    values = [r.mean for r in rows] + [v for r in rows for v in (r.low, r.high) if v is not None]
    ticks = svg.nice_ticks(min(0.0, *values), max(0.0, *values))
    shown = [
        f"{signed(r.mean) if sign else num(r.mean)} {bounds(r.low, r.high, sign=sign)}"
        for r in rows
    ]
    left = PAD + max_width([r.label for r in rows]) + 12
    right = max(max_width(shown), text_width(tick(ticks[-1])) / 2) + PAD + 12
    legend_body, legend_end = svg.legend(legend, PAD, PAD + FONT_SIZE) if legend else ([], 0.0)
    top = PAD + (26 if legend else 0)
    scale = Scale(ticks[0], ticks[-1], left, left + plot_w)
    bottom = top + len(rows) * row_h
    body = [*legend_body, *x_axis(scale, ticks, bottom + 4, top, axis_label)]
    body.append(
        svg.line(scale(0.0), top, scale(0.0), bottom + 4, "#333333", stroke_dasharray="3,3")
    )
    for i, (r, value) in enumerate(zip(rows, shown, strict=True)):
        y = top + i * row_h + row_h / 2
        body.append(svg.text(left - 12, y + 4, r.label, "end", tip=r.tip))
        if r.low is not None and r.high is not None:
            body.append(svg.line(scale(r.low), y, scale(r.high), y, r.color, stroke_width="2"))
            for v in (r.low, r.high):
                body.append(svg.line(scale(v), y - 4, scale(v), y + 4, r.color, stroke_width="2"))
        body.append(svg.circle(scale(r.mean), y, 4, r.color, r.tip))
        body.append(svg.text(left + plot_w + 12, y + 4, value))
    return svg.svg(max(left + plot_w + right, legend_end + PAD), bottom + 48, body, title)


@dataclass(frozen=True)
class Bar:
    value: float | None
    tip: str
    star: bool = False


def grouped_bars(
    groups: Sequence[str],
    series: Sequence[str],
    bars: Sequence[Sequence[Bar]],
    axis: str,
    title: str,
) -> str:
    """Vertical bars: one group per ``groups`` entry, one bar per ``series`` entry
    (``bars[g][s]``), a star over the bars marked ``star``; ``""`` when nothing is defined."""
    defined = [b.value for row in bars for b in row if b.value is not None]
    if not defined:
        return ""
    ticks = svg.nice_ticks(0.0, max(defined), 4)
    bar_w, plot_h = 18.0, 130.0
    group_w = max(len(series) * bar_w + 18, max_width(groups) + 12)
    y_left = PAD + max_width([tick(t) for t in ticks]) + 8
    legend_body, legend_end = svg.legend(
        [(name, series_color(i)) for i, name in enumerate(series)], PAD, PAD + FONT_SIZE
    )
    top = PAD + 26 + 14
    ys = Scale(ticks[0], ticks[-1], top + plot_h, top)
    plot_right = y_left + len(groups) * group_w
    body = list(legend_body)
    for t in ticks:
        body.append(svg.line(y_left, ys(t), plot_right, ys(t), GRID))
        body.append(svg.text(y_left - 6, ys(t) + 4, tick(t), "end"))
    for g, (group, row) in enumerate(zip(groups, bars, strict=True)):
        gx = y_left + g * group_w + (group_w - len(series) * bar_w) / 2
        for i, bar in enumerate(row):
            if bar.value is None:
                continue
            x = gx + i * bar_w
            color = series_color(i)
            body.append(
                svg.rect(x + 1, ys(bar.value), bar_w - 2, ys(0.0) - ys(bar.value), color, bar.tip)
            )
            if bar.star:
                body.append(svg.text(x + bar_w / 2, ys(bar.value) - 3, "★", "middle", tip=bar.tip))
        body.append(
            svg.text(y_left + g * group_w + group_w / 2, top + plot_h + 16, group, "middle")
        )
    body.append(svg.line(y_left, ys(0.0), plot_right, ys(0.0)))
    axis_x = max((y_left + plot_right) / 2, PAD + text_width(axis) / 2)
    body.append(svg.text(axis_x, top + plot_h + 34, axis, "middle"))
    width = max(plot_right, legend_end, axis_x + text_width(axis) / 2) + PAD
    return svg.svg(width, top + plot_h + 44, body, title)


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[int]]],
    segments: Sequence[str],
    colors: Sequence[str],
    title: str,
) -> str:
    """One horizontal bar per row, split into segments proportional to its counts, with
    each row's total after it; the margin fits the longest row name (shown whole)."""
    bar_w, bar_h, gap = 420.0, 18.0, 8.0
    left = PAD + max_width([name for name, _ in rows]) + 8
    legend_h = 22.0
    height = legend_h + len(rows) * (bar_h + gap) + 10
    body, legend_end = svg.legend(list(zip(segments, colors, strict=True)), left, 14)
    totals = []
    for r, (name, counts) in enumerate(rows):
        y = legend_h + r * (bar_h + gap)
        body.append(svg.text(left - 8, y + 13, name, "end", tip=name))
        total = sum(counts)
        totals.append(f"n={total}")
        x = left
        for i, c in enumerate(counts):
            if not total or not c:
                continue
            w = bar_w * c / total
            tip = f"{name}: {segments[i]} {c} of {total}"
            body.append(svg.rect(x, y, w, bar_h, colors[i], tip))
            x += w
        body.append(svg.text(left + bar_w + 6, y + 13, f"n={total}"))
    right = left + bar_w + 6 + max_width(totals) + PAD
    return svg.svg(max(right, legend_end), height, body, title)

"""Generic SVG charts for the rescoring reports: interval rows (forest plots), share
heatmaps and grouped bars, each sized from its labels (:mod:`tiap.rescore.svg`).

Each returns the SVG as a string, or ``""`` when there is nothing to draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiap.rescore import svg
from tiap.rescore.report_models import Share
from tiap.rescore.svg import FONT_SIZE, GRID, PALETTE, max_width, text_width

PAD = 10.0


def signed(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:+.{digits}f}".replace("-", "−")


def num(v: float | None) -> str:
    return "–" if v is None else f"{v:.4f}"


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


class Scale:
    """A linear map from [lo, hi] to [x0, x1]."""

    def __init__(self, lo: float, hi: float, x0: float, x1: float) -> None:
        self.lo, self.hi, self.x0, self.x1 = lo, hi, x0, x1

    def __call__(self, v: float) -> float:
        span = self.hi - self.lo or 1.0
        return self.x0 + (v - self.lo) / span * (self.x1 - self.x0)


def x_axis(scale: Scale, ticks: Sequence[float], y: float, top: float, label: str) -> list[str]:
    body = [svg.line(scale.x0, y, scale.x1, y)]
    for t in ticks:
        x = scale(t)
        body.append(svg.line(x, top, x, y, GRID))
        body.append(svg.line(x, y, x, y + 4))
        body.append(svg.text(x, y + 16, svg.tick_label(t), "middle"))
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


def interval_rows(rows: Sequence[IntervalRow], axis_label: str, title: str) -> str:
    """One row per estimate: a dot at the mean, a whisker over its interval, a zero line."""
    if not rows:
        return ""
    row_h, plot_w = 20.0, 360.0
    values = [r.mean for r in rows] + [v for r in rows for v in (r.low, r.high) if v is not None]
    ticks = svg.nice_ticks(min(0.0, *values), max(0.0, *values))
    shown = [f"{signed(r.mean)} [{signed(r.low)}, {signed(r.high)}]" for r in rows]
    left = PAD + max_width([r.label for r in rows]) + 12
    right = max(max_width(shown), text_width(svg.tick_label(ticks[-1])) / 2) + PAD + 12
    top = PAD
    scale = Scale(ticks[0], ticks[-1], left, left + plot_w)
    bottom = top + len(rows) * row_h
    body = x_axis(scale, ticks, bottom + 4, top, axis_label)
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
    return svg.svg(left + plot_w + right, bottom + 48, body, title)


def _heat(share: float | None) -> str:
    """White (0) to dark orange (1); light grey when undefined."""
    if share is None:
        return "#f0f0f0"
    t = min(max(share, 0.0), 1.0)
    c0, c1 = (255, 255, 255), (204, 76, 2)
    rgb = tuple(round(a + (b - a) * t) for a, b in zip(c0, c1, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def share_heatmap(
    rows: Sequence[tuple[str, Sequence[Share | None]]],
    columns: Sequence[str],
    large: float,
    title: str,
) -> str:
    """Rows x column groups; each group has two cells: the share changed and the share
    changed by at least ``large``."""
    if not rows or not columns:
        return ""
    subs = ("changed", f"|Δ| ≥ {large:g}")
    cell_w = max(58.0, max_width(subs) + 12, max_width(columns) / 2 + 8)
    cell_h = 24.0
    left = PAD + max_width([r for r, _ in rows]) + 12
    top = PAD + 2 * (FONT_SIZE + 6)
    body: list[str] = []
    for j, col in enumerate(columns):
        x = left + j * 2 * cell_w
        body.append(svg.text(x + cell_w, PAD + FONT_SIZE, col, "middle"))
        for s, sub in enumerate(subs):
            body.append(
                svg.text(x + s * cell_w + cell_w / 2, PAD + 2 * FONT_SIZE + 6, sub, "middle")
            )
    for i, (label, shares) in enumerate(rows):
        y = top + i * cell_h
        body.append(svg.text(left - 12, y + cell_h / 2 + 4, label, "end"))
        for j, share in enumerate(shares):
            for s in range(2):
                x = left + (2 * j + s) * cell_w
                value = (
                    None
                    if share is None
                    else (share.share_changed if s == 0 else share.share_large)
                )
                tip = (
                    f"{label}, {columns[j]}: no shared queries"
                    if share is None or not share.n
                    else f"{label}, {columns[j]}: {share.n} shared, {share.n_changed} changed "
                    f"({pct(share.share_changed)}), {share.n_large} by ≥ {large:g} "
                    f"({pct(share.share_large)})"
                )
                body.append(svg.rect(x, y, cell_w, cell_h, _heat(value), tip, stroke="#ffffff"))
                fill = "#ffffff" if value is not None and value > 0.55 else "#222222"
                body.append(
                    svg.text(x + cell_w / 2, y + cell_h / 2 + 4, pct(value), "middle", fill=fill)
                )
    width = left + 2 * len(columns) * cell_w + PAD
    return svg.svg(width, top + len(rows) * cell_h + PAD, body, title)


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
    y_left = PAD + max_width([svg.tick_label(t) for t in ticks]) + 8
    legend_body, legend_end = svg.legend(
        [(name, PALETTE[i % len(PALETTE)]) for i, name in enumerate(series)], PAD, PAD + FONT_SIZE
    )
    top = PAD + 26 + 14
    ys = Scale(ticks[0], ticks[-1], top + plot_h, top)
    plot_right = y_left + len(groups) * group_w
    body = list(legend_body)
    for tick in ticks:
        body.append(svg.line(y_left, ys(tick), plot_right, ys(tick), GRID))
        body.append(svg.text(y_left - 6, ys(tick) + 4, svg.tick_label(tick), "end"))
    for g, (group, row) in enumerate(zip(groups, bars, strict=True)):
        gx = y_left + g * group_w + (group_w - len(series) * bar_w) / 2
        for i, bar in enumerate(row):
            if bar.value is None:
                continue
            x = gx + i * bar_w
            color = PALETTE[i % len(PALETTE)]
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

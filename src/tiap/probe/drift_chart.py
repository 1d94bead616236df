"""The drift report's figure: per judge, its EWMA of the share of anchors changed over
every drift run of the anchor set, the chart's upper limit, and the runs that raised
an alarm (red)."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.cases.diagnostic_events import DriftEvent
from tiap.report import svg
from tiap.report.blocks import Figure
from tiap.report.charts import PAD, Scale
from tiap.report.numbers import num, tick
from tiap.report.palette import GRID, series_color

__all__ = ["ewma_figure"]

#: the colour of a point that raised an alarm
ALARM = "#d73027"


def ewma_figure(runs: Sequence[DriftEvent], judge: str) -> Figure | None:
    """``judge``'s EWMA chart over ``runs`` (oldest first); None when it has no point."""
    points = [
        (e.run, j.ewma, j.ewma_upper, j.alarm)
        for e in runs
        if (j := e.judge(judge)) is not None and j.ewma is not None and j.ewma_upper is not None
    ]
    if not points:
        return None
    values = [v for _, ewma, upper, _ in points for v in (ewma, upper) if v is not None]
    ticks = svg.nice_ticks(0.0, max(0.05, *values), 4)
    left, top, width, height = PAD + 44, PAD + 8, 320.0, 120.0
    xs = Scale(0.0, float(max(1, len(points) - 1)), left, left + width)
    ys = Scale(ticks[0], ticks[-1], top + height, top)
    body: list[str] = []
    for t in ticks:
        body.append(svg.line(left, ys(t), left + width, ys(t), GRID))
        body.append(svg.text(left - 6, ys(t) + 4, tick(t), "end"))
    upper = [(xs(float(i)), ys(float(p[2] or 0.0))) for i, p in enumerate(points)]
    line = [(xs(float(i)), ys(float(p[1] or 0.0))) for i, p in enumerate(points)]
    body.append(svg.polyline(upper, "#555555", 1))
    body.append(svg.polyline(line, series_color(0)))
    for i, (run, ewma, limit, alarm) in enumerate(points):
        tip = f"drift run {run}: EWMA {num(ewma)}, upper limit {num(limit)}" + (
            ", alarm" if alarm else ""
        )
        body.append(svg.circle(line[i][0], line[i][1], 4, ALARM if alarm else series_color(0), tip))
        body.append(svg.text(line[i][0], top + height + 16, str(run), "middle"))
    body.append(svg.text(left + width / 2, top + height + 34, "drift run", "middle"))
    title = f"EWMA of the share changed: {judge}"
    return Figure(
        svg.svg(left + width + PAD + 12, top + height + 48, body, title),
        f"{judge}: EWMA (line) and its upper limit (grey) over the drift runs; red: an alarm",
    )

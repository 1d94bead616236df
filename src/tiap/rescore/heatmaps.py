"""The rescoring report's matrices, inline SVG: query-level instability per run and per
category (Table 16) as share heatmaps, and winner flips between run pairs.

Each builder returns a :class:`~tiap.report.blocks.Figure`, or ``None`` when the
report has nothing to draw; labels are shown whole (:mod:`tiap.report.sizing`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tiap.report import svg
from tiap.report.blocks import Figure
from tiap.report.charts import PAD
from tiap.report.numbers import pct
from tiap.report.palette import WHITE, ramp
from tiap.report.sizing import FONT_SIZE, max_width, rotated_extent, text_width
from tiap.rescore.pair_style import ordered_pairs
from tiap.rescore.report_models import RescoreReport, Share
from tiap.rescore.subsets import LABEL

#: share changed: white (0) to dark orange (1)
SHARE_STOPS = ((0.0, (255, 255, 255)), (1.0, (204, 76, 2)))


def _heat(share: float | None) -> str:
    """White (0) to dark orange (1); light grey when undefined."""
    return ramp(share, SHARE_STOPS)


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
                body.append(svg.rect(x, y, cell_w, cell_h, _heat(value), tip, stroke=WHITE))
                fill = WHITE if value is not None and value > 0.55 else "#222222"
                body.append(
                    svg.text(x + cell_w / 2, y + cell_h / 2 + 4, pct(value), "middle", fill=fill)
                )
    width = left + 2 * len(columns) * cell_w + PAD
    return svg.svg(width, top + len(rows) * cell_h + PAD, body, title)


# --- heatmaps: instability (Table 16) ----------------------------------------------------


def instability_heatmap(report: RescoreReport) -> Figure | None:
    m, large = report.parameters.primary_measure, report.parameters.large_change
    columns = ordered_pairs(report.pooled)
    rows: list[tuple[str, Sequence[Share | None]]] = [
        (run, [rr.pairs[c].instability[m].overall if c in rr.pairs else None for c in columns])
        for run, rr in report.runs.items()
    ]
    rows.append(("all runs", [report.pooled[c].instability[m].overall for c in columns]))
    title = f"Query-level instability of {m}: share of shared queries that change"
    body = share_heatmap(rows, columns, large, title)
    return Figure(body, title) if body else None


def category_heatmap(report: RescoreReport) -> Figure | None:
    m, large = report.parameters.primary_measure, report.parameters.large_change
    columns = ordered_pairs(report.pooled)
    cats = sorted({c for pp in report.pooled.values() for c in pp.instability[m].by_category})
    if not cats:
        return None
    rows: list[tuple[str, Sequence[Share | None]]] = [
        (cat, [report.pooled[c].instability[m].by_category.get(cat) for c in columns])
        for cat in cats
    ]
    title = f"Instability of {m} by query category (all runs)"
    body = share_heatmap(rows, columns, large, title)
    return Figure(body, title) if body else None


# --- winner flips -----------------------------------------------------------------------

NO_FLIP, FLIP, SIGNIFICANT = "#eeeeee", "#fdae61", "#d73027"


def winner_flip_matrix(report: RescoreReport) -> Figure | None:
    """Run x run: whether the winner on the primary measure flips between targets (colour)
    and on how many measures it flips (the number)."""
    runs = list(report.runs)
    if len(runs) < 2:
        return None
    m = report.parameters.primary_measure
    n_measures = len(report.parameters.measures)
    by_pair = {(p.run_a, p.run_b): p for p in report.run_pairs}
    cell = max(28.0, text_width(str(n_measures)) + 12)
    label_w = max_width(runs)
    h_ext, v_ext = rotated_extent(label_w)
    legend_items = [(f"no flip on {m}", NO_FLIP), ("flip", FLIP), ("significant flip", SIGNIFICANT)]
    legend_body, legend_end = svg.legend(legend_items, PAD, PAD + FONT_SIZE)
    left = PAD + label_w + 12
    top = PAD + 26 + v_ext + 6
    body = list(legend_body)
    for j, run in enumerate(runs):
        body.append(svg.rotated_text(left + j * cell + cell / 2, top - 6, run))
    for i, a in enumerate(runs):
        y = top + i * cell
        body.append(svg.text(left - 12, y + cell / 2 + 4, a, "end"))
        for j, b in enumerate(runs):
            x = left + j * cell
            if i == j:
                body.append(svg.rect(x, y, cell, cell, WHITE, stroke="#dddddd"))
                continue
            pair = by_pair.get((a, b)) or by_pair.get((b, a))
            if pair is None:
                continue
            flips = sum(pair.winner_flip.values())
            color = (
                SIGNIFICANT
                if pair.significant_flip[m]
                else FLIP
                if pair.winner_flip[m]
                else NO_FLIP
            )
            winners = ", ".join(f"{t}: {w}" for t, w in pair.winner[m].items())
            tip = (
                f"{pair.run_a} vs {pair.run_b}: winner on {m} per target: {winners}; "
                f"flips on {flips} of {n_measures} measures"
            )
            body.append(svg.rect(x, y, cell, cell, color, tip, stroke=WHITE))
            fill = WHITE if color == SIGNIFICANT else "#222222"
            body.append(svg.text(x + cell / 2, y + cell / 2 + 4, flips, "middle", fill=fill))
    width = max(left + len(runs) * cell + max(0.0, h_ext - cell / 2), legend_end) + PAD
    view = LABEL[report.parameters.subsets]
    title = (
        f"Winner flips between targets: run pairs, {view} (colour: {m}; number: measures that flip)"
    )
    return Figure(svg.svg(width, top + len(runs) * cell + PAD, body, title), title)

"""The rescoring report's figures, each an inline SVG string built from ``report.json``
(a :class:`~tiap.rescore.report_models.RescoreReport`), so ``report.html`` and the
audit's ``index.html`` draw the same figures from the same numbers.

Every builder returns a :class:`Figure` (SVG and caption), or ``None`` when the
report has nothing to draw. Labels are never trimmed: each figure's margins are
sized from its longest label (:func:`tiap.rescore.svg.text_width`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tiap.rescore import fmt, svg
from tiap.rescore.charts import (
    PAD,
    Bar,
    IntervalRow,
    Scale,
    grouped_bars,
    interval_rows,
    num,
    pct,
    share_heatmap,
    signed,
    x_axis,
)
from tiap.rescore.compare import fixed_label
from tiap.rescore.report_models import DesignFamily, RescoreReport, Share
from tiap.rescore.svg import FONT_SIZE, GRID, PALETTE, max_width, text_width

DOWN, SAME, UP = "#d95f02", "#9e9e9e", "#1b9e77"
#: the target pairs Figure 3 shows: the relaxed targets against Raw.
SHIFT_PAIRS = ("canonical-raw", "source-raw")


@dataclass(frozen=True)
class Figure:
    """One figure: its SVG and its caption (plain text)."""

    svg: str
    caption: str


# --- intervals: forest plot, saturation, coverage --------------------------------------


def _pair_color(pairs: Sequence[str], pair: str) -> str:
    return PALETTE[list(pairs).index(pair) % len(PALETTE)] if pair in pairs else PALETTE[0]


def forest_plot(report: RescoreReport) -> Figure | None:
    """The paired target differences of every run on the primary measure, with CIs."""
    m = report.parameters.primary_measure
    pairs = list(report.pooled)
    rows = []
    for run, rr in report.runs.items():
        for name, tp in rr.pairs.items():
            iv = tp.difference[m]
            if iv.mean is None:
                continue
            ci = f"[{signed(iv.ci_low, 4)}, {signed(iv.ci_high, 4)}]"
            tip = f"{run}, {name}: {signed(iv.mean, 4)} {ci}, n={iv.n}"
            rows.append(
                IntervalRow(
                    f"{run} · {name}", iv.mean, iv.ci_low, iv.ci_high, _pair_color(pairs, name), tip
                )
            )
    title = f"Paired differences B−A of {m} per run and target pair"
    body = interval_rows(rows, f"Δ {m} (B − A), {report.parameters.confidence:.0%} CI", title)
    return Figure(body, title) if body else None


def saturation_plot(report: RescoreReport) -> Figure | None:
    sat = report.saturation
    if sat is None or not sat.bins:
        return None
    m = report.parameters.primary_measure
    measure = m if m in sat.bins else next(iter(sat.bins))
    rows = [
        IntervalRow(
            f"{fmt.added(group)} (n={iv.n})",
            iv.mean,
            iv.ci_low,
            iv.ci_high,
            PALETTE[2],
            f"{sat.pair}, {fmt.added(group)} memories: n={iv.n}",
        )
        for group, iv in sat.bins[measure].items()
        if iv.mean is not None
    ]
    title = f"Mean {sat.pair} {measure} shift by memories added to Raw"
    body = interval_rows(rows, f"mean {sat.pair} shift of {measure}", title)
    return Figure(body, title) if body else None


def coverage_plot(report: RescoreReport) -> Figure | None:
    cov = report.coverage
    if cov is None:
        return None
    m = report.parameters.primary_measure
    rows = []
    for run, r in cov.runs.items():
        iv = r.gap.get(m)
        if iv is None or iv.mean is None:
            continue
        tip = f"{run}: {r.n_covered} covered, {r.n_excluded} excluded"
        rows.append(IntervalRow(run, iv.mean, iv.ci_low, iv.ci_high, PALETTE[0], tip))
    mean = cov.mean_gap.get(m)
    if mean is not None and mean.mean is not None:
        rows.append(
            IntervalRow(
                f"mean of {mean.n_runs} runs",
                mean.mean,
                mean.ci_low,
                mean.ci_high,
                PALETTE[1],
                f"mean run-level gap over {mean.n_runs} runs",
            )
        )
    title = f"Raw {m}: queries with a Canonical target minus those without"
    body = interval_rows(rows, f"gap in Raw {m} (covered − excluded)", title)
    return Figure(body, title) if body else None


# --- Figure 3: per-query shift distributions ---------------------------------------------


def shift_distribution(report: RescoreReport, pair: str) -> Figure | None:
    """Per run: the histogram of per-query ``pair`` shifts with a box plot beneath."""
    dist = report.shift_distribution
    if dist is None:
        return None
    rows = [(run, by[pair]) for run, by in dist.runs.items() if pair in by and by[pair].n]
    if not rows:
        return None
    edges = dist.edges
    row_h, plot_w = 38.0, 420.0
    labels = [run for run, _ in rows]
    counts_text = [f"n={h.n}" for _, h in rows]
    left = PAD + max_width(labels) + 12
    right = max_width(counts_text) + PAD + 12
    top = PAD
    scale = Scale(edges[0], edges[-1], left, left + plot_w)
    bottom = top + len(rows) * row_h
    body = x_axis(
        scale,
        [-1.0, -0.5, 0.0, 0.5, 1.0],
        bottom + 4,
        top,
        f"per-query {dist.measure} shift ({pair})",
    )
    body.append(
        svg.line(scale(0.0), top, scale(0.0), bottom + 4, "#333333", stroke_dasharray="3,3")
    )
    for i, (run, h) in enumerate(rows):
        y = top + i * row_h
        band = row_h - 16
        peak = max(h.counts) or 1
        body.append(svg.line(left, y + band + 2, left + plot_w, y + band + 2, GRID))
        for j, c in enumerate(h.counts):
            if not c:
                continue
            lo, hi = edges[j], edges[j + 1]
            centre = (lo + hi) / 2
            color = SAME if abs(centre) < 1e-9 else (DOWN if centre < 0 else UP)
            bar = band * math.sqrt(c / peak)
            body.append(
                svg.rect(
                    scale(lo) + 0.5,
                    y + 2 + band - bar,
                    scale(hi) - scale(lo) - 1,
                    bar,
                    color,
                    f"{run}: {c} of {h.n} queries with a shift in [{lo:.2f}, {hi:.2f})",
                )
            )
        if h.q1 is not None and h.q3 is not None and h.min is not None and h.max is not None:
            by = y + band + 8
            tip = (
                f"{run}: median {signed(h.median)}, quartiles {signed(h.q1)} to {signed(h.q3)}, "
                f"mean {signed(h.mean)}; {h.n_down} down, {h.n_zero} unchanged, {h.n_up} up"
            )
            body.append(svg.line(scale(h.min), by, scale(h.max), by, "#444444"))
            body.append(
                svg.rect(
                    scale(h.q1),
                    by - 4,
                    scale(h.q3) - scale(h.q1),
                    8,
                    "#ffffff",
                    tip,
                    stroke="#444444",
                )
            )
            if h.median is not None:
                body.append(
                    svg.line(
                        scale(h.median),
                        by - 4,
                        scale(h.median),
                        by + 4,
                        "#000000",
                        stroke_width="2",
                    )
                )
            if h.mean is not None:
                body.append(svg.circle(scale(h.mean), by, 2.5, "#000000", tip))
        body.append(
            svg.text(left - 12, y + band / 2 + 8, run, "end", tip=f"{run}: {h.n} shared queries")
        )
        body.append(svg.text(left + plot_w + 12, y + band / 2 + 8, f"n={h.n}"))
    title = f"Per-query {dist.measure} shift {pair} per run"
    caption = (
        f"{title}: histogram of queries down, unchanged and up (bar height ∝ √count, so "
        "the tails stay visible next to the unchanged queries) over a box plot (quartiles, "
        "median, mean as a dot, range)"
    )

    return Figure(svg.svg(left + plot_w + right, bottom + 48, body, title), caption)


# --- heatmaps: instability (Table 16) ----------------------------------------------------


def instability_heatmap(report: RescoreReport) -> Figure | None:
    m, large = report.parameters.primary_measure, report.parameters.large_change
    columns = list(report.pooled)
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
    columns = list(report.pooled)
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


# --- k-sensitivity ----------------------------------------------------------------------


def k_curves(report: RescoreReport) -> Figure | None:
    """Per measure family, the pooled mean shift B−A at each cut-off, one line per pair."""
    pairs = list(report.pooled)
    families = list(next(iter(report.pooled.values())).k_sensitivity) if pairs else []
    if not families:
        return None
    ks = sorted(
        {s.k for pp in report.pooled.values() for rows in pp.k_sensitivity.values() for s in rows}
    )
    shifts = [
        s.shift
        for pp in report.pooled.values()
        for rows in pp.k_sensitivity.values()
        for s in rows
        if s.shift is not None
    ]
    if not shifts:
        return None
    ticks = svg.nice_ticks(min(0.0, *shifts), max(0.0, *shifts), 4)
    plot_w = max(150.0, 60.0 * len(ks))
    plot_h = 120.0
    y_left = max_width([svg.tick_label(t) for t in ticks]) + 8
    k_labels = [f"k={k}" for k in ks]
    panel_w = y_left + plot_w + max(24.0, text_width(k_labels[-1]) / 2 + 8)
    panel_h = 22 + plot_h + 40
    per_row = max(1, min(3, len(families)))
    legend_body, legend_end = svg.legend(
        [(p, _pair_color(pairs, p)) for p in pairs], PAD, PAD + FONT_SIZE
    )
    top = PAD + 26
    body = list(legend_body)
    for f, family in enumerate(families):
        px = PAD + (f % per_row) * panel_w
        py = top + (f // per_row) * panel_h
        x0, y0 = px + y_left, py + 22
        ys = Scale(ticks[0], ticks[-1], y0 + plot_h, y0)

        def kx(i: int, x0: float = x0) -> float:
            return x0 + (plot_w * (i + 0.5) / len(ks))

        body.append(svg.text(x0 + plot_w / 2, py + 14, family, "middle", weight="bold"))
        for t in ticks:
            body.append(svg.line(x0, ys(t), x0 + plot_w, ys(t), GRID))
            body.append(svg.text(x0 - 6, ys(t) + 4, svg.tick_label(t), "end"))
        body.append(svg.line(x0, ys(0.0), x0 + plot_w, ys(0.0), "#333333", stroke_dasharray="3,3"))
        body.append(svg.line(x0, y0 + plot_h, x0 + plot_w, y0 + plot_h))
        for i, label in enumerate(k_labels):
            body.append(svg.text(kx(i), y0 + plot_h + 16, label, "middle"))
        for name, pp in report.pooled.items():
            color = _pair_color(pairs, name)
            points = [
                (kx(ks.index(s.k)), ys(s.shift), s)
                for s in pp.k_sensitivity.get(family, [])
                if s.shift is not None
            ]
            if len(points) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
                body.append(
                    f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
                )
            for x, y, s in points:
                tip = (
                    f"{name}, {s.measure}: shift {signed(s.shift, 4)} "
                    f"(relative {pct(s.relative_shift)})"
                )
                body.append(svg.circle(x, y, 3.5, color, tip))
        body.append(
            svg.text(x0 + plot_w / 2, y0 + plot_h + 34, "mean shift B − A (all runs)", "middle")
        )
    n_rows = math.ceil(len(families) / per_row)
    width = max(PAD + per_row * panel_w, legend_end) + PAD
    title = "Cut-off sensitivity: pooled mean shift B−A per cut-off"
    return Figure(svg.svg(width, top + n_rows * panel_h + PAD, body, title), title)


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
    h_ext, v_ext = svg.rotated_extent(label_w)
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
                body.append(svg.rect(x, y, cell, cell, "#ffffff", stroke="#dddddd"))
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
            body.append(svg.rect(x, y, cell, cell, color, tip, stroke="#ffffff"))
            fill = "#ffffff" if color == SIGNIFICANT else "#222222"
            body.append(svg.text(x + cell / 2, y + cell / 2 + 4, flips, "middle", fill=fill))
    width = max(left + len(runs) * cell + max(0.0, h_ext - cell / 2), legend_end) + PAD
    title = f"Winner flips between targets: run pairs (colour: {m}; number: measures that flip)"
    return Figure(svg.svg(width, top + len(runs) * cell + PAD, body, title), title)


# --- design recommendation --------------------------------------------------------------


def design_chart(report: RescoreReport, fam: DesignFamily) -> Figure | None:
    """The family's settings side by side: mean of the primary measure under each target
    on the family's shared queries; a star over the winning setting of each target."""
    m = report.parameters.primary_measure
    targets = list(fam.means)
    bars = [
        [
            Bar(
                fam.means[t][m][s.run],
                f"{fam.key} = {s.label} ({s.run}), {t}: {num(fam.means[t][m][s.run])} "
                f"(n={fam.n_shared[t]})"
                + (f"; best under {t}" if s.label in fam.winner[t][m] else ""),
                s.label in fam.winner[t][m],
            )
            for t in targets
        ]
        for s in fam.settings
    ]
    fixed = fixed_label(fam.fixed)
    title = f"Best {fam.key}" + (f" ({fixed})" if fixed else "") + f" on {m} per target"
    axis = f"{fam.key} (mean {m} on shared queries; ★ best under the target)"
    body = grouped_bars([s.label for s in fam.settings], targets, bars, axis, title)
    return Figure(body, title) if body else None


# --- collections ------------------------------------------------------------------------


def _present(figures: Sequence[Figure | None]) -> list[Figure]:
    return [f for f in figures if f is not None]


def shift_figures(report: RescoreReport) -> list[Figure]:
    pairs = [p for p in SHIFT_PAIRS if p in report.pooled] or list(report.pooled)[:2]
    return _present([shift_distribution(report, p) for p in pairs])


def key_figures(report: RescoreReport) -> list[Figure]:
    """The figures an audit's index shows: the shift distributions and the forest plot."""
    return [*shift_figures(report), *_present([forest_plot(report)])]


def key_figures_of(report_json: Path) -> list[Figure]:
    """:func:`key_figures` of a written ``report.json``; none when the file is missing or
    is not a rescoring report (e.g. written by another version)."""
    try:
        report = RescoreReport.model_validate_json(report_json.read_bytes())
    except (OSError, ValueError):
        return []
    return key_figures(report)


def section_figures(report: RescoreReport) -> dict[str, list[Figure]]:
    """Figures of ``report.html`` by the report section they follow."""
    return {
        "_differences": [*shift_figures(report), *_present([forest_plot(report)])],
        "_instability": _present([instability_heatmap(report), category_heatmap(report)]),
        "_saturation": _present([saturation_plot(report)]),
        "_cutoffs": _present([k_curves(report)]),
        "_run_pairs": _present([winner_flip_matrix(report)]),
        "_design": _present([design_chart(report, fam) for fam in report.design]),
        "_coverage": _present([coverage_plot(report)]),
    }

"""The rescoring report's figures, each an inline SVG string built from ``report.json``
(a :class:`~tiap.rescore.report_models.RescoreReport`), so ``report.html`` and the
audit's ``index.html`` draw the same figures from the same numbers.

Every builder returns a :class:`~tiap.report.blocks.Figure` (SVG and caption), or
``None`` when the report has nothing to draw. They choose what to draw; the drawing
is :mod:`tiap.report`'s (SVG primitives, charts, palette). Labels are never trimmed:
each figure's margins are sized from its longest label (:mod:`tiap.report.sizing`).
The matrices (instability, winner flips) are in :mod:`tiap.rescore.heatmaps`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from tiap.report import svg
from tiap.report.blocks import Figure
from tiap.report.charts import PAD, Bar, IntervalRow, Scale, grouped_bars, interval_rows, x_axis
from tiap.report.numbers import bounds, num, pct, signed, tick
from tiap.report.palette import GREY, GRID, PALETTE
from tiap.report.sizing import FONT_SIZE, max_width, text_width
from tiap.rescore import report_text
from tiap.rescore.answers_figures import answer_figures
from tiap.rescore.compare import fixed_label
from tiap.rescore.heatmaps import category_heatmap, instability_heatmap, winner_flip_matrix
from tiap.rescore.pair_style import ordered_pairs, pair_color
from tiap.rescore.report_models import DesignFamily, RescoreReport
from tiap.rescore.subsets import LABEL

DOWN, SAME, UP = PALETTE[1], GREY, PALETTE[0]
#: the target pairs Figure 3 shows: the relaxed targets against Raw.
SHIFT_PAIRS = ("canonical-raw", "source-raw")

# --- intervals: forest plot, saturation, coverage --------------------------------------


def _pair_color(pairs: Sequence[str], pair: str) -> str:
    return pair_color(pair, pairs)


def forest_plot(report: RescoreReport) -> Figure | None:
    """The paired target differences of every run on the primary measure, with CIs;
    each target pair in its fixed order and colour (:mod:`tiap.rescore.pair_style`)."""
    m = report.parameters.primary_measure
    pairs = ordered_pairs(report.pooled)
    rows = []
    shown: list[str] = []
    for run, rr in report.runs.items():
        for name in ordered_pairs(rr.pairs):
            iv = rr.pairs[name].difference[m]
            if iv.mean is None:
                continue
            ci = bounds(iv.ci_low, iv.ci_high, sign=True)
            tip = f"{run}, {name}: {signed(iv.mean)} {ci}, n={iv.n}"
            rows.append(
                IntervalRow(
                    f"{run} · {name}", iv.mean, iv.ci_low, iv.ci_high, _pair_color(pairs, name), tip
                )
            )
            shown.append(name)
    title = f"Paired differences B−A of {m} per run and target pair"
    legend = [(p, _pair_color(pairs, p)) for p in ordered_pairs(shown)]
    axis = f"Δ {m} (B − A), {report.parameters.confidence:.0%} CI"
    body = interval_rows(rows, axis, title, legend)
    return Figure(body, title) if body else None


def saturation_plot(report: RescoreReport) -> Figure | None:
    sat = report.saturation
    if sat is None or not sat.bins:
        return None
    m = report.parameters.primary_measure
    measure = m if m in sat.bins else next(iter(sat.bins))
    rows = [
        IntervalRow(
            f"{report_text.added(group)} (n={iv.n})",
            iv.mean,
            iv.ci_low,
            iv.ci_high,
            pair_color(sat.pair),
            f"{sat.pair}, {report_text.added(group)} memories: n={iv.n}",
        )
        for group, iv in sat.bins[measure].items()
        if iv.mean is not None
    ]
    title = f"Mean {sat.pair} {measure} shift by memories added to Raw"
    legend = [(sat.pair, pair_color(sat.pair))]
    body = interval_rows(rows, f"mean {sat.pair} shift of {measure}", title, legend)
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
    legend = [("a run", PALETTE[0]), ("mean of the runs", PALETTE[1])]
    body = interval_rows(rows, f"gap in Raw {m} (covered − excluded)", title, legend)
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
    legend_body, legend_end = svg.legend(
        [("down", DOWN), ("unchanged", SAME), ("up", UP)], PAD, PAD + FONT_SIZE
    )
    top = PAD + 26
    scale = Scale(edges[0], edges[-1], left, left + plot_w)
    bottom = top + len(rows) * row_h
    body = legend_body + x_axis(
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

    width = max(left + plot_w + right, legend_end + PAD)
    return Figure(svg.svg(width, bottom + 48, body, title), caption)


# --- k-sensitivity ----------------------------------------------------------------------


def k_curves(report: RescoreReport) -> Figure | None:
    """Per measure family, the pooled mean shift B−A at each cut-off, one line per pair."""
    pairs = ordered_pairs(report.pooled)
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
    y_left = max_width([tick(t) for t in ticks]) + 8
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
            body.append(svg.text(x0 - 6, ys(t) + 4, tick(t), "end"))
        body.append(svg.line(x0, ys(0.0), x0 + plot_w, ys(0.0), "#333333", stroke_dasharray="3,3"))
        body.append(svg.line(x0, y0 + plot_h, x0 + plot_w, y0 + plot_h))
        for i, label in enumerate(k_labels):
            body.append(svg.text(kx(i), y0 + plot_h + 16, label, "middle"))
        for name in pairs:
            pp = report.pooled[name]
            color = _pair_color(pairs, name)
            points = [
                (kx(ks.index(s.k)), ys(s.shift), s)
                for s in pp.k_sensitivity.get(family, [])
                if s.shift is not None
            ]
            if len(points) > 1:
                body.append(svg.polyline([(x, y) for x, y, _ in points], color))
            for x, y, s in points:
                tip = (
                    f"{name}, {s.measure}: shift {signed(s.shift)} "
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
    view = LABEL[report.parameters.subsets]
    title = f"Best {fam.key}" + (f" ({fixed})" if fixed else "") + f" on {m} per target, {view}"
    axis = f"{fam.key} (mean {m} on the {view}; ★ best under the target)"
    body = grouped_bars([s.label for s in fam.settings], targets, bars, axis, title)
    return Figure(body, title) if body else None


# --- collections ------------------------------------------------------------------------


def _present(figures: Sequence[Figure | None]) -> list[Figure]:
    return [f for f in figures if f is not None]


def shift_figures(report: RescoreReport) -> list[Figure]:
    pairs = [p for p in SHIFT_PAIRS if p in report.pooled] or ordered_pairs(report.pooled)[:2]
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
        "_answers": answer_figures(report),
    }

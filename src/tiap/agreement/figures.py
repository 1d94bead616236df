"""The agreement report's figures, inline SVG drawn with :mod:`tiap.report.svg`: labels per
rater (stacked bars), pairwise kappas (a heatmap) and confusion matrices.

Names and labels are shown whole: each figure's margins are sized from its longest
text (:mod:`tiap.report.sizing`, a per-character estimate that errs wide)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tiap.agreement import report_text
from tiap.agreement.models import AgreementReport, VsRater
from tiap.report import svg
from tiap.report.blocks import Figure
from tiap.report.charts import PAD, stacked_bars
from tiap.report.numbers import num
from tiap.report.palette import (
    GREY,
    LIGHT_GREY,
    PALETTE,
    WHITE,
    ramp,
    series_color,
    shading,
)
from tiap.report.sizing import max_width, rotated_extent

#: kappa <= 0 red, 0.5 yellow, 1 green
KAPPA_STOPS = ((0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80)))


def kappa_color(value: float | None) -> str:
    """Red (kappa <= 0) through yellow (0.5) to green (1); grey when undefined."""
    return ramp(value, KAPPA_STOPS)


def heatmap(names: Sequence[str], values: dict[tuple[str, str], float | None], title: str) -> str:
    """A symmetric rater x rater matrix of kappas with values in the cells.

    Rater names are shown whole: the margins are sized from the longest name, the
    column names turned 45 degrees."""
    cell = 46.0
    n = len(names)
    label_w = max_width(names)
    h_ext, v_ext = rotated_extent(label_w)
    left, top = PAD + label_w + 8, PAD + v_ext + 6
    body: list[str] = []
    for j, name in enumerate(names):
        body.append(svg.rotated_text(left + j * cell + cell / 2, top - 6, name, tip=name))
    for i, a in enumerate(names):
        y = top + i * cell
        body.append(svg.text(left - 8, y + cell / 2 + 4, a, "end", tip=a))
        for j, b in enumerate(names):
            x = left + j * cell
            v = 1.0 if i == j else values.get((a, b), values.get((b, a)))
            shown = "" if i == j else num(v)
            fill = WHITE if i == j else kappa_color(v)
            tip = f"{a} / {b}: {shown or '-'}"
            body.append(svg.rect(x, y, cell, cell, fill, tip, stroke=WHITE))
            if shown:
                body.append(svg.text(x + cell / 2, y + cell / 2 + 4, shown, "middle"))
    width = left + n * cell + max(PAD, h_ext - cell / 2 + PAD)
    return svg.svg(math.ceil(width), math.ceil(top + n * cell + PAD), body, title)


#: confusion cells: agreement (the diagonal) and disagreement, shaded by count
AGREE, DISAGREE = PALETTE[0], PALETTE[1]


def confusion_color(count: int, peak: int, agree: bool) -> str:
    """A confusion cell's colour: pale to the report palette's agreement (diagonal) or
    disagreement colour, by ``count`` out of the matrix's ``peak``."""
    return ramp(count / (peak or 1), shading(AGREE if agree else DISAGREE))


def confusion(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str) -> str:
    """A confusion matrix: rows the reference, columns the rater; darker = more, in the
    report palette's agreement and disagreement colours (with a legend). Cells are as
    wide as the longest label, which is shown whole."""
    cell = max(54.0, max_width(labels) + 10)
    left, top = 24 + max_width(labels) + 8, 60.0
    k = len(labels)
    peak = max((max(row) for row in matrix), default=0) or 1
    body = [
        svg.text(left + k * cell / 2, 14, "rater", "middle"),
        svg.rotated_text(14, top + k * cell / 2, "reference", -90, anchor="middle"),
    ]
    for j, lab in enumerate(labels):
        body.append(svg.text(left + j * cell + cell / 2, top - 8, lab, "middle", tip=lab))
    for i, row in enumerate(matrix):
        y = top + i * cell
        body.append(svg.text(left - 6, y + cell / 2 + 4, labels[i], "end", tip=labels[i]))
        for j, count in enumerate(row):
            fill = confusion_color(count, peak, i == j)
            x = left + j * cell
            tip = f"reference {labels[i]}, rater {labels[j]}: {count}"
            body.append(svg.rect(x, y, cell, cell, fill, tip, stroke=WHITE))
            body.append(svg.text(x + cell / 2, y + cell / 2 + 4, count, "middle"))
    bottom = top + k * cell + 24
    legend, legend_end = svg.legend(
        [("agreement", AGREE), ("disagreement", DISAGREE)], 24, bottom - 4
    )
    body += legend
    return svg.svg(max(left + k * cell, legend_end) + PAD, bottom + PAD, body, title)


def label_figure(r: AgreementReport) -> Figure:
    """Every rater's labels as one stacked bar (invalid and missing in grey)."""
    segments = [*r.labels, "invalid", "missing"]
    colors = [*(series_color(i) for i in range(len(r.labels))), GREY, LIGHT_GREY]
    rows = [
        (x.name, [*(x.counts[lab] for lab in r.labels), x.n_invalid, x.n_missing]) for x in r.raters
    ]
    return Figure(
        stacked_bars(rows, segments, colors, "Label distribution per rater"),
        "Label distribution per rater (invalid and missing labels in grey)",
    )


def kappa_figures(r: AgreementReport) -> list[Figure]:
    """Pairwise Cohen's kappa on each scale (with two raters or more)."""
    if len(r.included_raters) < 2:
        return []
    out = []
    for scale in report_text.scales(r):
        values: dict[tuple[str, str], float | None] = {}
        for p in r.cohen_kappa:
            values[(p.a, p.b)] = (
                p.kappa if scale == "labels" else (p.binary.kappa if p.binary else None)
            )
        out.append(
            Figure(
                heatmap(r.included_raters, values, f"Cohen's kappa ({scale})"),
                f"Pairwise Cohen's kappa on the {scale}",
            )
        )
    return out


def confusion_figures(compared: Sequence[VsRater], labels: Sequence[str]) -> list[Figure]:
    """Each compared rater's confusion matrix against the reference."""
    return [
        Figure(
            confusion(c.labels.confusion, labels, f"Confusion of {c.rater}"),
            f"{c.rater} vs reference (n={c.labels.n})",
        )
        for c in compared
    ]

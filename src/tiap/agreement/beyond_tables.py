"""The figures beyond kappa as report blocks: base rates beside the kappas, Gwet's AC1,
the ordinal rubric's section and the chance-corrected coefficients as an interval chart
(:mod:`tiap.report.charts`)."""

from __future__ import annotations

from collections.abc import Mapping

from tiap.agreement import report_text as text
from tiap.agreement.figure_model import Figure
from tiap.agreement.models import AgreementReport
from tiap.report.blocks import Block, Data, data, data_table, heading, para
from tiap.report.blocks import Figure as Drawing
from tiap.report.charts import IntervalRow, interval_rows
from tiap.report.numbers import pct
from tiap.report.palette import series_color

Table = tuple[list[str], list[list[object]]]

#: what sits beside every kappa: the labels' base rates, and why
BASE_RATE_NOTE = (
    "A kappa is read beside the labels' base rates: with one label far more common than "
    "the others, kappa can be low while raters almost always agree (the kappa paradox); "
    "Gwet's AC1 is not pulled down by a skewed base rate."
)


def rates(shares: Mapping[str, float | None]) -> str:
    """``supports 29.6%, partial 39.4%``: each label's base rate."""
    return ", ".join(f"{label} {pct(value)}" for label, value in shares.items())


def base_rate_row(r: AgreementReport) -> list[object]:
    """The figures table's row of base rates (one cell per scale)."""
    return ["Base rates of the labels", *(rates(r.base_rates.get(s, {})) for s in text.scales(r))]


def ordinal_blocks(r: AgreementReport) -> list[Block]:
    """The section of an ordinal rubric (nothing otherwise)."""
    o = r.ordinal
    if o is None:
        return []
    rows: list[list[object]] = [
        ["Gwet's AC2, linear weights", text.figure(o.gwet_ac2["linear"])],
        ["Gwet's AC2, quadratic weights", text.figure(o.gwet_ac2["quadratic"])],
        ["Krippendorff's alpha (ordinal)", text.figure(o.krippendorff_alpha)],
    ]
    out: list[Block] = [
        heading(2, "Ordered labels"),
        para("Order, first to last: ", Data(", ".join(o.order))),
        data_table(["figure", "labels"], rows),
    ]
    pairs: list[list[object]] = [[p.a, p.b, text.figure(p.kappa)] for p in o.weighted_kappa]
    pairs += [
        [rater, "reference", text.figure(f)] for rater, f in o.weighted_kappa_vs_reference.items()
    ]
    if pairs:
        out += [
            para("Cohen's quadratic-weighted kappa:"),
            data_table(["a", "b", "weighted kappa"], pairs),
        ]
    return out


def interval_row(label: str, f: Figure | None, i: int) -> IntervalRow | None:
    """A figure as a row of an interval chart (``None`` when undefined), in colour ``i``."""
    if f is None or f.value is None:
        return None
    low, high = (f.ci[0], f.ci[1]) if f.ci else (None, None)
    return IntervalRow(label, f.value, low, high, series_color(i), f"{label}: {text.figure(f)}")


#: the families of chance-corrected coefficients, in the order of their colours
COEFFICIENTS = ("Fleiss' kappa", "Krippendorff's alpha", "Gwet's AC1/AC2")


def coefficient_figure(r: AgreementReport) -> Drawing | None:
    """Every chance-corrected coefficient over the included raters with its interval, per
    scale: kappa and AC1 side by side show a skewed base rate at a glance."""
    # the colour is the coefficient's family (COEFFICIENTS), the same on every scale
    entries: list[tuple[str, Figure | None, int]] = []
    for s in text.scales(r):
        entries += [
            (f"Fleiss' kappa ({s})", r.fleiss_kappa.get(s), 0),
            (f"Krippendorff's alpha ({s})", r.krippendorff_alpha.get(s), 1),
            (f"Gwet's AC1 ({s})", r.gwet_ac1.get(s), 2),
        ]
    if r.ordinal is not None:
        entries += [
            ("Gwet's AC2, quadratic (labels)", r.ordinal.gwet_ac2["quadratic"], 2),
            ("Krippendorff's alpha, ordinal (labels)", r.ordinal.krippendorff_alpha, 1),
        ]
    rows = [row for label, f, i in entries if (row := interval_row(label, f, i))]
    legend = [(name, series_color(i)) for i, name in enumerate(COEFFICIENTS)]
    svg = interval_rows(rows, "coefficient", "Chance-corrected agreement", legend)
    if not svg:
        return None
    return Drawing(svg, "Chance-corrected agreement over the included raters, with 95% intervals")


def base_rate_lines(r: AgreementReport) -> list[Block]:
    """The base-rate note under the figures table."""
    return [para(data(BASE_RATE_NOTE))] if r.base_rates else []


__all__ = [
    "BASE_RATE_NOTE",
    "base_rate_lines",
    "base_rate_row",
    "coefficient_figure",
    "interval_row",
    "ordinal_blocks",
    "rates",
]

"""The baselines and the judges' errors as report blocks
(:mod:`tiap.agreement.reference_baselines`): each compared rater's accuracy beside the
constant predictor's, the judges' error correlations, the majority against its best
judge, and the margins as an interval chart."""

from __future__ import annotations

from tiap.agreement import report_text as text
from tiap.agreement.beyond_models import JudgeErrors
from tiap.agreement.beyond_tables import interval_row
from tiap.agreement.figure_model import Figure
from tiap.agreement.models import AgreementReport, Comparison
from tiap.agreement.report_tables import compared
from tiap.report.blocks import Block, Figures, data, data_table, heading, para
from tiap.report.blocks import Figure as Drawing
from tiap.report.charts import interval_rows
from tiap.report.numbers import num, pct, signed
from tiap.report.palette import series_color

BASELINE_NOTE = (
    "Constant predictor: always the reference's most frequent label (its accuracy is that "
    "label's share; its balanced accuracy 1 / the labels the reference gave). Margin: the "
    "rater's accuracy minus the constant predictor's, with a bootstrap interval."
)
ERRORS_NOTE = (
    "Error correlation on the cases both judges and the reference labelled: phi of the two "
    "error indicators (0: independent) and P(both wrong) / (P(a wrong) P(b wrong)) (1: "
    "independent; above 1 the judges err together, and more of them buy less)."
)


def _comparison(c: Comparison | None) -> list[object]:
    if c is None or c.baseline is None:
        return ["", "", "", "", ""]
    b = c.baseline
    constant = f"{b.majority_label or 'n/a'} {pct(b.accuracy)}"
    return [
        text.figure(c.accuracy, with_n=False),
        constant,
        text.figure(b.margin, with_n=False),
        text.figure(b.rater_balanced_accuracy, with_n=False),
        text.figure(b.balanced_margin, with_n=False),
    ]


def baseline_table(r: AgreementReport) -> tuple[list[str], list[list[object]]]:
    """Per compared rater and scale: accuracy, the constant predictor, the margins."""
    header = [
        "rater",
        "scale",
        "accuracy",
        "constant predictor",
        "margin",
        "balanced accuracy",
        "margin over 1/labels",
    ]
    rows: list[list[object]] = []
    for v in compared(r):
        for scale in text.scales(r):
            c = v.labels if scale == "labels" else v.binary
            rows.append([v.rater, scale, *_comparison(c)])
    return header, rows


def _errors(scale: str, e: JudgeErrors) -> list[Block]:
    out: list[Block] = []
    if e.error_correlation:
        rows: list[list[object]] = [
            [
                x.a,
                x.b,
                x.n,
                x.both_wrong,
                text.figure(x.phi, with_n=False),
                text.figure(x.ratio, with_n=False),
            ]
            for x in e.error_correlation
        ]
        out.append(data_table(["a", "b", "n", "both wrong", "phi", "ratio"], rows))
    m = e.majority_vs_best
    if m is not None:
        out.append(
            para(
                data(
                    f"Majority vs its best judge ({scale}): majority {num(m.majority_accuracy)}, "
                    f"{m.best_judge} {num(m.judge_accuracy)}; difference "
                    f"{signed(m.difference.value)}{text.ci(m.difference.ci)} (n={m.n}, paired "
                    "bootstrap)"
                )
            )
        )
    if e.reason and not out:
        out.append(para(data(f"{scale}: {e.reason}")))
    return out


def blocks(r: AgreementReport, *, html: bool) -> list[Block]:
    """The section under "Against the reference" (nothing without a reference)."""
    if not r.vs_reference.available:
        return []
    out: list[Block] = [
        heading(3, "Beside the constant predictor"),
        para(data(BASELINE_NOTE)),
        data_table(*baseline_table(r)),
    ]
    if r.judge_errors:
        out += [heading(3, "The judges' errors"), para(data(ERRORS_NOTE))]
        for scale, e in r.judge_errors.items():
            out += _errors(scale, e)
    if html:
        figure = margin_figure(r)
        if figure is not None:
            out.append(Figures([figure]))
    return out


def margin_figure(r: AgreementReport) -> Drawing | None:
    """Each compared rater's margin over the constant predictor, and the majority's
    difference from its best judge, with their intervals."""
    entries: list[tuple[str, Figure | None, int]] = []
    for i, scale in enumerate(text.scales(r)):
        for v in compared(r):
            c = v.labels if scale == "labels" else v.binary
            if c is not None and c.baseline is not None:
                entries.append((f"{v.rater} ({scale})", c.baseline.margin, i))
        e = r.judge_errors.get(scale)
        m = e.majority_vs_best if e is not None else None
        if m is not None:
            entries.append((f"majority - {m.best_judge} ({scale})", m.difference, 2))
    rows = [row for label, f, i in entries if (row := interval_row(label, f, i))]
    names = [f"margin ({scale})" for scale in text.scales(r)][:2]
    legend = [(name, series_color(i)) for i, name in enumerate(names)]
    legend.append(("majority - best judge", series_color(2)))
    svg = interval_rows(rows, "accuracy difference", "Margins over the constant predictor", legend)
    if not svg:
        return None
    return Drawing(
        svg,
        "Accuracy minus the constant predictor's, per rater; the majority minus its best judge",
    )

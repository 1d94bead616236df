"""``report.md`` and ``report.html`` of an agreement report: its sections as blocks
(:mod:`tiap.report.blocks`), written by the shared Markdown and HTML writers.

Every name, label, note and figure is data (:class:`~tiap.report.blocks.Data`):
made inert and escaped by the writer. The HTML has the figures
(:mod:`tiap.agreement.figures`); where it shows each compared rater's confusion
matrix as a figure, the Markdown has it as a table.
"""

from __future__ import annotations

from tiap.agreement import (
    answer_correctness,
    baseline_tables,
    beyond_tables,
    calibrated_tables,
    diagnostics_tables,
    figures,
    plan_tables,
    qrels_tables,
    report_tables,
    report_text,
)
from tiap.agreement.models import AgreementReport
from tiap.agreement.paper_sections import paper_section
from tiap.report.blocks import (
    Badge,
    Block,
    Data,
    Figures,
    bullets,
    data,
    data_table,
    heading,
    para,
)
from tiap.report.html import to_html
from tiap.report.markdown import to_markdown
from tiap.report.page import page


def _gate(r: AgreementReport) -> list[Block]:
    g = r.gate
    items = [g.note or "", *report_tables.gate_lines(r)]
    return [
        heading(2, "Scale gate: ", Badge(g.status, "pass" if g.passed else "fail")),
        bullets([*map(data, items), *(("FAILED: ", Data(f)) for f in g.failures)]),
    ]


def _reference(r: AgreementReport, html: bool) -> list[Block]:
    out: list[Block] = [heading(2, "Against the reference")]
    v = r.vs_reference
    if v.reference is not None:
        ref = v.reference
        out.append(
            bullets(
                [
                    (
                        "Reference: ",
                        Data(ref.policy),
                        " (",
                        Data(", ".join(ref.raters)),
                        f"); {ref.n_cases} cases, {ref.unresolved} unresolved",
                    )
                ]
            )
        )
    if not v.available:
        return [*out, para("No comparison: ", Data(v.reason or "no reference"))]
    out.append(data_table(*report_tables.reference(r)))
    out += baseline_tables.blocks(r, html=html)
    compared = report_tables.compared(r)
    if html:
        return [*out, Figures(figures.confusion_figures(compared, r.labels))]
    for c in compared:
        out.append(para("Confusion of ", Data(c.rater), " (labels):"))
        out.append(data_table(*report_tables.confusion(c.labels, r.labels)))
    return out


def _qrels(r: AgreementReport) -> list[Block]:
    """The relevance-label audit section (reports over qrels cases)."""
    q = r.qrels
    if q is None:
        return []
    out: list[Block] = [
        heading(2, "Relevance labels (qrels)"),
        bullets(map(data, qrels_tables.thresholds(q))),
        data_table(*qrels_tables.verdicts(q)),
        data_table(*qrels_tables.shares(q)),
    ]
    versus = qrels_tables.versus_humans(q)
    if versus is not None:
        out += [para("Panel majority against the human reference:"), data_table(*versus)]
    return out


def _answers(r: AgreementReport) -> list[Block]:
    """The share of each run's answers judged correct (reports over answer cases)."""
    a = r.answer_correctness
    if a is None:
        return []
    return [
        heading(2, "Answer correctness by run"),
        bullets([("Policy: ", Data(a.policy)), ("Majority on the ", Data(a.scale), " scale")]),
        data_table(*answer_correctness.table(a)),
    ]


def _calibrated(r: AgreementReport, html: bool) -> list[Block]:
    """Each prevalence figure against the human reference (panel, humans, PPI,
    Rogan-Gladen), with the forest plot in HTML."""
    c = r.calibrated
    out: list[Block] = [heading(2, "Calibrated prevalence")]
    if not c.available:
        return [*out, para("Not available: ", Data(c.reason or "no human reference"))]
    out += [
        bullets(map(data, calibrated_tables.lines(c))),
        data_table(*calibrated_tables.shares(c)),
    ]
    if html:
        shown = [calibrated_tables.forest(c, scale) for scale in report_text.scales(r)]
        out.append(Figures([f for f in shown if f is not None]))
    per_rater = calibrated_tables.raters(c)
    if per_rater is not None:
        out += [para("Rogan-Gladen per rater, all cases:"), data_table(*per_rater)]
    return out


def _majority(r: AgreementReport) -> list[Block]:
    m = r.majority
    out: list[Block] = [
        heading(2, "Majority vote"),
        bullets(
            [
                ("Policy: ", Data(m.policy)),
                ("Voters: ", Data(", ".join(m.voters)), f"; quorum {m.quorum}"),
            ]
        ),
        data_table(*report_tables.distribution(m.labels, "labels")),
    ]
    if m.binary is not None:
        out.append(data_table(*report_tables.distribution(m.binary, "binary")))
    return out


def blocks(r: AgreementReport, *, html: bool = False) -> list[Block]:
    """The report's sections; ``html``: with its figures (confusion matrices drawn, not
    tabled)."""
    header, pairs = report_tables.pairs(r)
    out: list[Block] = [
        heading(1, "Agreement report"),
        bullets(map(data, report_tables.summary(r))),
        *_gate(r),
        *diagnostics_tables.blocks(r.diagnostics),
        *plan_tables.blocks(r.plan, html=html),
        *_qrels(r),
        *_answers(r),
        heading(2, "Agreement"),
        data_table(*report_tables.figures(r)),
        *beyond_tables.base_rate_lines(r),
    ]
    if html:
        coefficients = beyond_tables.coefficient_figure(r)
        drawn = [figures.label_figure(r), *figures.kappa_figures(r)]
        out.append(Figures([*([coefficients] if coefficients else []), *drawn]))
    out += beyond_tables.ordinal_blocks(r)
    out += [
        heading(2, "Raters"),
        data_table(*report_tables.raters(r)),
        heading(2, "Pairwise Cohen's kappa"),
        data_table(header, pairs) if pairs else para("(fewer than two raters)"),
        *_majority(r),
        *paper_section(r),
        heading(2, "Prevalence of majority labels"),
    ]
    for title, t in report_tables.prevalence(r):
        out += [heading(3, "By ", Data(title)), data_table(*t)]
    out += _calibrated(r, html)
    out += _reference(r, html)
    if r.notes:
        out += [heading(2, "Notes"), bullets(map(data, r.notes))]
    return out


def render_markdown(r: AgreementReport) -> str:
    """``report.md``."""
    return to_markdown(blocks(r))


def render_html(r: AgreementReport) -> str:
    """``report.html``: the same sections, with figures, as one self-contained page."""
    return page("tiap agreement report", to_html(blocks(r, html=True)))

"""The qrels figures as (header, rows) tables and text lines, for the Markdown and
HTML reports and the terminal (the renderers only write them out, escaped)."""

from __future__ import annotations

from tiap.agreement.models import AgreementReport
from tiap.agreement.qrels_models import QrelsFigures, QrelsGroup, Rate, Share
from tiap.agreement.report_text import UNRELIABLE, ci, missing
from tiap.report.numbers import num

Table = tuple[list[str], list[list[object]]]

OVERALL = "all datasets"


def share_text(s: Share | None) -> str:
    """``0.950 [0.890, 0.990] (38/40 of 42)``, or ``n/a (why)``; empty without one."""
    if s is None:
        return ""
    if s.value is None:
        return missing(s.reason)
    return f"{num(s.value)}{ci(s.ci)} ({s.relevant}/{s.n} of {s.cases})"


def rate_text(r: Rate) -> str:
    if r.value is None:
        return missing(r.reason)
    return f"{num(r.value)}{ci(r.ci)}" + (f" ({UNRELIABLE})" if r.ci_unreliable else "")


def _rows(q: QrelsFigures) -> list[tuple[str, QrelsGroup]]:
    return [*q.by_dataset.items(), (OVERALL, q.overall)]


def verdicts(q: QrelsFigures) -> Table:
    """One row per dataset (then every dataset): the verdict and its two checks."""
    header = ["dataset", "verdict", "precision", "missed", "pairs", "annotated relevant"]
    header.append("negatives")
    rows: list[list[object]] = [
        [name, g.verdict, g.precision, g.missed, g.cases, g.annotated_relevant, g.negatives]
        for name, g in _rows(q)
    ]
    return header, rows


def shares(q: QrelsFigures) -> Table:
    """The shares judged relevant, by the panel majority and by the human reference."""
    header = [
        "dataset",
        "confirmed (panel)",
        "confirmed (humans)",
        "negatives found relevant (panel)",
        "negatives found relevant (humans)",
        "grade <= 0 found relevant (panel)",
    ]
    rows: list[list[object]] = [
        [
            name,
            share_text(g.confirmed),
            share_text(g.confirmed_by_reference),
            share_text(g.negatives_found_relevant) if g.negatives else "",
            share_text(g.negatives_found_relevant_by_reference) if g.negatives else "",
            share_text(g.graded_not_relevant_found_relevant) if g.annotated_not_relevant else "",
        ]
        for name, g in _rows(q)
    ]
    return header, rows


def versus_humans(q: QrelsFigures) -> Table | None:
    """The panel majority against the human reference, per dataset (None: no humans)."""
    rows: list[list[object]] = []
    for name, g in _rows(q):
        vs = g.panel_vs_reference
        if vs is not None:
            rows.append([name, vs.n, rate_text(vs.agreement), rate_text(vs.kappa)])
    if not rows:
        return None
    return ["dataset", "pairs with both", "agreement", "Cohen's kappa"], rows


def thresholds(q: QrelsFigures) -> list[str]:
    return [
        f"Relevant: the rubric's label '{q.positive_label}' (binary scale).",
        f"Thresholds: confirmed share >= {q.min_confirmed:.2f} (--min-confirmed); negatives "
        f"found relevant <= {q.max_missed:.2f} (--max-missed); a check needs a decided label "
        f"on at least {q.min_decided:.2f} of its pairs (--min-decided).",
        "Intervals: 95% Wilson score intervals for the shares and the percent agreement; "
        "the report's percentile bootstrap for the kappa.",
        f"Rule: {q.rule}.",
    ]


def lines(r: AgreementReport) -> list[str]:
    """A few lines for the terminal: each dataset's verdict and confirmed share."""
    q = r.qrels
    if q is None:
        return []
    out = []
    for name, g in _rows(q):
        text = f"qrels {name}: {g.verdict}; confirmed {share_text(g.confirmed)}"
        if g.negatives:
            text += f"; negatives found relevant {share_text(g.negatives_found_relevant)}"
        out.append(text)
    return out

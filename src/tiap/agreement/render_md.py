"""``report.md``: the agreement report as Markdown tables. Every name, label, note
and figure is escaped with :func:`tiap.text.inert_md` (controls made visible,
Markdown literal)."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement import qrels_tables, tables
from tiap.agreement.models import AgreementReport
from tiap.text import inert_md as esc


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(esc(h) for h in header) + " |"]
    out.append("|" + "|".join("---" for _ in header) + "|")
    out.extend("| " + " | ".join(esc(c) for c in row) + " |" for row in rows)
    return [*out, ""]


def _gate(r: AgreementReport) -> list[str]:
    g = r.gate
    lines = [f"## Scale gate: {g.status}", "", f"- {esc(g.note or '')}"]
    lines += [f"- {esc(line)}" for line in tables.gate_lines(r)]
    lines += [f"- FAILED: {esc(f)}" for f in g.failures]
    return [*lines, ""]


def _reference(r: AgreementReport) -> list[str]:
    lines = ["## Against the reference", ""]
    v = r.vs_reference
    if v.reference is not None:
        lines += [
            f"- Reference: {esc(v.reference.policy)} ({esc(', '.join(v.reference.raters))}); "
            f"{v.reference.n_cases} cases, {v.reference.unresolved} unresolved",
            "",
        ]
    if not v.available:
        return [*lines, f"No comparison: {esc(v.reason or 'no reference')}", ""]
    lines += table(*tables.reference(r))
    for c in tables.compared(r):
        lines += [f"Confusion of {esc(c.rater)} (labels):", ""]
        lines += table(*tables.confusion(c.labels, r.labels))
    return lines


def _qrels(r: AgreementReport) -> list[str]:
    """The relevance-label audit section (reports over qrels cases)."""
    q = r.qrels
    if q is None:
        return []
    lines = ["## Relevance labels (qrels)", ""]
    lines += [f"- {esc(t)}" for t in qrels_tables.thresholds(q)] + [""]
    lines += table(*qrels_tables.verdicts(q))
    lines += table(*qrels_tables.shares(q))
    versus = qrels_tables.versus_humans(q)
    if versus is not None:
        lines += ["Panel majority against the human reference:", "", *table(*versus)]
    return lines


def render_markdown(r: AgreementReport) -> str:
    lines = ["# Agreement report", ""]
    lines += [f"- {esc(item)}" for item in tables.summary(r)]
    lines += ["", *_gate(r)]
    lines += _qrels(r)
    lines += ["## Agreement", "", *table(*tables.figures(r))]
    lines += ["## Raters", "", *table(*tables.raters(r))]
    lines += ["## Pairwise Cohen's kappa", ""]
    header, rows = tables.pairs(r)
    lines += table(header, rows) if rows else ["(fewer than two raters)", ""]

    m = r.majority
    lines += ["## Majority vote", "", f"- Policy: {esc(m.policy)}"]
    lines += [f"- Voters: {esc(', '.join(m.voters))}; quorum {m.quorum}", ""]
    lines += table(*tables.distribution(m.labels, "labels"))
    if m.binary is not None:
        lines += table(*tables.distribution(m.binary, "binary"))

    lines += ["## Prevalence of majority labels", ""]
    for title, t in tables.prevalence(r):
        lines += [f"### By {title}", "", *table(*t)]

    lines += _reference(r)
    if r.notes:
        lines += ["## Notes", "", *(f"- {esc(n)}" for n in r.notes), ""]
    return "\n".join(lines).rstrip() + "\n"

"""``report.html``: one self-contained page (inline CSS and SVG, no scripts, no
external assets). Every name, label and note is made inert and HTML-escaped
(:func:`tiap.agreement.svg.e`)."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement import fmt, qrels_tables, svg, tables
from tiap.agreement.models import AgreementReport
from tiap.agreement.svg import e

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#fff;background:#1a9850;padding:.1em .5em;border-radius:.2em}
.fail{color:#fff;background:#d73027;padding:.1em .5em;border-radius:.2em}
.figs{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
figure{margin:0}
figcaption{font-size:.9em;color:#555}
"""


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in header)

    def cell(c: object) -> str:
        cls = ' class="num"' if isinstance(c, int | float) else ""
        return f"<td{cls}>{e(c)}</td>"

    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _ul(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{e(i)}</li>" for i in items) + "</ul>"


def _figure(svg_text: str, caption: str) -> str:
    return f"<figure>{svg_text}<figcaption>{e(caption)}</figcaption></figure>"


def _gate(r: AgreementReport) -> str:
    g = r.gate
    cls = "pass" if g.passed else "fail"
    items = [g.note or "", *tables.gate_lines(r), *(f"FAILED: {f}" for f in g.failures)]
    return f'<h2>Scale gate: <span class="{cls}">{e(g.status)}</span></h2>' + _ul(items)


def _figures(r: AgreementReport) -> str:
    segs = [*r.labels, "invalid", "missing"]
    colors = [
        *(svg.label_color(i) for i in range(len(r.labels))),
        svg.INVALID_COLOR,
        svg.MISSING_COLOR,
    ]
    rows = [
        (x.name, [*(x.counts[lab] for lab in r.labels), x.n_invalid, x.n_missing]) for x in r.raters
    ]
    parts = [
        _figure(
            svg.stacked_bars(rows, segs, colors, "Label distribution per rater"),
            "Label distribution per rater (invalid and missing labels in grey)",
        )
    ]
    for scale in fmt.scales(r):
        values: dict[tuple[str, str], float | None] = {}
        for p in r.cohen_kappa:
            values[(p.a, p.b)] = (
                p.kappa if scale == "labels" else (p.binary.kappa if p.binary else None)
            )
        if len(r.included_raters) >= 2:
            parts.append(
                _figure(
                    svg.heatmap(r.included_raters, values, f"Cohen's kappa ({scale})"),
                    f"Pairwise Cohen's kappa on the {scale}",
                )
            )
    return '<div class="figs">' + "".join(parts) + "</div>"


def _reference(r: AgreementReport) -> str:
    v = r.vs_reference
    out = ["<h2>Against the reference</h2>"]
    if v.reference is not None:
        out.append(
            _ul(
                [
                    f"Reference: {v.reference.policy} ({', '.join(v.reference.raters)}); "
                    f"{v.reference.n_cases} cases, {v.reference.unresolved} unresolved"
                ]
            )
        )
    if not v.available:
        out.append(f"<p>No comparison: {e(v.reason or 'no reference')}</p>")
        return "".join(out)
    out.append(_table(*tables.reference(r)))
    figs = [
        _figure(
            svg.confusion(c.labels.confusion, r.labels, f"Confusion of {c.rater}"),
            f"{c.rater} vs reference (n={c.labels.n})",
        )
        for c in tables.compared(r)
    ]
    out.append('<div class="figs">' + "".join(figs) + "</div>")
    return "".join(out)


def _qrels(r: AgreementReport) -> str:
    """The relevance-label audit section (reports over qrels cases)."""
    q = r.qrels
    if q is None:
        return ""
    out = ["<h2>Relevance labels (qrels)</h2>", _ul(qrels_tables.thresholds(q))]
    out += [_table(*qrels_tables.verdicts(q)), _table(*qrels_tables.shares(q))]
    versus = qrels_tables.versus_humans(q)
    if versus is not None:
        out += ["<p>Panel majority against the human reference:</p>", _table(*versus)]
    return "".join(out)


def render_html(r: AgreementReport) -> str:
    m = r.majority
    majority = _ul([f"Policy: {m.policy}", f"Voters: {', '.join(m.voters)}; quorum {m.quorum}"])
    majority += _table(*tables.distribution(m.labels, "labels"))
    if m.binary is not None:
        majority += _table(*tables.distribution(m.binary, "binary"))
    prevalence = "".join(
        f"<h3>By {e(title)}</h3>" + _table(*t) for title, t in tables.prevalence(r)
    )
    notes = f"<h2>Notes</h2>{_ul(r.notes)}" if r.notes else ""
    body = (
        f"<h1>Agreement report</h1>{_ul(tables.summary(r))}{_gate(r)}{_qrels(r)}"
        f"<h2>Agreement</h2>{_table(*tables.figures(r))}{_figures(r)}"
        f"<h2>Raters</h2>{_table(*tables.raters(r))}"
        f"<h2>Pairwise Cohen's kappa</h2>{_table(*tables.pairs(r))}"
        f"<h2>Majority vote</h2>{majority}"
        f"<h2>Prevalence of majority labels</h2>{prevalence}"
        f"{_reference(r)}{notes}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>tiap agreement report</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )

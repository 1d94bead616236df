"""``report.html``: one self-contained page (inline CSS and SVG, no scripts, no
external assets). Every name, label and note is HTML-escaped."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement import fmt, svg
from tiap.agreement.models import AgreementReport, Distribution, PrevalenceGroup
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


def _distribution(d: Distribution, what: str) -> str:
    rows: list[list[object]] = [
        [label, d.counts[label], fmt.pct(d.shares[label]), fmt.pct(d.shares_of_all[label])]
        for label in d.counts
    ]
    rows += [[k, getattr(d, k), "", ""] for k in ("ties", "no_majority", "no_quorum")]
    rows.append(["cases", d.n, "", ""])
    return _table([what, "cases", "share", "share of all"], rows)


def _prevalence(title: str, groups: dict[str, PrevalenceGroup], labels: list[str]) -> str:
    if not groups:
        return ""
    rows = [
        [
            value,
            g.labels.n,
            g.labels.decided,
            *(fmt.pct(g.labels.shares[lab]) for lab in labels),
            g.labels.ties,
            g.labels.no_majority,
            g.labels.no_quorum,
        ]
        for value, g in groups.items()
    ]
    header = [title, "cases", "decided", *labels, "ties", "no_majority", "no_quorum"]
    return f"<h3>By {e(title)}</h3>" + _table(header, rows)


def _gate(r: AgreementReport) -> str:
    g = r.gate
    cls = "pass" if g.passed else "fail"
    items = [
        g.note or "",
        f"{g.figures.scale} Fleiss' kappa over the judges ({', '.join(g.judges) or 'none'}): "
        f"{fmt.num(g.figures.fleiss_kappa)} (n={g.figures.fleiss_n}); threshold {g.min_fleiss:.2f}",
        *(
            f"{j} vs reference: {fmt.num(v)} (n={g.figures.judge_n[j]}); "
            f"threshold {g.min_judge_kappa:.2f}"
            for j, v in g.figures.judge_kappa.items()
        ),
        *(f"FAILED: {f}" for f in g.failures),
    ]
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
    for scale in ["labels", *(["binary"] if r.binary_labels else [])]:
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
    compared = [*v.raters, *([v.majority] if v.majority else [])]
    header = ["rater", "n", "kappa", "accuracy"]
    if r.binary_labels:
        header += ["binary kappa", "binary accuracy"]
    rows = []
    for c in compared:
        row: list[object] = [
            c.rater,
            c.labels.n,
            fmt.figure(c.labels.kappa, with_n=False),
            fmt.figure(c.labels.accuracy, with_n=False),
        ]
        if c.binary is not None:
            row += [
                fmt.figure(c.binary.kappa, with_n=False),
                fmt.figure(c.binary.accuracy, with_n=False),
            ]
        rows.append(row)
    out.append(_table(header, rows))
    figs = [
        _figure(
            svg.confusion(c.labels.confusion, r.labels, f"Confusion of {c.rater}"),
            f"{c.rater} vs reference (n={c.labels.n})",
        )
        for c in compared
    ]
    out.append('<div class="figs">' + "".join(figs) + "</div>")
    return "".join(out)


def render_html(r: AgreementReport) -> str:
    scales = ["labels", *(["binary"] if r.binary_labels else [])]
    summary = _ul(
        [
            f"Source: {fmt.source_line(r)}",
            f"Rubric: {fmt.rubric_line(r)}",
            f"Cases: {r.n_cases}; complete (every included rater valid): {r.n_complete}",
            f"Included raters: {', '.join(r.included_raters)}",
            f"Bootstrap: {r.bootstrap.resamples} resamples of cases, seed {r.bootstrap.seed}, "
            f"{round(100 * r.bootstrap.confidence)}% percentile intervals",
        ]
    )
    agreement = _table(
        ["figure", *scales],
        [
            [name, *(fmt.figure(getattr(r, key).get(s)) for s in scales)]
            for name, key in fmt.FIGURE_ROWS
        ],
    )
    raters = _table(
        ["rater", "kind", "included", "reference", "valid", "invalid", "missing", *r.labels],
        [
            [
                x.name,
                x.kind or "",
                "yes" if x.included else "no",
                "yes" if x.reference else "no",
                x.n_valid,
                x.n_invalid,
                x.n_missing,
                *(f"{x.counts[lab]} ({fmt.pct(x.shares[lab])})" for lab in r.labels),
            ]
            for x in r.raters
        ],
    )
    pair_header = ["a", "b", "n", "kappa", "agreement"]
    if r.binary_labels:
        pair_header += ["binary kappa", "binary agreement"]
    pair_rows = []
    for p in r.cohen_kappa:
        row: list[object] = [
            p.a,
            p.b,
            p.n,
            fmt.kappa_text(p.kappa, p.ci, p.reason),
            fmt.pct(p.agreement),
        ]
        if p.binary is not None:
            row += [
                fmt.kappa_text(p.binary.kappa, p.binary.ci, p.binary.reason),
                fmt.pct(p.binary.agreement),
            ]
        pair_rows.append(row)
    m = r.majority
    majority = _ul([f"Policy: {m.policy}", f"Voters: {', '.join(m.voters)}; quorum {m.quorum}"])
    majority += _distribution(m.labels, "labels")
    if m.binary is not None:
        majority += _distribution(m.binary, "binary")
    prevalence = "".join(
        _prevalence(t, g, r.labels)
        for t, g in (
            ("dataset", r.prevalence.by_dataset),
            ("run", r.prevalence.by_run),
            ("category", r.prevalence.by_category),
        )
    )
    notes = f"<h2>Notes</h2>{_ul(r.notes)}" if r.notes else ""
    body = (
        f"<h1>Agreement report</h1>{summary}{_gate(r)}"
        f"<h2>Agreement</h2>{agreement}{_figures(r)}"
        f"<h2>Raters</h2>{raters}"
        f"<h2>Pairwise Cohen's kappa</h2>{_table(pair_header, pair_rows)}"
        f"<h2>Majority vote</h2>{majority}"
        f"<h2>Prevalence of majority labels</h2>{prevalence}"
        f"{_reference(r)}{notes}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>tiap agreement report</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )

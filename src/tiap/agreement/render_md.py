"""``report.md``: the agreement report as Markdown tables."""

from __future__ import annotations

from collections.abc import Sequence

from tiap.agreement import fmt
from tiap.agreement.models import AgreementReport, Comparison, Distribution, PrevalenceGroup


def esc(text: object) -> str:
    """Text safe inside a Markdown table cell (no raw HTML, no cell breaks)."""
    s = " ".join(str(text).split())
    for a, b in (("\\", "\\\\"), ("|", "\\|"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;")):
        s = s.replace(a, b)
    for ch in "*`":
        s = s.replace(ch, "\\" + ch)
    return s


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(esc(h) for h in header) + " |"]
    out.append("|" + "|".join("---" for _ in header) + "|")
    out.extend("| " + " | ".join(esc(c) for c in row) + " |" for row in rows)
    return [*out, ""]


def _distribution_rows(d: Distribution) -> list[list[object]]:
    rows: list[list[object]] = [
        [label, d.counts[label], fmt.pct(d.shares[label]), fmt.pct(d.shares_of_all[label])]
        for label in d.counts
    ]
    rows += [[what, getattr(d, what), "", ""] for what in ("ties", "no_majority", "no_quorum")]
    return [*rows, ["cases", d.n, "", ""]]


def _prevalence(title: str, groups: dict[str, PrevalenceGroup], labels: list[str]) -> list[str]:
    if not groups:
        return []
    header = [title, "cases", "decided", *labels, "ties", "no_majority", "no_quorum"]
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
    return [f"### By {title}", "", *table(header, rows)]


def _confusion(title: str, c: Comparison, labels: list[str]) -> list[str]:
    header = ["reference \\ rater", *labels]
    rows = [[labels[i], *row] for i, row in enumerate(c.confusion)]
    return [f"{title}:", "", *table(header, rows)]


def render_markdown(r: AgreementReport) -> str:
    lines = ["# Agreement report", ""]
    lines += [
        f"- Source: {esc(fmt.source_line(r))}",
        f"- Rubric: {esc(fmt.rubric_line(r))}",
        f"- Cases: {r.n_cases}; complete (every included rater valid): {r.n_complete}",
        f"- Included raters: {esc(', '.join(r.included_raters))}",
        f"- Bootstrap: {r.bootstrap.resamples} resamples of cases, seed {r.bootstrap.seed}, "
        f"{round(100 * r.bootstrap.confidence)}% percentile intervals",
        "",
    ]
    g = r.gate
    lines += [f"## Scale gate: {g.status}", "", f"- {esc(g.note or '')}"]
    lines.append(
        f"- Thresholds: {g.figures.scale} Fleiss' kappa over the judges >= {g.min_fleiss:.2f}; "
        f"each judge's kappa vs the human reference >= {g.min_judge_kappa:.2f}"
    )
    lines.append(
        f"- Fleiss' kappa over the judges ({esc(', '.join(g.judges) or 'none')}): "
        f"{fmt.num(g.figures.fleiss_kappa)} (n={g.figures.fleiss_n})"
    )
    for judge, value in g.figures.judge_kappa.items():
        lines.append(
            f"- {esc(judge)} vs reference: {fmt.num(value)} (n={g.figures.judge_n[judge]})"
        )
    lines += [f"- FAILED: {esc(f)}" for f in g.failures]
    lines.append("")

    scales = ["labels", *(["binary"] if r.binary_labels else [])]
    lines += ["## Agreement", ""]
    rows = [
        [name, *(fmt.figure(getattr(r, key).get(s)) for s in scales)]
        for name, key in fmt.FIGURE_ROWS
    ]
    lines += table(["figure", *scales], rows)

    lines += ["## Raters", ""]
    header = ["rater", "kind", "included", "reference", "valid", "invalid", "missing", *r.labels]
    rows = [
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
    ]
    lines += table(header, rows)

    lines += ["## Pairwise Cohen's kappa", ""]
    header = ["a", "b", "n", "kappa", "agreement"]
    if r.binary_labels:
        header += ["binary kappa", "binary agreement"]
    rows = []
    for p in r.cohen_kappa:
        row: list[object] = [
            p.a,
            p.b,
            p.n,
            fmt.kappa_text(p.kappa, p.ci, p.reason),
            fmt.pct(p.agreement),
        ]
        if p.binary is not None:
            b = p.binary
            row += [fmt.kappa_text(b.kappa, b.ci, b.reason), fmt.pct(b.agreement)]
        rows.append(row)
    lines += table(header, rows) if rows else ["(fewer than two raters)", ""]

    m = r.majority
    lines += ["## Majority vote", "", f"- Policy: {esc(m.policy)}"]
    lines += [f"- Voters: {esc(', '.join(m.voters))}; quorum {m.quorum}", ""]
    lines += table(["labels", "cases", "share", "share of all"], _distribution_rows(m.labels))
    if m.binary is not None:
        lines += table(["binary", "cases", "share", "share of all"], _distribution_rows(m.binary))

    lines += ["## Prevalence of majority labels", ""]
    lines += _prevalence("dataset", r.prevalence.by_dataset, r.labels)
    lines += _prevalence("run", r.prevalence.by_run, r.labels)
    lines += _prevalence("category", r.prevalence.by_category, r.labels)

    lines += ["## Against the reference", ""]
    v = r.vs_reference
    if v.reference is not None:
        lines += [
            f"- Reference: {esc(v.reference.policy)} ({esc(', '.join(v.reference.raters))}); "
            f"{v.reference.n_cases} cases, {v.reference.unresolved} unresolved",
            "",
        ]
    if not v.available:
        lines += [f"No comparison: {esc(v.reason or 'no reference')}", ""]
    else:
        compared = [*v.raters, *([v.majority] if v.majority else [])]
        header = ["rater", "n", "kappa", "accuracy"]
        if r.binary_labels:
            header += ["binary kappa", "binary accuracy"]
        rows = []
        for c in compared:
            row = [c.rater, c.labels.n, fmt.figure(c.labels.kappa, with_n=False)]
            row.append(fmt.figure(c.labels.accuracy, with_n=False))
            if c.binary is not None:
                row += [
                    fmt.figure(c.binary.kappa, with_n=False),
                    fmt.figure(c.binary.accuracy, with_n=False),
                ]
            rows.append(row)
        lines += table(header, rows)
        for c in compared:
            lines += _confusion(f"Confusion of {esc(c.rater)} (labels)", c.labels, r.labels)

    if r.notes:
        lines += ["## Notes", "", *(f"- {esc(n)}" for n in r.notes), ""]
    return "\n".join(lines).rstrip() + "\n"

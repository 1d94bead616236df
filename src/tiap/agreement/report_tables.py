"""The agreement report's tables as plain (header, rows) pairs and its lists as lines, for
its sections (:mod:`tiap.agreement.sections`); numbers as :mod:`tiap.report.numbers`
writes them."""

from __future__ import annotations

from tiap.agreement import report_text as text
from tiap.agreement.beyond_tables import base_rate_row, rates
from tiap.agreement.models import (
    AgreementReport,
    Comparison,
    Distribution,
    Gate,
    PrevalenceGroup,
    VsRater,
)
from tiap.report.numbers import num, pct
from tiap.stats import RELIABLE_PERCENTILE_N

Table = tuple[list[str], list[list[object]]]

PREVALENCE_BY = ("dataset", "run", "category")


def summary(r: AgreementReport) -> list[str]:
    """The report's opening list: source, rubric, cases, raters, bootstrap."""
    b = r.bootstrap
    return [
        f"Source: {text.source_line(r)}",
        f"Rubric: {text.rubric_line(r)}",
        f"Cases: {r.n_cases}; complete (every included rater valid): {r.n_complete}",
        f"Included raters: {', '.join(r.included_raters)}",
        f"Bootstrap: {b.resamples} resamples of cases, seed {b.seed}, "
        f"{round(100 * b.confidence)}% percentile intervals, marked unreliable on fewer than "
        f"{RELIABLE_PERCENTILE_N} cases; shares (accuracy, qrels shares): "
        f"{round(100 * b.confidence)}% Wilson score intervals",
    ]


def figures(r: AgreementReport) -> Table:
    """Fleiss, Krippendorff and percent agreement, one column per scale."""
    s = text.scales(r)
    rows: list[list[object]] = [
        [name, *(text.figure(getattr(r, key).get(x)) for x in s)] for name, key in text.FIGURE_ROWS
    ]
    rows.append(base_rate_row(r))
    return ["figure", *s], rows


def raters(r: AgreementReport) -> Table:
    header = ["rater", "kind", "included", "reference", "valid", "invalid", "missing", *r.labels]
    rows: list[list[object]] = [
        [
            x.name,
            x.kind or "",
            "yes" if x.included else "no",
            "yes" if x.reference else "no",
            x.n_valid,
            x.n_invalid,
            x.n_missing,
            *(f"{x.counts[lab]} ({pct(x.shares[lab])})" for lab in r.labels),
        ]
        for x in r.raters
    ]
    return header, rows


def pairs(r: AgreementReport) -> Table:
    """Pairwise Cohen's kappa with its CI and percent agreement."""
    header = ["a", "b", "n", "kappa", "agreement", "base rates"]
    if r.binary_labels:
        header += ["binary kappa", "binary agreement", "binary base rates"]
    rows: list[list[object]] = []
    for p in r.cohen_kappa:
        row: list[object] = [
            p.a,
            p.b,
            p.n,
            text.kappa_text(p.kappa, p.ci, p.reason, p.ci_unreliable),
            pct(p.agreement),
            rates(p.base_rates),
        ]
        if p.binary is not None:
            b = p.binary
            row += [
                text.kappa_text(b.kappa, b.ci, b.reason, b.ci_unreliable),
                pct(b.agreement),
                rates(b.base_rates),
            ]
        rows.append(row)
    return header, rows


def distribution(d: Distribution, what: str) -> Table:
    """Majority labels: count, share of decided cases, share of all cases."""
    rows: list[list[object]] = [
        [label, d.counts[label], pct(d.shares[label]), pct(d.shares_of_all[label])]
        for label in d.counts
    ]
    rows += [[k, getattr(d, k), "", ""] for k in ("ties", "no_majority", "no_quorum")]
    rows.append(["cases", d.n, "", ""])
    return [what, "cases", "share", "share of all"], rows


def prevalence(r: AgreementReport) -> list[tuple[str, Table]]:
    """One table per non-empty stratum (dataset, run, category) of majority labels."""
    out = []
    for title in PREVALENCE_BY:
        groups: dict[str, PrevalenceGroup] = getattr(r.prevalence, f"by_{title}")
        if not groups:
            continue
        header = [title, "cases", "decided", *r.labels, "ties", "no_majority", "no_quorum"]
        rows: list[list[object]] = [
            [
                value,
                g.labels.n,
                g.labels.decided,
                *(pct(g.labels.shares[lab]) for lab in r.labels),
                g.labels.ties,
                g.labels.no_majority,
                g.labels.no_quorum,
            ]
            for value, g in groups.items()
        ]
        out.append((title, (header, rows)))
    return out


def compared(r: AgreementReport) -> list[VsRater]:
    """The raters (and the majority) compared with the reference."""
    v = r.vs_reference
    return [*v.raters, *([v.majority] if v.majority else [])]


def reference(r: AgreementReport) -> Table:
    """Kappa and accuracy of each compared rater against the reference."""
    header = ["rater", "n", "kappa", "AC1", "accuracy", "reference base rates"]
    if r.binary_labels:
        header += ["binary kappa", "binary AC1", "binary accuracy", "binary base rates"]
    rows: list[list[object]] = []
    for c in compared(r):
        row: list[object] = [
            c.rater,
            c.labels.n,
            text.figure(c.labels.kappa, with_n=False),
            text.figure(c.labels.ac1, with_n=False),
            text.figure(c.labels.accuracy, with_n=False),
            rates(c.labels.base_rates),
        ]
        if c.binary is not None:
            row += [
                text.figure(c.binary.kappa, with_n=False),
                text.figure(c.binary.ac1, with_n=False),
                text.figure(c.binary.accuracy, with_n=False),
                rates(c.binary.base_rates),
            ]
        rows.append(row)
    return header, rows


def confusion(c: Comparison, labels: list[str]) -> Table:
    """Rows: the reference's label; columns: the rater's."""
    return ["reference \\ rater", *labels], [[labels[i], *row] for i, row in enumerate(c.confusion)]


def gate_rule_line(g: Gate) -> str:
    """The gate's rule and whether its verdict is conclusive (every figure's interval
    wholly on one side of its threshold)."""
    why = (
        "every figure's interval lies wholly on one side of its threshold"
        if g.conclusive
        else "an interval straddles its threshold, or a figure has none"
    )
    return f"Rule: {text.gate_rule(g)} ({why})"


def gate_lines(r: AgreementReport) -> list[str]:
    """The gate's thresholds and figures, one item each (without its note and failures)."""
    g, f = r.gate, r.gate.figures
    over = (
        "the judges and the human reference"
        if g.gate_raters == "judges+reference"
        else "the judges"
    )
    lines = [
        f"Thresholds: {f.scale} Fleiss' kappa over {over} at least {g.min_fleiss:.2f}; "
        f"each judge's kappa vs the human reference at least {g.min_judge_kappa:.2f}; at least "
        f"{g.required_cases} complete cases (--min-cases {g.min_cases}, and at least half of "
        f"the subset); each judge's valid share at least {g.min_valid:.2f} (--min-valid)",
        f"Complete cases: {f.fleiss_n} of {f.cases if f.cases is not None else '?'} "
        f"(every {'judge and the human reference' if g.gate_raters != 'judges' else 'judge'} "
        "labelled validly)",
        f"Fleiss' kappa over {over} ({', '.join(g.fleiss_raters or g.judges) or 'none'}; "
        f"--gate-raters {g.gate_raters}): {num(f.fleiss_kappa)}{text.ci(f.fleiss_ci)} "
        f"(n={f.fleiss_n})",
        gate_rule_line(g),
    ]
    cases = f.cases or 0
    for judge, valid in (f.judge_valid or {}).items():
        share = num(valid / cases if cases else None)
        lines.append(f"{judge}: {valid} of {cases} cases labelled validly ({share})")
    for judge, value in f.judge_kappa.items():
        lines.append(
            f"{judge} vs reference: {num(value)}{text.ci(f.judge_ci.get(judge))} "
            f"(n={f.judge_n[judge]})"
        )
    if g.no_humans:
        lines.append("Human labels left out by choice (--no-humans): the gate is on the judges")
    elif g.reference_rubric_hash is not None:
        lines.append(f"Reference's rubric hash: {g.reference_rubric_hash[:12]}")
    for rater, n in g.other_version_labels.items():
        lines.append(f"{rater}: {n} label(s) of another rubric version left out")
    return lines

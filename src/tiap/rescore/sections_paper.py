"""``report.md`` sections of the paper's further analyses: target ordering (Table 7),
saturation of the set-size effect (Appendix I) and coverage control (Section 5.1)."""

from __future__ import annotations

from tiap.report.blocks import Block, Cell, data, heading, para, table
from tiap.report.numbers import MISSING, num, pct, yes_no
from tiap.rescore.report_models import Interval, RescoreReport
from tiap.rescore.report_text import added, ci, pct_label


def _target_order(report: RescoreReport) -> list[Block]:
    order = report.target_order
    if order is None:
        return []
    measures = report.parameters.measures
    out: list[Block] = [
        heading(2, "Target ordering"),
        para(
            "Targets best first by their means on each run's shared subset (every target "
            "non-empty), `=` for ties. Monotone is the paper's (Table 7): the scores follow "
            "Raw, Canonical, Source (Source ≥ Canonical ≥ Raw); `(!)` marks a nonmonotone "
            "ordering. Containment consistent is tiap's check (Raw and Canonical are subsets "
            "of Source: Source ≥ max(Raw, Canonical)); `(c)` marks an ordering that is not."
        ),
    ]

    def cell(run: str, m: str) -> str:
        o = order.runs[run][m]
        if o.order is None:
            return MISSING
        marks = (" (!)" if o.monotone is False else "") + (
            " (c)" if o.containment_consistent is False else ""
        )
        return o.order + marks

    out.append(
        table(
            ["run", "n", *measures],
            (
                [
                    data(run),
                    next(iter(by_m.values())).n if by_m else 0,
                    *(cell(run, m) for m in measures),
                ]
                for run, by_m in order.runs.items()
            ),
        )
    )
    seen = {(m, o.order): o for by_m in order.runs.values() for m, o in by_m.items()}
    rows: list[list[Cell]] = []
    for m in measures:
        for o, n in order.counts.get(m, {}).items():
            first = seen.get((m, o))
            rows.append(
                [
                    m,
                    o,
                    n,
                    yes_no(first.monotone if first else None),
                    yes_no(first.containment_consistent if first else None),
                ]
            )
    if rows:
        out += [
            para("Runs per ordering:"),
            table(
                ["measure", "ordering", "runs", "monotone (paper)", "containment consistent"],
                rows,
            ),
        ]
    return out


def _saturation(report: RescoreReport) -> list[Block]:
    sat, level = report.saturation, pct_label(report)
    if sat is None:
        return []
    return [
        heading(2, "Saturation of the set-size effect"),
        para(
            f"Mean {sat.pair} shift over {sat.n} (query, run) pairs by how many memories Source "
            f"adds to Raw ({sat.n_none_added} pairs add none); {level} CI per group."
        ),
        table(
            ["measure", "memories added", "n", f"mean shift [{level} CI]"],
            (
                [m, added(group), iv.n, ci(iv)]
                for m, by in sat.bins.items()
                for group, iv in by.items()
            ),
        ),
    ]


def _coverage(report: RescoreReport) -> list[Block]:
    cov, level = report.coverage, pct_label(report)
    if cov is None:
        return []
    pm = report.parameters.primary_measure
    measure = pm if any(pm in r.gap for r in cov.runs.values()) else None
    measure = measure or next((m for r in cov.runs.values() for m in r.gap), None)
    if measure is None:
        return []
    out: list[Block] = [
        heading(2, "Coverage control"),
        para(
            f"Raw {measure} of the queries with a Canonical target (covered: they enter the "
            "Canonical comparisons) and without one (excluded), per run; gap = covered − "
            f"excluded, {level} CI."
        ),
        table(
            ["run", "covered", "excluded", "Raw covered", "Raw excluded", f"gap [{level} CI]"],
            (
                [
                    data(run),
                    r.n_covered,
                    r.n_excluded,
                    num(r.means_covered[measure]),
                    num(r.means_excluded[measure]),
                    ci(r.gap[measure]),
                ]
                for run, r in cov.runs.items()
            ),
        ),
    ]
    gaps: list[list[Cell]] = [
        [
            m,
            g.n_runs,
            g.n_queries,
            ci(Interval(n=g.n_queries, mean=g.mean, ci_low=g.ci_low, ci_high=g.ci_high)),
        ]
        for m, g in cov.mean_gap.items()
    ]
    out += [
        para(
            "Mean run-level gap (runs with both groups; every run resampled over the same queries):"
        ),
        table(["measure", "runs", "queries", f"mean gap [{level} CI]"], gaps),
    ]
    cats = sorted({c for r in cov.runs.values() for c in r.categories})
    if cats:
        rows: list[list[Cell]] = []
        for run, r in cov.runs.items():
            for c in cats:
                mix = r.categories.get(c)
                if mix is None:
                    continue
                rows.append(
                    [
                        data(run),
                        data(c),
                        mix.n_covered,
                        pct(mix.n_covered / r.n_covered if r.n_covered else None),
                        mix.n_excluded,
                        pct(mix.n_excluded / r.n_excluded if r.n_excluded else None),
                    ]
                )
        out += [
            para("Category mix of the covered and the excluded queries:"),
            table(["run", "category", "covered", "share", "excluded", "share"], rows),
        ]
    return out

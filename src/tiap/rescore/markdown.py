"""The rescoring report's sections (paper Tables 2, 4, 5, 7 and 16, Section 5.1, Appendix I)
as blocks (:mod:`tiap.rescore.doc`): ``report.md`` renders them as Markdown, and
``report.html`` (:mod:`tiap.rescore.html`) renders the same blocks, with figures.

Every string from the bundle (run, store and dataset names, categories, settings,
warnings) is a :class:`~tiap.rescore.doc.Data` fragment, escaped by the renderer.
"""

from __future__ import annotations

from collections.abc import Callable

from tiap.rescore import doc
from tiap.rescore.compare import fixed_label
from tiap.rescore.doc import Block, Cell, Data, data, heading, joined, para, table
from tiap.rescore.report_models import DesignFamily, Interval, RescoreReport, Share

DASH = "–"


def _num(value: float | None, digits: int = 4) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 4) -> str:
    return DASH if value is None else f"{value:+.{digits}f}"


def _pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}%"


def _ci(iv: Interval) -> str:
    if iv.mean is None:
        return DASH
    return f"{_signed(iv.mean)} [{_signed(iv.ci_low)}, {_signed(iv.ci_high)}]"


def _share_cells(s: Share) -> list[Cell]:
    return [
        s.n,
        f"{s.n_changed} ({_pct(s.share_changed)})",
        f"{s.n_large} ({_pct(s.share_large)})",
    ]


def _pct_label(report: RescoreReport) -> str:
    """The confidence level as the headings quote it (``95%``)."""
    return f"{report.parameters.confidence:.0%}"


def _names(names: list[str]) -> tuple[doc.Fragment, ...]:
    return joined(", ", (Data(n) for n in names))


def design_title(fam: DesignFamily) -> tuple[doc.Fragment, ...]:
    """``KEY (fixed: retriever=bm25)``: the family's key and the settings it holds fixed."""
    fixed = fixed_label(fam.fixed)
    return (Data(fam.key), " (fixed: ", Data(fixed) if fixed else "nothing else", ")")


def _title(report: RescoreReport) -> list[Block]:
    p = report.parameters
    title: tuple[doc.Fragment, ...] = (Data(report.dataset),)
    if report.bundle_name:
        title += (" (", Data(report.bundle_name), ")")
    return [
        heading(1, "Target sensitivity: ", *title),
        para(
            f"{report.n_queries} queries, {len(p.runs)} runs (",
            *_names(p.runs),
            f"), targets {', '.join(p.targets)}; measures {', '.join(p.measures)}. Primary "
            f"measure: **{p.primary_measure}**. Paired bootstrap: {p.resamples} resamples, seed "
            f"{p.seed}, {_pct_label(report)} percentile intervals.",
        ),
    ]


def _means(report: RescoreReport) -> list[Block]:
    measures = report.parameters.measures
    return [
        heading(2, "Means per run and target"),
        para("Each target on its own query set (queries whose target is non-empty)."),
        table(
            ["run", "target", "n", "excluded", *measures],
            (
                [
                    data(run),
                    t,
                    s.n_evaluated,
                    s.n_empty_target,
                    *(_num(s.means[m]) for m in measures),
                ]
                for run, rr in report.runs.items()
                for t, s in rr.targets.items()
            ),
        ),
    ]


def _differences(report: RescoreReport) -> list[Block]:
    pm, pct = report.parameters.primary_measure, _pct_label(report)
    return [
        heading(2, "Paired differences on shared subsets"),
        para(f"B−A per query on queries where both targets are non-empty; {pct} CI."),
        table(
            ["run", "pair", "n shared", f"{pm} A", f"{pm} B", f"Δ {pm} [{pct} CI]"],
            (
                [
                    data(run),
                    name,
                    tp.n_shared,
                    _num(tp.means_a[pm]),
                    _num(tp.means_b[pm]),
                    _ci(tp.difference[pm]),
                ]
                for run, rr in report.runs.items()
                for name, tp in rr.pairs.items()
            ),
        ),
        para("All measures (Δ [CI]):"),
        table(
            ["run", "pair", *report.parameters.measures],
            (
                [data(run), name, *(_ci(tp.difference[m]) for m in report.parameters.measures)]
                for run, rr in report.runs.items()
                for name, tp in rr.pairs.items()
            ),
        ),
    ]


def _target_order(report: RescoreReport) -> list[Block]:
    order = report.target_order
    if order is None:
        return []
    measures = report.parameters.measures
    out: list[Block] = [
        heading(2, "Target ordering"),
        para(
            "Targets best first by their means on each run's shared subset (every target "
            "non-empty), `=` for ties; `(!)` marks an ordering that is not monotone in breadth "
            "(Raw and Canonical are subsets of Source: monotone means Source ≥ max(Raw, "
            "Canonical))."
        ),
    ]

    def cell(run: str, m: str) -> str:
        o = order.runs[run][m]
        if o.order is None:
            return DASH
        return o.order + (" (!)" if o.monotone is False else "")

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
    monotone = {(m, o.order): o.monotone for by_m in order.runs.values() for m, o in by_m.items()}
    rows: list[list[Cell]] = [
        [m, o, n, _yes_no(monotone.get((m, o)))]
        for m in measures
        for o, n in order.counts.get(m, {}).items()
    ]
    if rows:
        out += [
            para("Runs per ordering:"),
            table(["measure", "ordering", "runs", "monotone"], rows),
        ]
    return out


def _yes_no(flag: bool | None) -> str:
    return DASH if flag is None else ("yes" if flag else "no")


def _instability(report: RescoreReport) -> list[Block]:
    pm, large = report.parameters.primary_measure, report.parameters.large_change
    rows: list[list[Cell]] = [
        [data(run), name, *_share_cells(tp.instability[pm].overall)]
        for run, rr in report.runs.items()
        for name, tp in rr.pairs.items()
    ]
    rows += [
        ["all runs", name, *_share_cells(pp.instability[pm].overall)]
        for name, pp in report.pooled.items()
    ]
    out: list[Block] = [
        heading(2, "Query-level instability"),
        para(
            f"Shared queries whose {pm} changes between the two targets, and by at least {large:g}."
        ),
        table(["run", "pair", "n shared", "changed", f"|Δ| ≥ {large:g}"], rows),
    ]
    cat_rows = [
        [data(cat), name, *_share_cells(s)]
        for name, pp in report.pooled.items()
        for cat, s in pp.instability[pm].by_category.items()
    ]
    if cat_rows:
        out += [
            para("By query category (all runs):"),
            table(["category", "pair", "n", "changed", f"|Δ| ≥ {large:g}"], cat_rows),
        ]
    return out


def _confound(report: RescoreReport) -> list[Block]:
    pm = report.parameters.primary_measure
    return [
        heading(2, "Set-size confound"),
        para(
            f"Pearson r between |B|−|A| and the B−A {pm} shift over (query, run) pairs; "
            "mean shift and one-sample t where B has exactly one more memory."
        ),
        table(
            ["pair", "n", "r", "p", "r²", "n (+1)", "mean shift (+1)", "t", "p (t)"],
            (
                [
                    name,
                    c.n,
                    _num(c.pearson_r, 3),
                    _num(c.p_value, 4),
                    _num(c.r_squared, 3),
                    c.one_added.n,
                    _signed(c.one_added.mean_shift),
                    _num(c.one_added.t, 2),
                    _num(c.one_added.p_value, 4),
                ]
                for name, pp in report.pooled.items()
                for c in [pp.confound[pm]]
            ),
        ),
    ]


def _saturation(report: RescoreReport) -> list[Block]:
    sat, pct = report.saturation, _pct_label(report)
    if sat is None:
        return []
    return [
        heading(2, "Saturation of the set-size effect"),
        para(
            f"Mean {sat.pair} shift over {sat.n} (query, run) pairs by how many memories Source "
            f"adds to Raw ({sat.n_none_added} pairs add none); {pct} CI per group."
        ),
        table(
            ["measure", "memories added", "n", f"mean shift [{pct} CI]"],
            (
                [m, f"+{added}", iv.n, _ci(iv)]
                for m, by in sat.bins.items()
                for added, iv in by.items()
            ),
        ),
    ]


def _cutoffs(report: RescoreReport) -> list[Block]:
    return [
        heading(2, "Cut-off sensitivity"),
        para("All runs pooled; relative shift = (B−A)/A."),
        table(
            ["pair", "measure", "mean A", "mean B", "shift", "relative"],
            (
                [
                    name,
                    ks.measure,
                    _num(ks.mean_a),
                    _num(ks.mean_b),
                    _signed(ks.shift),
                    _pct(ks.relative_shift),
                ]
                for name, pp in report.pooled.items()
                for rows_k in pp.k_sensitivity.values()
                for ks in rows_k
            ),
        ),
    ]


def _run_pairs(report: RescoreReport) -> list[Block]:
    pm, pct = report.parameters.primary_measure, _pct_label(report)
    return [
        heading(2, "Run comparisons and winner flips"),
        para(f"run_a − run_b on queries where the target is non-empty for both runs; {pct} CI."),
        table(
            ["run A", "run B", "target", "n", f"Δ {pm} [{pct} CI]", "winner"],
            (
                [
                    data(rp.run_a),
                    data(rp.run_b),
                    t,
                    rt.n_shared,
                    _ci(rt.difference[pm]),
                    data(rp.winner[pm][t]) if t in rp.winner[pm] else DASH,
                ]
                for rp in report.run_pairs
                for t, rt in rp.targets.items()
            ),
        ),
        *_winner_flips(report),
    ]


def _per_target(winners: dict[str, str]) -> tuple[doc.Fragment, ...]:
    """``raw: A, source: B``, the run names as data."""
    return tuple(
        part
        for i, (t, w) in enumerate(winners.items())
        for part in ((", " if i else "") + f"{t}: ", Data(w))
    )


def _winner_flips(report: RescoreReport) -> list[Block]:
    pm = report.parameters.primary_measure
    flips = [
        [
            data(rp.run_a),
            data(rp.run_b),
            ("yes (significant)" if rp.significant_flip[pm] else "yes")
            if rp.winner_flip[pm]
            else "no",
            _per_target(rp.winner[pm]),
            ", ".join(m for m in report.parameters.measures if rp.winner_flip[m]),
        ]
        for rp in report.run_pairs
        if any(rp.winner_flip.values())
    ]
    if not flips:
        return [para("No winner flips.")]
    n_flips = sum(sum(rp.winner_flip.values()) for rp in report.run_pairs)
    return [
        para(f"Winner flips ({n_flips} over all run pairs and measures):"),
        table(
            ["run A", "run B", f"flip on {pm}", f"winner on {pm} per target", "measures that flip"],
            flips,
        ),
    ]


def _design(report: RescoreReport) -> list[Block]:
    out: list[Block] = [heading(2, "Design recommendation")]
    if not report.design:
        out.append(para("No runs differ in exactly one setting."))
    for fam in report.design:
        out += _design_family(report, fam)
    return out


def _winners(labels: list[str]) -> Cell:
    return joined(", ", (Data(w) for w in labels)) if labels else DASH


def _design_family(report: RescoreReport, fam: DesignFamily) -> list[Block]:
    pm = report.parameters.primary_measure
    labels: list[Cell] = [(Data(s.label), " (", Data(s.run), ")") for s in fam.settings]
    return [
        heading(3, *design_title(fam)),
        table(
            ["target", "n", *labels, "winner"],
            (
                [
                    t,
                    fam.n_shared[t],
                    *(_num(fam.means[t][pm][s.run]) for s in fam.settings),
                    _winners(fam.winner[t][pm]),
                ]
                for t in fam.means
            ),
        ),
        para("Winning ", Data(fam.key), " per measure:"),
        table(
            ["measure", *fam.means, "flip"],
            (
                [
                    m,
                    *(_winners(fam.winner[t][m]) for t in fam.means),
                    "yes" if fam.winner_flip[m] else "no",
                ]
                for m in report.parameters.measures
            ),
        ),
    ]


def _coverage(report: RescoreReport) -> list[Block]:
    cov, pct = report.coverage, _pct_label(report)
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
            f"excluded, {pct} CI."
        ),
        table(
            ["run", "covered", "excluded", "Raw covered", "Raw excluded", f"gap [{pct} CI]"],
            (
                [
                    data(run),
                    r.n_covered,
                    r.n_excluded,
                    _num(r.means_covered[measure]),
                    _num(r.means_excluded[measure]),
                    _ci(r.gap[measure]),
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
            _ci(Interval(n=g.n_queries, mean=g.mean, ci_low=g.ci_low, ci_high=g.ci_high)),
        ]
        for m, g in cov.mean_gap.items()
    ]
    out += [
        para(
            "Mean run-level gap (runs with both groups; every run resampled over the same queries):"
        ),
        table(["measure", "runs", "queries", f"mean gap [{pct} CI]"], gaps),
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
                        _pct(mix.n_covered / r.n_covered if r.n_covered else None),
                        mix.n_excluded,
                        _pct(mix.n_excluded / r.n_excluded if r.n_excluded else None),
                    ]
                )
        out += [
            para("Category mix of the covered and the excluded queries:"),
            table(["run", "category", "covered", "share", "excluded", "share"], rows),
        ]
    return out


def _exclusions(report: RescoreReport) -> list[Block]:
    targets = report.parameters.targets
    out: list[Block] = [
        heading(2, "Exclusions"),
        para("Queries with an empty target are left out of that target's figures."),
        table(
            [
                "run",
                "store",
                *(f"empty {t}" for t in targets),
                "missing from run",
                "rankings with repeats",
            ],
            (
                [
                    data(run),
                    data(rr.store),
                    *(rr.targets[t].n_empty_target for t in targets),
                    rr.n_missing_queries,
                    rr.n_rankings_with_repeats,
                ]
                for run, rr in report.runs.items()
            ),
        ),
        para(f"Bundle warnings: {report.warnings.count}."),
    ]
    if report.warnings.messages:
        out.append(doc.Bullets([(Data(w),) for w in report.warnings.messages[:20]]))
    return out


def _conventions(report: RescoreReport) -> list[Block]:
    items: list[tuple[doc.Fragment, ...]] = [
        (f"**{k}**: {v}",) for k, v in report.conventions.items()
    ]
    for name, part in (
        ("coverage", report.coverage),
        ("target_order", report.target_order),
        ("saturation", report.saturation),
        ("shift_distribution", report.shift_distribution),
    ):
        if part is not None:
            items.append((f"**{name}**: {part.method}",))
    return [heading(2, "Conventions"), doc.Bullets(items)]


Section = Callable[[RescoreReport], list[Block]]

#: The report's sections, in order.
SECTIONS: tuple[Section, ...] = (
    _title,
    _means,
    _differences,
    _target_order,
    _instability,
    _confound,
    _saturation,
    _cutoffs,
    _run_pairs,
    _design,
    _coverage,
    _exclusions,
    _conventions,
)


def blocks(report: RescoreReport) -> list[Block]:
    return [b for section in SECTIONS for b in section(report)]


def render(report: RescoreReport) -> str:
    """``report.md``: every section of :data:`SECTIONS` in turn."""
    return "\n".join(doc.to_markdown(blocks(report))).rstrip() + "\n"

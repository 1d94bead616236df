"""The rescoring report's sections (paper Tables 2, 4, 5, 7 and 16, Section 5.1, Appendix I)
as blocks (:mod:`tiap.report.blocks`): ``report.md`` writes them as Markdown, and
``report.html`` (:mod:`tiap.rescore.report_html`) writes the same blocks, with figures.

Every string from the bundle (run, store and dataset names, categories, settings,
warnings) is a :class:`~tiap.report.blocks.Data` fragment, escaped by the writer.
"""

from __future__ import annotations

from collections.abc import Callable

from tiap.report.blocks import (
    Block,
    Bullets,
    Cell,
    Data,
    Fragment,
    data,
    heading,
    joined,
    para,
    table,
)
from tiap.report.markdown import to_markdown
from tiap.report.numbers import MISSING, num, pct, signed
from tiap.rescore.compare import fixed_label
from tiap.rescore.report_models import DesignFamily, RescoreReport, Share
from tiap.rescore.report_text import ci, pct_label
from tiap.rescore.sections_answers import _answers
from tiap.rescore.sections_paper import _coverage, _saturation, _target_order
from tiap.rescore.sections_pooling import pooled_label, pooled_note
from tiap.rescore.sections_subsets import _subsets, view_description, view_label


def _share_cells(s: Share) -> list[Cell]:
    return [
        s.n,
        f"{s.n_changed} ({pct(s.share_changed)})",
        f"{s.n_large} ({pct(s.share_large)})",
    ]


def _names(names: list[str]) -> tuple[Fragment, ...]:
    return joined(", ", (Data(n) for n in names))


def design_title(fam: DesignFamily) -> tuple[Fragment, ...]:
    """``KEY (fixed: retriever=bm25)``: the family's key and the settings it holds fixed."""
    fixed = fixed_label(fam.fixed)
    return (Data(fam.key), " (fixed: ", Data(fixed) if fixed else "nothing else", ")")


def _title(report: RescoreReport) -> list[Block]:
    p = report.parameters
    title: tuple[Fragment, ...] = (Data(report.dataset),)
    if report.bundle_name:
        title += (" (", Data(report.bundle_name), ")")
    return [
        heading(1, "Target sensitivity: ", *title),
        para(
            f"{report.n_queries} queries, {len(p.runs)} runs (",
            *_names(p.runs),
            f"), targets {', '.join(p.targets)}; measures {', '.join(p.measures)}. Primary "
            f"measure: **{p.primary_measure}**. Paired bootstrap: {p.resamples} resamples, seed "
            f"{p.seed}, {pct_label(report)} percentile intervals.",
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
                    *(num(s.means[m]) for m in measures),
                ]
                for run, rr in report.runs.items()
                for t, s in rr.targets.items()
            ),
        ),
    ]


def _differences(report: RescoreReport) -> list[Block]:
    pm, level = report.parameters.primary_measure, pct_label(report)
    return [
        heading(2, "Paired differences on shared subsets"),
        para(f"B−A per query on queries where both targets are non-empty; {level} CI."),
        table(
            ["run", "pair", "n shared", f"{pm} A", f"{pm} B", f"Δ {pm} [{level} CI]"],
            (
                [
                    data(run),
                    name,
                    tp.n_shared,
                    num(tp.means_a[pm]),
                    num(tp.means_b[pm]),
                    ci(tp.difference[pm]),
                ]
                for run, rr in report.runs.items()
                for name, tp in rr.pairs.items()
            ),
        ),
        para("All measures (Δ [CI]):"),
        table(
            ["run", "pair", *report.parameters.measures],
            (
                [data(run), name, *(ci(tp.difference[m]) for m in report.parameters.measures)]
                for run, rr in report.runs.items()
                for name, tp in rr.pairs.items()
            ),
        ),
    ]


def _instability(report: RescoreReport) -> list[Block]:
    pm, large = report.parameters.primary_measure, report.parameters.large_change
    rows: list[list[Cell]] = [
        [data(run), name, *_share_cells(tp.instability[pm].overall)]
        for run, rr in report.runs.items()
        for name, tp in rr.pairs.items()
    ]
    rows += [
        [pooled_label(report), name, *_share_cells(pp.instability[pm].overall)]
        for name, pp in report.pooled.items()
    ]
    out: list[Block] = [
        heading(2, "Query-level instability"),
        para(
            f"Shared queries whose {pm} changes between the two targets, and by at least {large:g}."
        ),
        *pooled_note(report),
        table(["run", "pair", "n shared", "changed", f"|Δ| ≥ {large:g}"], rows),
    ]
    cat_rows = [
        [data(cat), name, *_share_cells(s)]
        for name, pp in report.pooled.items()
        for cat, s in pp.instability[pm].by_category.items()
    ]
    if cat_rows:
        out += [
            para(f"By query category ({pooled_label(report)}):"),
            table(["category", "pair", "n", "changed", f"|Δ| ≥ {large:g}"], cat_rows),
        ]
    return out


def _confound(report: RescoreReport) -> list[Block]:
    pm = report.parameters.primary_measure
    return [
        heading(2, "Set-size confound"),
        para(
            f"Pearson r between |B|−|A| and the B−A {pm} shift over (query, run) pairs "
            f"({pooled_label(report)}); mean shift and one-sample t where B has exactly one "
            "more memory."
        ),
        *pooled_note(report),
        table(
            ["pair", "n", "r", "p", "r²", "n (+1)", "mean shift (+1)", "t", "p (t)"],
            (
                [
                    name,
                    c.n,
                    num(c.pearson_r),
                    num(c.p_value),
                    num(c.r_squared),
                    c.one_added.n,
                    signed(c.one_added.mean_shift),
                    num(c.one_added.t),
                    num(c.one_added.p_value),
                ]
                for name, pp in report.pooled.items()
                for c in [pp.confound[pm]]
            ),
        ),
    ]


def _cutoffs(report: RescoreReport) -> list[Block]:
    return [
        heading(2, "Cut-off sensitivity"),
        para(f"Pooled: {pooled_label(report)}; relative shift = (B−A)/A."),
        table(
            ["pair", "measure", "mean A", "mean B", "shift", "relative"],
            (
                [
                    name,
                    ks.measure,
                    num(ks.mean_a),
                    num(ks.mean_b),
                    signed(ks.shift),
                    pct(ks.relative_shift),
                ]
                for name, pp in report.pooled.items()
                for rows_k in pp.k_sensitivity.values()
                for ks in rows_k
            ),
        ),
    ]


def _run_pairs(report: RescoreReport) -> list[Block]:
    pm, level = report.parameters.primary_measure, pct_label(report)
    view = view_label(report)
    return [
        heading(2, "Run comparisons and winner flips"),
        para(f"run_a − run_b on the {view_description(report)}; {level} CI."),
        table(
            ["run A", "run B", "target", f"n ({view})", f"Δ {pm} [{level} CI]", "winner"],
            (
                [
                    data(rp.run_a),
                    data(rp.run_b),
                    t,
                    rt.n_shared,
                    ci(rt.difference[pm]),
                    data(rp.winner[pm][t]) if t in rp.winner[pm] else MISSING,
                ]
                for rp in report.run_pairs
                for t, rt in rp.targets.items()
            ),
        ),
        *_winner_flips(report),
    ]


def _per_target(winners: dict[str, str]) -> tuple[Fragment, ...]:
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
            [
                "run A",
                "run B",
                f"flip on {pm} ({view_label(report)})",
                f"winner on {pm} per target",
                "measures that flip",
            ],
            flips,
        ),
    ]


def _design(report: RescoreReport) -> list[Block]:
    out: list[Block] = [heading(2, "Design recommendation")]
    if report.design:
        out.append(para(f"Means and winners on the {view_description(report)}."))
    if not report.design:
        out.append(para("No runs differ in exactly one setting."))
    for fam in report.design:
        out += _design_family(report, fam)
    return out


def _winners(labels: list[str]) -> Cell:
    return joined(", ", (Data(w) for w in labels)) if labels else MISSING


def _design_family(report: RescoreReport, fam: DesignFamily) -> list[Block]:
    pm = report.parameters.primary_measure
    labels: list[Cell] = [(Data(s.label), " (", Data(s.run), ")") for s in fam.settings]
    return [
        heading(3, *design_title(fam)),
        table(
            ["target", f"n ({view_label(report)})", *labels, "winner"],
            (
                [
                    t,
                    fam.n_shared[t],
                    *(num(fam.means[t][pm][s.run]) for s in fam.settings),
                    _winners(fam.winner[t][pm]),
                ]
                for t in fam.means
            ),
        ),
        para("Winning ", Data(fam.key), f" per measure ({view_label(report)}):"),
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
        out.append(Bullets([(Data(w),) for w in report.warnings.messages[:20]]))
    return out


def _conventions(report: RescoreReport) -> list[Block]:
    items: list[tuple[Fragment, ...]] = [(f"**{k}**: {v}",) for k, v in report.conventions.items()]
    for name, part in (
        ("coverage", report.coverage),
        ("target_order", report.target_order),
        ("saturation", report.saturation),
        ("shift_distribution", report.shift_distribution),
        ("answers", report.answers),
    ):
        if part is not None:
            items.append((f"**{name}**: {part.method}",))
    return [heading(2, "Conventions"), Bullets(items)]


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
    _subsets,
    _coverage,
    _answers,
    _exclusions,
    _conventions,
)


def blocks(report: RescoreReport) -> list[Block]:
    return [b for section in SECTIONS for b in section(report)]


def render(report: RescoreReport) -> str:
    """``report.md``: every section of :data:`SECTIONS` in turn."""
    return to_markdown(blocks(report))

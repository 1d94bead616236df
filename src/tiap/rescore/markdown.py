"""``report.md``: the rescoring report as Markdown tables (paper Tables 2, 4 and 5)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

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


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _share_cells(s: Share) -> list[str]:
    return [
        str(s.n),
        f"{s.n_changed} ({_pct(s.share_changed)})",
        f"{s.n_large} ({_pct(s.share_large)})",
    ]


def _pct_label(report: RescoreReport) -> str:
    """The confidence level as the headings quote it (``95%``)."""
    return f"{report.parameters.confidence:.0%}"


def _title(report: RescoreReport) -> list[str]:
    p = report.parameters
    title = report.dataset + (f" ({report.bundle_name})" if report.bundle_name else "")
    return [
        f"# Target sensitivity: {title}",
        "",
        f"{report.n_queries} queries, {len(p.runs)} runs ({', '.join(p.runs)}), targets "
        f"{', '.join(p.targets)}; measures {', '.join(p.measures)}. Primary measure: "
        f"**{p.primary_measure}**. Paired bootstrap: {p.resamples} resamples, seed {p.seed}, "
        f"{_pct_label(report)} percentile intervals.",
        "",
    ]


def _means(report: RescoreReport) -> list[str]:
    measures = report.parameters.measures
    out = [
        "## Means per run and target",
        "",
        "Each target on its own query set (queries whose target is non-empty).",
        "",
    ]
    return out + table(
        ["run", "target", "n", "excluded", *measures],
        (
            [run, t, s.n_evaluated, s.n_empty_target, *(_num(s.means[m]) for m in measures)]
            for run, rr in report.runs.items()
            for t, s in rr.targets.items()
        ),
    )


def _differences(report: RescoreReport) -> list[str]:
    pm, pct = report.parameters.primary_measure, _pct_label(report)
    out = [
        "## Paired differences on shared subsets",
        "",
        f"B−A per query on queries where both targets are non-empty; {pct} CI.",
        "",
    ]
    out += table(
        ["run", "pair", "n shared", f"{pm} A", f"{pm} B", f"Δ {pm} [{pct} CI]"],
        (
            [
                run,
                name,
                tp.n_shared,
                _num(tp.means_a[pm]),
                _num(tp.means_b[pm]),
                _ci(tp.difference[pm]),
            ]
            for run, rr in report.runs.items()
            for name, tp in rr.pairs.items()
        ),
    )
    out += ["All measures (Δ [CI]):", ""]
    return out + table(
        ["run", "pair", *report.parameters.measures],
        (
            [run, name, *(_ci(tp.difference[m]) for m in report.parameters.measures)]
            for run, rr in report.runs.items()
            for name, tp in rr.pairs.items()
        ),
    )


def _instability(report: RescoreReport) -> list[str]:
    pm, large = report.parameters.primary_measure, report.parameters.large_change
    out = [
        "## Query-level instability",
        "",
        f"Shared queries whose {pm} changes between the two targets, and by at least {large:g}.",
        "",
    ]
    rows = [
        [run, name, *_share_cells(tp.instability[pm].overall)]
        for run, rr in report.runs.items()
        for name, tp in rr.pairs.items()
    ]
    rows += [
        ["all runs", name, *_share_cells(pp.instability[pm].overall)]
        for name, pp in report.pooled.items()
    ]
    out += table(["run", "pair", "n shared", "changed", f"|Δ| ≥ {large:g}"], rows)
    cat_rows = [
        [cat, name, *_share_cells(s)]
        for name, pp in report.pooled.items()
        for cat, s in pp.instability[pm].by_category.items()
    ]
    if cat_rows:
        out += ["By query category (all runs):", ""]
        out += table(["category", "pair", "n", "changed", f"|Δ| ≥ {large:g}"], cat_rows)
    return out


def _confound(report: RescoreReport) -> list[str]:
    pm = report.parameters.primary_measure
    out = [
        "## Set-size confound",
        "",
        f"Pearson r between |B|−|A| and the B−A {pm} shift over (query, run) pairs; "
        "mean shift and one-sample t where B has exactly one more memory.",
        "",
    ]
    return out + table(
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
    )


def _cutoffs(report: RescoreReport) -> list[str]:
    out = ["## Cut-off sensitivity", "", "All runs pooled; relative shift = (B−A)/A.", ""]
    return out + table(
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
    )


def _run_pairs(report: RescoreReport) -> list[str]:
    pm, pct = report.parameters.primary_measure, _pct_label(report)
    out = [
        "## Run comparisons and winner flips",
        "",
        f"run_a − run_b on queries where the target is non-empty for both runs; {pct} CI.",
        "",
    ]
    out += table(
        ["run A", "run B", "target", "n", f"Δ {pm} [{pct} CI]", "winner"],
        (
            [rp.run_a, rp.run_b, t, rt.n_shared, _ci(rt.difference[pm]), rp.winner[pm].get(t, DASH)]
            for rp in report.run_pairs
            for t, rt in rp.targets.items()
        ),
    )
    return out + _winner_flips(report)


def _winner_flips(report: RescoreReport) -> list[str]:
    pm = report.parameters.primary_measure
    flips = [
        [
            rp.run_a,
            rp.run_b,
            ("yes (significant)" if rp.significant_flip[pm] else "yes")
            if rp.winner_flip[pm]
            else "no",
            ", ".join(f"{t}: {w}" for t, w in rp.winner[pm].items()),
            ", ".join(m for m in report.parameters.measures if rp.winner_flip[m]),
        ]
        for rp in report.run_pairs
        if any(rp.winner_flip.values())
    ]
    if not flips:
        return ["No winner flips.", ""]
    n_flips = sum(sum(rp.winner_flip.values()) for rp in report.run_pairs)
    out = [f"Winner flips ({n_flips} over all run pairs and measures):", ""]
    return out + table(
        ["run A", "run B", f"flip on {pm}", f"winner on {pm} per target", "measures that flip"],
        flips,
    )


def _design(report: RescoreReport) -> list[str]:
    out = ["## Design recommendation", ""]
    if not report.design:
        out += ["No runs differ in exactly one setting.", ""]
    for fam in report.design:
        out += _design_family(report, fam)
    return out


def _design_family(report: RescoreReport, fam: DesignFamily) -> list[str]:
    pm = report.parameters.primary_measure
    fixed = ", ".join(f"{k}={v}" for k, v in sorted(fam.fixed.items())) or "nothing else"
    out = [f"### {fam.key} (fixed: {fixed})", ""]
    labels = [f"{s.label} ({s.run})" for s in fam.settings]
    out += table(
        ["target", "n", *labels, "winner"],
        (
            [
                t,
                fam.n_shared[t],
                *(_num(fam.means[t][pm][s.run]) for s in fam.settings),
                ", ".join(fam.winner[t][pm]) or DASH,
            ]
            for t in fam.means
        ),
    )
    out += [f"Winning {fam.key} per measure:", ""]
    return out + table(
        ["measure", *fam.means, "flip"],
        (
            [
                m,
                *(", ".join(fam.winner[t][m]) or DASH for t in fam.means),
                "yes" if fam.winner_flip[m] else "no",
            ]
            for m in report.parameters.measures
        ),
    )


def _exclusions(report: RescoreReport) -> list[str]:
    targets = report.parameters.targets
    out = [
        "## Exclusions",
        "",
        "Queries with an empty target are left out of that target's figures.",
        "",
    ]
    out += table(
        [
            "run",
            "store",
            *(f"empty {t}" for t in targets),
            "missing from run",
            "rankings with repeats",
        ],
        (
            [
                run,
                rr.store,
                *(rr.targets[t].n_empty_target for t in targets),
                rr.n_missing_queries,
                rr.n_rankings_with_repeats,
            ]
            for run, rr in report.runs.items()
        ),
    )
    out += [f"Bundle warnings: {report.warnings.count}.", ""]
    out += [f"- {w}" for w in report.warnings.messages[:20]]
    if report.warnings.messages:
        out.append("")
    return out


def _conventions(report: RescoreReport) -> list[str]:
    return ["## Conventions", "", *(f"- **{k}**: {v}" for k, v in report.conventions.items())]


#: The report's sections, in order.
SECTIONS: tuple[Callable[[RescoreReport], list[str]], ...] = (
    _title,
    _means,
    _differences,
    _instability,
    _confound,
    _cutoffs,
    _run_pairs,
    _design,
    _exclusions,
    _conventions,
)


def render(report: RescoreReport) -> str:
    """``report.md``: every section of :data:`SECTIONS` in turn."""
    out = [line for section in SECTIONS for line in section(report)]
    return "\n".join(out).rstrip() + "\n"

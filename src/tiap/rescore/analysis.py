"""Assemble the rescoring report from a :class:`~tiap.rescore.scores.ScoreTable`."""

from __future__ import annotations

from collections import Counter

from tiap.rescore import (
    answer_analysis,
    compare,
    coverage,
    ordering,
    pooling,
    sensitivity,
    shifts,
    subsets,
)
from tiap.rescore.common import NO_CATEGORY, Settings
from tiap.rescore.report_models import (
    DesignFamily,
    Headline,
    HeadlineDesign,
    HeadlineFlip,
    OtherSubsets,
    Parameters,
    PooledPair,
    RescoreReport,
    RunPair,
    RunReport,
    Warnings,
)
from tiap.rescore.scores import ScoreTable
from tiap.rescore.targets import get_target
from tiap.stats.bootstrap import Progress
from tiap.stats.paired import BootstrapBatch
from tiap.traces.bundle import Bundle

#: Most bundle warnings quoted in the report (all are counted).
MAX_WARNINGS_LISTED = 100


def conventions(settings: Settings) -> dict[str, str]:
    """The conventions the figures follow, as quoted in report.json and report.md."""
    pct = f"{settings.confidence:.0%}"
    return {
        "relevance": "binary: gain 1 for every member of the target, 0 otherwise",
        "targets": "; ".join(f"{t}: {get_target(t).description}" for t in settings.targets),
        "ranking": (
            "the order given in the run; a memory listed again later counts once, at its "
            "first rank (later copies are dropped and the ranks close up); a query missing "
            "from a run has an empty ranking (every measure 0)"
        ),
        "measures": (
            "trec_eval conventions (equal to pytrec_eval): ndcg@k = ndcg_cut.k (log2 discount, "
            "ideal ranking cut at k); recall@k = recall.k; p@k = P.k (divides by k); "
            "map@k = map_cut.k (divides by the target size); mrr@k = recip_rank of the run cut "
            "at k; hit@k = success.k"
        ),
        "empty_target": (
            "a query whose target is empty is excluded from that target's means and "
            "comparisons (counted in 'exclusions'); its per_query.csv rows have "
            "target_size 0 and empty measure cells"
        ),
        "shared_subset": (
            "target pairs: queries where both targets are non-empty for the run; run pairs "
            "and design families: the "
            + subsets.LABEL[settings.subsets]
            + ", "
            + subsets.DESCRIPTION[settings.subsets]
            + f" (the {subsets.LABEL[subsets.other(settings.subsets)]} beside it)"
        ),
        "differences": (
            "target pair B-A is B minus A per query; run pair is run_a minus run_b; paired "
            f"bootstrap {pct} percentile interval, {settings.resamples} resamples, seed "
            f"{settings.seed}, each comparison resampled from the same seed"
        ),
        "instability": (
            f"share of shared queries whose value changes by more than "
            f"{settings.change_tolerance:g}, and by at least {settings.large_change:g}"
        ),
        "confound": (
            "Pearson r (two-sided p) between |B|-|A| and the B-A shift over (query, run) "
            "pairs; one_added: mean shift and one-sample t test where |B|-|A| = 1"
        ),
        "k_sensitivity": "relative shift = (mean B - mean A) / mean A on the shared subset",
        "winner_flip": (
            "the run_a-run_b difference is positive under one target and negative under "
            "another; significant when both intervals exclude 0"
        ),
        "design": (
            "runs equal in every setting (store config, run config, retriever) but one key; "
            "the winner is the setting with the highest mean"
        ),
    }


def _headline(
    report_runs: dict[str, RunReport],
    pooled: dict[str, PooledPair],
    run_pairs: list[RunPair],
    design: list[DesignFamily],
    settings: Settings,
) -> Headline:
    m = str(settings.primary)
    flips = [
        HeadlineFlip(run_a=p.run_a, run_b=p.run_b, winners=p.winner[m])
        for p in run_pairs
        if p.winner_flip[m]
    ]
    return Headline(
        measure=m,
        instability={name: pair.instability[m].overall for name, pair in pooled.items()},
        differences={
            run: {name: pair.difference[m] for name, pair in rr.pairs.items()}
            for run, rr in report_runs.items()
        },
        winner_flips=flips,
        n_winner_flips_all_measures=sum(sum(p.winner_flip.values()) for p in run_pairs),
        design=[
            HeadlineDesign(
                key=f.key,
                fixed=f.fixed,
                winner={t: w[m] for t, w in f.winner.items()},
                winner_flip=f.winner_flip[m],
            )
            for f in design
        ],
        subsets=settings.subsets,
    )


def _compared_n(pairs: list[RunPair], design: list[DesignFamily]) -> list[list[int]]:
    """How many queries each run pair and design family compares per target."""
    return [[t.n_shared for t in p.targets.values()] for p in pairs] + [
        list(f.n_shared.values()) for f in design
    ]


def _relative(message: str, bundle: Bundle) -> str:
    if bundle.root is None:
        return message
    prefix = f"{bundle.root}/"
    return message[len(prefix) :] if message.startswith(prefix) else message


def build_report(
    bundle: Bundle, table: ScoreTable, settings: Settings, *, progress: Progress | None = None
) -> RescoreReport:
    """Every figure of the rescoring report (bootstraps included; ``progress(done,
    total)`` follows their resamples)."""
    batch = BootstrapBatch(
        resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence
    )
    sensitivity.plan_bootstrap(table, batch)
    views = (settings.subsets, subsets.other(settings.subsets))
    for view in views:
        compare.plan_bootstrap(table, batch, view)
    coverage.plan_bootstrap(table, batch, settings)
    shifts.plan_bootstrap(table, batch, settings)
    batch.compute(progress)

    runs: dict[str, RunReport] = {}
    for run, scores in table.runs.items():
        rc = bundle.config.runs[run]
        runs[run] = RunReport(
            run=run,
            store=scores.store,
            retriever=rc.retriever,
            settings=compare.run_settings(bundle, run),
            n_queries=len(table.query_ids),
            n_missing_queries=int((~scores.present).sum()),
            n_rankings_with_repeats=int((scores.repeats > 0).sum()),
            n_repeated_memories=int(scores.repeats.sum()),
            targets=sensitivity.target_summaries(scores, settings),
            shared_all=sensitivity.shared_all(scores, settings),
            pairs=sensitivity.run_pairs_report(table, run, batch, settings),
        )
    pooled_runs = pooling.pooled_runs(bundle, list(table.runs), settings.pool_raw_only)
    pooled = sensitivity.pooled_report(table, settings, pooled_runs.runs)
    run_pairs = compare.run_pair_reports(table, batch, settings, views[0])
    design = compare.design_reports(bundle, table, settings, views[0])
    other_pairs = compare.run_pair_reports(table, batch, settings, views[1])
    other_design = compare.design_reports(bundle, table, settings, views[1])
    other = OtherSubsets(
        subsets=views[1],
        differs=_compared_n(run_pairs, design) != _compared_n(other_pairs, other_design),
        run_pairs=other_pairs,
        design=other_design,
    )
    warnings = [_relative(w, bundle) for w in bundle.warnings]
    cov = coverage.coverage_report(table, settings, batch)
    categories = Counter(NO_CATEGORY if c is None else c for c in table.categories)
    return RescoreReport(
        dataset=bundle.config.dataset,
        bundle_name=bundle.config.name,
        n_queries=len(table.query_ids),
        categories=dict(sorted(categories.items())) if any(table.categories) else {},
        parameters=Parameters(
            ks=sorted({m.k for m in settings.measures}),
            measures=settings.names,
            primary_measure=str(settings.primary),
            targets=list(settings.targets),
            runs=list(table.runs),
            resamples=settings.resamples,
            seed=settings.seed,
            confidence=settings.confidence,
            change_tolerance=settings.change_tolerance,
            large_change=settings.large_change,
            subsets=settings.subsets,
            pool_raw_only=settings.pool_raw_only,
        ),
        conventions=conventions(settings),
        warnings=Warnings(count=len(warnings), messages=warnings[:MAX_WARNINGS_LISTED]),
        exclusions={
            run: {t: s.n_empty_target for t, s in rr.targets.items()} for run, rr in runs.items()
        },
        runs=runs,
        pooled=pooled,
        run_pairs=run_pairs,
        design=design,
        headline=_headline(runs, pooled, run_pairs, design, settings),
        coverage=cov,
        target_order=ordering.ordering_report(runs, settings),
        saturation=shifts.saturation_report(table, settings, batch),
        shift_distribution=shifts.distribution_report(table, settings),
        other_subsets=other,
        pooled_runs=pooled_runs,
        answers=answer_analysis.answers_report(bundle, table, settings, cov),
    )

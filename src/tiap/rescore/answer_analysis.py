"""Answer-level analysis (the paper's Section 5.5 and Appendix E): does the credited
target predict the quality of the answers a system gives?

For each run whose entries carry answers (``answer`` in ``runs/NAME.jsonl``: imported
from a system's export, or made by ``tiap answers extract``), every query with a gold
answer (``queries.jsonl`` ``answer`` non-empty, not an abstention question) and an
answer in the run is *scored*: answer F1 and exact match as LoCoMo's evaluation
computes them (:mod:`tiap.traces.answer_scoring`; LoCoMo's category rules where the
query carries its category code). Over the scored queries of each run:

- **answer F1** (mean, bootstrap percentile interval) and **exact match** (share,
  Wilson interval);
- **correlations**: per target, Pearson r and Spearman rho between the per-query
  target score (the primary measure) and answer F1, over the scored queries whose
  target is non-empty, each with a bootstrap percentile interval (pairs resampled,
  :mod:`tiap.stats.correlation`); the *best* target is the one with the highest
  Pearson r (ties: the earlier target), and its *margin* over each other target is the
  difference of their Pearson r on the *matched* queries (every target with a
  correlation non-empty), both from the same resamples, with its interval: a best target
  whose margins' intervals hold 0 is not clearly better;
- **hit groups**: over the scored queries with both a Raw and a Canonical target,
  the mean answer F1 of the queries whose Raw target is hit in the top k and Canonical
  not (``raw_only``), the reverse (``canonical_only``), both, and neither, with
  bootstrap intervals (k: the primary measure's cut-off; a target is hit when the
  primary measure is above 0, which with binary gains is hit@k);
- **coverage control on answers**: mean answer F1 of the covered queries (with a
  Canonical target) minus that of the excluded ones, over the scored queries with a
  Raw target (the groups of :mod:`tiap.rescore.coverage`), with its bootstrap interval,
  beside the coverage control's Raw-score gap.

Each run's ``method`` says how its answers were made, when ``tiap answers extract``
recorded it and the run file is still the one it wrote (:mod:`tiap.traces.answer_record`);
else it is ``null``.

Every interval resamples from the report's seed with its resamples; a figure over
fewer than two queries has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tiap.errors import TiapError
from tiap.rescore.answer_models import (
    AnswerCorrelation,
    AnswerGap,
    AnswerRun,
    Answers,
    CorrelationMargin,
    ExactMatch,
    MeanF1,
)
from tiap.rescore.common import Settings, rnd
from tiap.rescore.report_models import Coverage
from tiap.rescore.scores import ScoreTable
from tiap.rescore.targets import CANONICAL, RAW
from tiap.stats.correlation import bootstrap_correlation, bootstrap_mean, correlation_differences
from tiap.stats.intervals import share_interval
from tiap.traces.answer_record import answers_method
from tiap.traces.answer_scoring import answer_scores
from tiap.traces.bundle import Bundle
from tiap.traces.extractive import run_file

SCORING = (
    "LoCoMo's evaluation: commas, punctuation and the words a/an/the/and removed, lower "
    "case, Porter-stemmed token F1; exact match = the same set of normalised tokens; LoCoMo "
    "queries by category (1: comma-separated parts, 3: gold up to ';', 5: 1 when the answer "
    "says 'no information available' or 'not mentioned')"
)
METHOD = (
    "per run, over the queries with a gold answer and an answer in the run: mean answer F1 "
    "and exact match; per target, Pearson and Spearman between the per-query {measure} and "
    "answer F1 over the queries with that target (best: highest Pearson r; its margin over "
    "each other target paired on the queries where all are non-empty); mean answer F1 "
    "of the queries hit (primary measure > 0, i.e. {hit}) by Raw only, Canonical only, both "
    "or neither, over the queries with both targets; the coverage control's answer-F1 gap "
    "(covered - excluded) beside its {measure} gap; percentile bootstrap intervals"
)
HIT_GROUPS = ("raw_only", "canonical_only", "both", "neither")


@dataclass(frozen=True)
class _Scored:
    """One run's scored queries: positions in the table, F1, exact match."""

    rows: np.ndarray
    f1: np.ndarray
    exact: np.ndarray
    n_answers: int
    n_no_gold: int
    n_abstention: int


def _score_run(bundle: Bundle, table: ScoreTable, run: str) -> _Scored | None:
    answers = {e.query_id: e.answer for e in bundle.runs[run] if e.answer is not None}
    if not answers:
        return None
    rows: list[int] = []
    f1: list[float] = []
    exact: list[bool] = []
    no_gold = abstention = 0
    for i, qid in enumerate(table.query_ids):
        query = bundle.query_by_id[qid]
        if query.abstention:
            abstention += 1
            continue
        if not query.answer.strip():
            no_gold += 1
            continue
        if qid not in answers:
            continue
        score, match = answer_scores(answers[qid], query.answer, query.metadata)
        rows.append(i)
        f1.append(score)
        exact.append(match)
    return _Scored(
        rows=np.asarray(rows, dtype=np.intp),
        f1=np.asarray(f1, dtype=np.float64),
        exact=np.asarray(exact, dtype=bool),
        n_answers=len(answers),
        n_no_gold=no_gold,
        n_abstention=abstention,
    )


def _mean(values: np.ndarray, settings: Settings) -> MeanF1:
    if values.size < 2:
        mean = rnd(values.mean()) if values.size else None
        return MeanF1(n=int(values.size), mean=mean, ci_low=None, ci_high=None)
    m = bootstrap_mean(
        values, resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence
    )
    return MeanF1(n=m.n, mean=rnd(m.mean), ci_low=rnd(m.low), ci_high=rnd(m.high))


def _exact(exact: np.ndarray, settings: Settings) -> ExactMatch:
    n, k = int(exact.size), int(exact.sum())
    if n == 0:
        return ExactMatch(n=0, n_exact=0, share=None, ci_low=None, ci_high=None)
    low, high = share_interval(k, n, confidence=settings.confidence)
    return ExactMatch(n=n, n_exact=k, share=rnd(k / n), ci_low=rnd(low), ci_high=rnd(high))


def _target_values(table: ScoreTable, run: str, target: str, col: int) -> np.ndarray:
    """The primary measure per query under ``target`` (``nan`` where it is empty)."""
    return table.runs[run].values[target][:, col]


def _correlation(score: np.ndarray, f1: np.ndarray, settings: Settings) -> AnswerCorrelation:
    kept = ~np.isnan(score)
    c = bootstrap_correlation(
        score[kept],
        f1[kept],
        resamples=settings.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    return AnswerCorrelation(
        n=c.n,
        pearson=rnd(c.pearson),
        pearson_ci_low=rnd(c.pearson_low),
        pearson_ci_high=rnd(c.pearson_high),
        spearman=rnd(c.spearman),
        spearman_ci_low=rnd(c.spearman_low),
        spearman_ci_high=rnd(c.spearman_high),
    )


def best_target(correlations: dict[str, AnswerCorrelation]) -> str | None:
    """The target with the highest Pearson r (the earlier one on a tie), or ``None``."""
    best, best_r = None, -np.inf
    for target, c in correlations.items():
        if c.pearson is not None and c.pearson > best_r:
            best, best_r = target, c.pearson
    return best


def _margins(
    scores: dict[str, np.ndarray],
    f1: np.ndarray,
    correlations: dict[str, AnswerCorrelation],
    best: str | None,
    settings: Settings,
) -> dict[str, CorrelationMargin]:
    """The best target's Pearson r minus each other target's, paired on the queries where
    every target with a correlation is non-empty."""
    compared = [t for t, c in correlations.items() if c.pearson is not None]
    if best is None or len(compared) < 2:
        return {}
    xs = np.column_stack([scores[t] for t in compared])
    matched = ~np.isnan(xs).any(axis=1)
    differences = correlation_differences(
        xs[matched],
        f1[matched],
        compared.index(best),
        resamples=settings.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    others = [t for t in compared if t != best]
    return {
        t: CorrelationMargin(n=d.n, difference=rnd(d.mean), ci_low=rnd(d.low), ci_high=rnd(d.high))
        for t, d in zip(others, differences, strict=True)
    }


def _hits(
    raw: np.ndarray, canonical: np.ndarray, f1: np.ndarray, settings: Settings
) -> dict[str, MeanF1]:
    both_targets = ~np.isnan(raw) & ~np.isnan(canonical)
    raw_hit, canonical_hit = raw > 0, canonical > 0
    groups = {
        "raw_only": raw_hit & ~canonical_hit,
        "canonical_only": canonical_hit & ~raw_hit,
        "both": raw_hit & canonical_hit,
        "neither": ~raw_hit & ~canonical_hit,
    }
    return {name: _mean(f1[both_targets & mask], settings) for name, mask in groups.items()}


def _coverage_gap(
    table: ScoreTable,
    run: str,
    scored: _Scored,
    coverage: Coverage | None,
    measure: str,
    settings: Settings,
) -> AnswerGap | None:
    if coverage is None or run not in coverage.runs:
        return None
    sizes = table.runs[run].sizes
    has_raw = sizes[RAW][scored.rows] > 0
    covered = has_raw & (sizes[CANONICAL][scored.rows] > 0)
    excluded = has_raw & ~covered
    f1_cov, f1_exc = scored.f1[covered], scored.f1[excluded]
    gap = _gap_interval(f1_cov, f1_exc, settings)
    score = coverage.runs[run].gap.get(measure)
    return AnswerGap(
        n_covered=int(covered.sum()),
        n_excluded=int(excluded.sum()),
        f1_covered=rnd(f1_cov.mean()) if f1_cov.size else None,
        f1_excluded=rnd(f1_exc.mean()) if f1_exc.size else None,
        gap=gap[0],
        ci_low=gap[1],
        ci_high=gap[2],
        score_gap=None if score is None else score.mean,
        score_ci_low=None if score is None else score.ci_low,
        score_ci_high=None if score is None else score.ci_high,
    )


def _gap_interval(
    covered: np.ndarray, excluded: np.ndarray, settings: Settings
) -> tuple[float | None, float | None, float | None]:
    """mean(covered) - mean(excluded) and its percentile interval: both groups resampled
    together over their union (a resample without one of them gives no value)."""
    from tiap.stats.bootstrap import Draws, collect
    from tiap.stats.paired import ratio_of

    if covered.size == 0 or excluded.size == 0:
        return None, None, None
    observed = float(covered.mean() - excluded.mean())
    values = np.concatenate([covered, excluded])
    in_covered = np.r_[np.ones(covered.size), np.zeros(excluded.size)]
    block = np.column_stack([values * in_covered, values * (1 - in_covered), in_covered])
    block = np.column_stack([block, 1 - in_covered])

    def statistic(counts: np.ndarray) -> np.ndarray:
        means = counts @ block
        ratios = ratio_of(means, 2)
        return (ratios[:, 0] - ratios[:, 1])[:, None]

    result = collect(
        Draws(values.size, settings.resamples, settings.seed),
        statistic,
        1,
        confidence=settings.confidence,
    )
    low, high = result.bounds()
    return rnd(observed), rnd(low[0]), rnd(high[0])


def answers_made_by(bundle: Bundle, run: str) -> str | None:
    """How the run's answers were made, when recorded (:mod:`tiap.traces.answer_record`)."""
    if bundle.root is None:
        return None
    try:
        path = run_file(bundle, run)
    except TiapError:
        return None
    return answers_method(bundle, run, path)


def _run_report(
    table: ScoreTable,
    run: str,
    scored: _Scored,
    coverage: Coverage | None,
    settings: Settings,
    method: str | None = None,
) -> AnswerRun:
    col = table.column(settings.primary)
    measure = str(settings.primary)
    scores = {t: _target_values(table, run, t, col)[scored.rows] for t in table.targets}
    correlations = {t: _correlation(scores[t], scored.f1, settings) for t in table.targets}
    best = best_target(correlations)
    hits: dict[str, MeanF1] = {}
    if RAW in table.targets and CANONICAL in table.targets:
        raw = _target_values(table, run, RAW, col)[scored.rows]
        canonical = _target_values(table, run, CANONICAL, col)[scored.rows]
        hits = _hits(raw, canonical, scored.f1, settings)
    return AnswerRun(
        n_queries=len(table.query_ids),
        n_answers=scored.n_answers,
        method=method,
        n_scored=int(scored.rows.size),
        n_no_gold=scored.n_no_gold,
        n_abstention=scored.n_abstention,
        f1=_mean(scored.f1, settings),
        exact_match=_exact(scored.exact, settings),
        correlations=correlations,
        best_target=best,
        best_margin=_margins(scores, scored.f1, correlations, best, settings),
        hits=hits,
        coverage=_coverage_gap(table, run, scored, coverage, measure, settings),
    )


def answers_report(
    bundle: Bundle, table: ScoreTable, settings: Settings, coverage: Coverage | None
) -> Answers | None:
    """The answer-level analysis of every run with answers; ``None`` when no analysed
    run carries an answer (the report is then as without this analysis)."""
    scored = {run: _score_run(bundle, table, run) for run in table.runs}
    with_answers = {run: s for run, s in scored.items() if s is not None}
    if not with_answers:
        return None
    measure = str(settings.primary)
    hit = f"hit@{settings.primary.k}"
    return Answers(
        scoring=SCORING,
        measure=measure,
        hit_measure=hit,
        method=METHOD.format(measure=measure, hit=hit),
        runs={
            run: _run_report(table, run, s, coverage, settings, answers_made_by(bundle, run))
            for run, s in with_answers.items()
        },
        runs_without_answers=_without(list(table.runs), with_answers),
    )


def _without(runs: Sequence[str], with_answers: dict[str, _Scored]) -> list[str]:
    return [run for run in runs if run not in with_answers]

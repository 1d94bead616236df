"""Coverage control (the paper's Section 5.1): are the queries left out of the Canonical
comparisons easier or harder than those kept?

The Canonical comparisons use only the queries whose Canonical target is non-empty
(*covered*); the others (*excluded*: the store holds no canonical descendant of
their evidence) drop out. Per run, over the queries with a Raw target, this
compares the Raw score of the covered queries with that of the excluded ones:
``gap = mean Raw(covered) - mean Raw(excluded)`` per measure (every nDCG measure
and the primary one). A gap near zero says the exclusion does not select easier or
harder queries under the untouched Raw target.

Intervals are percentile bootstraps as elsewhere in the report (``resamples``,
``seed``, the draws of :mod:`tiap.stats.bootstrap`, shared through the report's batch): a
run's gap resamples its Raw-scored queries; the *mean run-level gap* (the mean of the
gaps of every run with both groups non-empty) resamples the queries once for every
run, so the runs stay paired on the same queries. A resample in which one group of a
run draws no query gives no gap and is left out of that interval's percentiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from tiap.rescore.common import Categories, Settings, column_means, rnd
from tiap.rescore.report_models import CategoryMix, Coverage, CoverageRun, Interval, MeanGap
from tiap.rescore.scores import ScoreTable
from tiap.rescore.targets import CANONICAL, RAW
from tiap.stats.paired import BootstrapBatch, ratio_of

METHOD = (
    "per run, mean Raw score of the queries with a Canonical target (covered) minus that of "
    "the queries without one (excluded), over the queries with a Raw target; the mean "
    "run-level gap averages the runs with both groups, every run resampled over the same "
    "queries; resamples where a group draws no query are left out of the percentiles"
)


def _groups(table: ScoreTable, run: str) -> tuple[np.ndarray, np.ndarray]:
    """(covered, excluded) masks over every query of the table, for one run."""
    sizes = table.runs[run].sizes
    scored = sizes[RAW] > 0
    has = sizes[CANONICAL] > 0
    return scored & has, scored & ~has


@dataclass(frozen=True)
class _Draw:
    """Runs resampled together over the queries of ``rows``."""

    key: tuple[str, ...]
    rows: np.ndarray
    runs: list[str]


def _layout(table: ScoreTable) -> tuple[list[str], list[_Draw], _Draw | None]:
    """The runs with both groups; their draws (runs scoring the same queries together);
    and the union draw of the mean gap when those runs do not all score the same queries
    (else the mean gap averages the runs' own resamples, already paired)."""
    both = []
    for run in table.runs:
        covered, excluded = _groups(table, run)
        if covered.any() and excluded.any():
            both.append(run)
    by_rows: dict[bytes, list[str]] = {}
    rows: dict[bytes, np.ndarray] = {}
    for run in both:
        covered, excluded = _groups(table, run)
        scored = covered | excluded
        by_rows.setdefault(scored.tobytes(), []).append(run)
        rows.setdefault(scored.tobytes(), scored)
    draws = [
        _Draw(("coverage", str(i)), rows[k], members)
        for i, (k, members) in enumerate(by_rows.items())
    ]
    union = None
    if len(draws) > 1:
        union = _Draw(("coverage", "union"), np.logical_or.reduce([d.rows for d in draws]), both)
    return both, draws, union


def _block(table: ScoreTable, runs: list[str], cols: list[int]) -> np.ndarray:
    """``queries x 2·(runs·2·measures)``: per run and group (covered, excluded) the Raw
    values inside the group, then the group indicators: the sums and counts whose
    resampled ratios are the groups' resampled means."""
    width = len(cols)
    sums, counts = [], []
    for run in runs:
        raw = np.nan_to_num(table.runs[run].values[RAW][:, cols])
        for group in _groups(table, run):
            g = group.astype(np.float64)[:, None]
            sums.append(raw * g)
            counts.append(np.repeat(g, width, axis=1))
    return np.hstack(sums + counts)


def _gaps(means: np.ndarray, n_runs: int, width: int) -> np.ndarray:
    """``(resamples, runs, measures)`` covered-minus-excluded gaps from a block's
    resample means."""
    ratios = ratio_of(means, n_runs * 2 * width).reshape(means.shape[0], n_runs, 2, width)
    return ratios[:, :, 0, :] - ratios[:, :, 1, :]


def _run_gaps(means: np.ndarray, n_runs: int, width: int, with_mean: bool) -> np.ndarray:
    """Each run's gaps (``runs·measures`` columns, run by run) and, ``with_mean``, their
    mean over the runs (``measures`` more): the runs of one draw, paired on its
    resamples."""
    gaps = _gaps(means, n_runs, width)
    parts = [gaps.reshape(means.shape[0], n_runs * width)]
    if with_mean:
        parts.append(np.mean([gaps[:, i, :] for i in range(n_runs)], axis=0))
    return np.hstack(parts)


def _union_gap(means: np.ndarray, n_runs: int, width: int) -> np.ndarray:
    """The mean over the runs of their gaps, every run resampled over the same queries."""
    return _gaps(means, n_runs, width).mean(axis=1)


def plan_bootstrap(table: ScoreTable, batch: BootstrapBatch, settings: Settings) -> None:
    """Register the coverage resamples with the report's bootstrap batch."""
    if RAW not in table.targets or CANONICAL not in table.targets:
        return
    cols = settings.focus()
    width = len(cols)
    _, draws, union = _layout(table)
    alone = union is None and len(draws) == 1  # the mean gap comes from the one draw
    for draw in draws:
        runs = len(draw.runs)
        batch.add_statistic(
            draw.key,
            draw.rows,
            _block(table, draw.runs, cols),
            partial(_run_gaps, n_runs=runs, width=width, with_mean=alone),
            runs * width + (width if alone else 0),
        )
    if union is not None:
        batch.add_statistic(
            union.key,
            union.rows,
            _block(table, union.runs, cols),
            partial(_union_gap, n_runs=len(union.runs), width=width),
            width,
        )


def _category_mix(
    cats: Categories | None, covered: np.ndarray, excluded: np.ndarray
) -> dict[str, CategoryMix]:
    if cats is None:
        return {}
    n_cov = np.bincount(cats.codes[covered], minlength=len(cats.labels))
    n_exc = np.bincount(cats.codes[excluded], minlength=len(cats.labels))
    return {
        label: CategoryMix(n_covered=int(n_cov[i]), n_excluded=int(n_exc[i]))
        for i, label in enumerate(cats.labels)
        if n_cov[i] or n_exc[i]
    }


def _run_report(
    table: ScoreTable,
    run: str,
    cols: list[int],
    names: list[str],
    bounds: tuple[np.ndarray, np.ndarray] | None,
) -> CoverageRun:
    covered, excluded = _groups(table, run)
    scored = covered | excluded
    raw = table.runs[run].values[RAW][:, cols]
    n = int(scored.sum())
    gap = {m: Interval(n=n, mean=None, ci_low=None, ci_high=None) for m in names}
    if bounds is not None:
        obs = raw[covered].mean(axis=0) - raw[excluded].mean(axis=0)
        low, high = bounds
        gap = {
            m: Interval(n=n, mean=rnd(obs[j]), ci_low=rnd(low[j]), ci_high=rnd(high[j]))
            for j, m in enumerate(names)
        }
    return CoverageRun(
        n_raw=n,
        n_covered=int(covered.sum()),
        n_excluded=int(excluded.sum()),
        means_covered=column_means(raw[covered], names),
        means_excluded=column_means(raw[excluded], names),
        gap=gap,
        categories=_category_mix(Categories.of(table.categories), covered, excluded),
    )


def _mean_gap(
    table: ScoreTable,
    runs: list[str],
    cols: list[int],
    names: list[str],
    bounds: tuple[np.ndarray, np.ndarray] | None,
    n_queries: int,
) -> dict[str, MeanGap]:
    """The mean over ``runs`` (each with both groups non-empty) of their gaps; ``bounds``
    its percentile interval per measure."""
    if not runs or bounds is None:
        return {
            m: MeanGap(n_runs=0, n_queries=0, mean=None, ci_low=None, ci_high=None) for m in names
        }
    gaps = []
    for run in runs:
        covered, excluded = _groups(table, run)
        raw = table.runs[run].values[RAW][:, cols]
        gaps.append(raw[covered].mean(axis=0) - raw[excluded].mean(axis=0))
    observed = np.mean(gaps, axis=0)
    low, high = bounds
    return {
        m: MeanGap(
            n_runs=len(runs),
            n_queries=n_queries,
            mean=rnd(observed[j]),
            ci_low=rnd(low[j]),
            ci_high=rnd(high[j]),
        )
        for j, m in enumerate(names)
    }


def coverage_report(
    table: ScoreTable, settings: Settings, batch: BootstrapBatch
) -> Coverage | None:
    """Coverage control for every run (after :func:`plan_bootstrap` and the batch's
    ``compute()``), or ``None`` when Raw or Canonical is not analysed."""
    if RAW not in table.targets or CANONICAL not in table.targets:
        return None
    cols = settings.focus()
    names = [settings.names[i] for i in cols]
    both, draws, union = _layout(table)
    width = len(cols)
    bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    mean_bounds, n_queries = None, 0
    for draw in draws:
        low, high = batch.bounds(draw.key)
        for i, run in enumerate(draw.runs):
            span = slice(i * width, (i + 1) * width)
            bounds[run] = (low[span], high[span])
        if union is None:  # the one draw: its last columns are the mean gap
            span = slice(len(draw.runs) * width, (len(draw.runs) + 1) * width)
            mean_bounds, n_queries = (low[span], high[span]), int(draw.rows.sum())
    if union is not None:
        mean_bounds, n_queries = batch.bounds(union.key), int(union.rows.sum())
    runs = {run: _run_report(table, run, cols, names, bounds.get(run)) for run in table.runs}
    return Coverage(
        target=CANONICAL,
        measured_on=RAW,
        method=METHOD,
        runs=runs,
        mean_gap=_mean_gap(table, both, cols, names, mean_bounds, n_queries),
    )

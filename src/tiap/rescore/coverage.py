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
``seed``, the same draws as :mod:`tiap.rescore.bootstrap`): a run's gap resamples
its Raw-scored queries; the *mean run-level gap* (the mean of the gaps of every run
with both groups non-empty) resamples the queries once for every run, so the runs
stay paired on the same queries. A resample in which one group of a run draws no
query gives no gap and is left out of that interval's percentiles.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.bootstrap import resample_means
from tiap.rescore.common import Categories, Settings, column_means, rnd
from tiap.rescore.report_models import CategoryMix, Coverage, CoverageRun, Interval, MeanGap
from tiap.rescore.scores import ScoreTable
from tiap.rescore.targets import CANONICAL, RAW

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


def _gap_resamples(
    values: list[np.ndarray],
    covered: list[np.ndarray],
    excluded: list[np.ndarray],
    settings: Settings,
) -> np.ndarray:
    """``(resamples, runs, measures)`` gaps over the same resampled rows; ``nan`` where a
    resample leaves one group of a run empty. Every input has the same rows; a row in
    neither group of a run does not count for that run."""
    width = values[0].shape[1]
    cols = []
    for v, c, e in zip(values, covered, excluded, strict=True):
        cov = c.astype(np.float64)[:, None]
        exc = e.astype(np.float64)[:, None]
        v = np.where(c[:, None] | e[:, None], v, 0.0)
        cols += [v * cov, cov, v * exc, exc]
    means = resample_means(np.hstack(cols), settings.resamples, settings.seed)
    step = 2 * width + 2
    out = np.empty((settings.resamples, len(values), width))
    with np.errstate(invalid="ignore", divide="ignore"):
        for r in range(len(values)):
            block = means[:, r * step : (r + 1) * step]
            cov_sum, cov_n = block[:, :width], block[:, width : width + 1]
            exc_sum, exc_n = block[:, width + 1 : 2 * width + 1], block[:, 2 * width + 1 :]
            gap = cov_sum / cov_n - exc_sum / exc_n
            gap[(cov_n[:, 0] == 0) | (exc_n[:, 0] == 0)] = np.nan
            out[:, r, :] = gap
    return out


def _bounds(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds per column over the defined resamples (``nan`` when none is)."""
    alpha = (1.0 - confidence) / 2.0
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    for j in range(samples.shape[1]):
        col = samples[:, j]
        col = col[~np.isnan(col)]
        if col.size:
            low[j], high[j] = np.percentile(col, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return low, high


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
    table: ScoreTable, run: str, cols: list[int], names: list[str], settings: Settings
) -> CoverageRun:
    covered, excluded = _groups(table, run)
    scored = covered | excluded
    raw = table.runs[run].values[RAW][:, cols]
    n_cov, n_exc = int(covered.sum()), int(excluded.sum())
    gap: dict[str, Interval]
    if n_cov and n_exc:
        obs = raw[covered].mean(axis=0) - raw[excluded].mean(axis=0)
        boot = _gap_resamples([raw[scored]], [covered[scored]], [excluded[scored]], settings)
        low, high = _bounds(boot[:, 0, :], settings.confidence)
        gap = {
            m: Interval(
                n=int(scored.sum()), mean=rnd(obs[j]), ci_low=rnd(low[j]), ci_high=rnd(high[j])
            )
            for j, m in enumerate(names)
        }
    else:
        gap = {
            m: Interval(n=int(scored.sum()), mean=None, ci_low=None, ci_high=None) for m in names
        }
    return CoverageRun(
        n_raw=int(scored.sum()),
        n_covered=n_cov,
        n_excluded=n_exc,
        means_covered=column_means(raw[covered], names),
        means_excluded=column_means(raw[excluded], names),
        gap=gap,
        categories=_category_mix(Categories.of(table.categories), covered, excluded),
    )


def _mean_gap(
    table: ScoreTable, runs: list[str], cols: list[int], names: list[str], settings: Settings
) -> dict[str, MeanGap]:
    """The mean over ``runs`` (each with both groups non-empty) of their gaps."""
    if not runs:
        return {
            m: MeanGap(n_runs=0, n_queries=0, mean=None, ci_low=None, ci_high=None) for m in names
        }
    groups = {r: _groups(table, r) for r in runs}
    rows = np.logical_or.reduce([c | e for c, e in groups.values()])
    values = [table.runs[r].values[RAW][:, cols][rows] for r in runs]
    covered = [groups[r][0][rows] for r in runs]
    excluded = [groups[r][1][rows] for r in runs]
    gaps = [
        v[c].mean(axis=0) - v[e].mean(axis=0)
        for v, c, e in zip(values, covered, excluded, strict=True)
    ]
    observed = np.mean(gaps, axis=0)
    boot = _gap_resamples(values, covered, excluded, settings).mean(axis=1)
    low, high = _bounds(boot, settings.confidence)
    return {
        m: MeanGap(
            n_runs=len(runs),
            n_queries=int(rows.sum()),
            mean=rnd(observed[j]),
            ci_low=rnd(low[j]),
            ci_high=rnd(high[j]),
        )
        for j, m in enumerate(names)
    }


def coverage_report(table: ScoreTable, settings: Settings) -> Coverage | None:
    """Coverage control for every run, or ``None`` when Raw or Canonical is not analysed."""
    if RAW not in table.targets or CANONICAL not in table.targets:
        return None
    cols = settings.focus()
    names = [settings.names[i] for i in cols]
    runs = {run: _run_report(table, run, cols, names, settings) for run in table.runs}
    both = [r for r, rep in runs.items() if rep.n_covered and rep.n_excluded]
    return Coverage(
        target=CANONICAL,
        measured_on=RAW,
        method=METHOD,
        runs=runs,
        mean_gap=_mean_gap(table, both, cols, names, settings),
    )

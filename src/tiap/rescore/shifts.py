"""Per-query shifts between targets: their distribution per run (the paper's Figure 3) and
the saturation of the set-size effect (Appendix I).

**Distribution.** For every run and target pair ``B-A``, the per-query shifts of the
primary measure on the pair's shared subset, counted in 21 bins of width 0.1
centred on -1.0, -0.9, ..., 1.0 (every measure lies in [0, 1], so every shift lies in
[-1, 1]; the bin centred on 0 holds the unchanged queries), with their quartiles
(numpy's linear interpolation) and how many went down, stayed (within the change
tolerance) and went up.

**Saturation.** Over every (query, run) pair of the Source-Raw shared subsets, the
mean Source-Raw shift grouped by how many memories Source adds to Raw (``|Source| -
|Raw|``: 1, 2, 3, 4 or more). Its percentile bootstrap interval (``resamples``,
``seed``) resamples *queries* (those in a shared subset of some run), a query's pairs
of every run drawn together: pairs of one query are not independent. A resample that
draws no pair of a group is left out of that group's percentiles. Pairs where Source
adds nothing (the same set, shift 0) are counted, not grouped. Every nDCG measure and
the primary one.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from tiap.rescore.common import Settings, rnd, target_pairs
from tiap.rescore.report_models import (
    Interval,
    Saturation,
    ShiftDistribution,
    ShiftHistogram,
)
from tiap.rescore.scores import ScoreTable
from tiap.rescore.sensitivity import pair_data
from tiap.rescore.targets import RAW, SOURCE
from tiap.stats.paired import BootstrapBatch, ratio_of

#: Bin edges of the shift histograms: 21 bins of width 0.1 centred on -1.0 ... 1.0.
EDGES: tuple[float, ...] = tuple(round(-1.05 + 0.1 * i, 2) for i in range(22))
#: Saturation groups: how many memories the broader target adds (the last is open).
ADDED_BINS: tuple[str, ...] = ("1", "2", "3", "4+")

DISTRIBUTION_METHOD = (
    "per-query B-A shifts of the primary measure on each run's shared subset, in 21 bins of "
    "width 0.1 centred on -1.0 ... 1.0 (edges), with quartiles"
)
SATURATION_METHOD = (
    "mean Source-Raw shift over the (query, run) pairs of the shared subsets, grouped by how "
    "many memories Source adds to Raw (1, 2, 3, 4+); percentile bootstrap over queries (a "
    "query's pairs of every run drawn together); pairs where Source adds nothing are counted "
    "in n_none_added"
)


def histogram(shift: np.ndarray, tol: float) -> ShiftHistogram:
    n = int(shift.size)
    if not n:
        return ShiftHistogram(
            n=0,
            n_down=0,
            n_zero=0,
            n_up=0,
            mean=None,
            min=None,
            q1=None,
            median=None,
            q3=None,
            max=None,
            counts=[0] * (len(EDGES) - 1),
        )
    counts, _ = np.histogram(np.clip(shift, EDGES[0], EDGES[-1]), bins=np.asarray(EDGES))
    q1, median, q3 = np.percentile(shift, [25.0, 50.0, 75.0])
    return ShiftHistogram(
        n=n,
        n_down=int((shift < -tol).sum()),
        n_zero=int((np.abs(shift) <= tol).sum()),
        n_up=int((shift > tol).sum()),
        mean=rnd(shift.mean()),
        min=rnd(shift.min()),
        q1=rnd(q1),
        median=rnd(median),
        q3=rnd(q3),
        max=rnd(shift.max()),
        counts=[int(c) for c in counts],
    )


def distribution_report(table: ScoreTable, settings: Settings) -> ShiftDistribution:
    col = table.column(settings.primary)
    runs: dict[str, dict[str, ShiftHistogram]] = {}
    for run, scores in table.runs.items():
        runs[run] = {}
        for name, a, b in target_pairs(table.targets):
            shift = pair_data(scores, a, b).diff[:, col]
            runs[run][name] = histogram(shift, settings.change_tolerance)
    return ShiftDistribution(
        measure=str(settings.primary), method=DISTRIBUTION_METHOD, edges=list(EDGES), runs=runs
    )


def _saturation_sums(
    table: ScoreTable, cols: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Per query and group: the sum of its pairs' shifts and their number (``queries x
    groups·measures`` each), the queries in some shared subset, the pairs, the pairs
    where Source adds nothing."""
    n, width, groups = len(table.query_ids), len(cols), len(ADDED_BINS)
    sums = np.zeros((n, groups * width))
    counts = np.zeros((n, groups * width))
    shared = np.zeros(n, dtype=bool)
    n_pairs = n_none = 0
    for scores in table.runs.values():
        mask = (scores.sizes[RAW] > 0) & (scores.sizes[SOURCE] > 0)
        shift = np.nan_to_num(scores.values[SOURCE][:, cols] - scores.values[RAW][:, cols])
        added = (scores.sizes[SOURCE] - scores.sizes[RAW]).astype(np.int64)
        group = np.where(added <= 0, -1, np.minimum(added, groups) - 1)
        for g in range(groups):
            sel = mask & (group == g)
            sums[sel, g * width : (g + 1) * width] += shift[sel]
            counts[sel, g * width : (g + 1) * width] += 1.0
        shared |= mask
        n_pairs += int(mask.sum())
        n_none += int((mask & (group == -1)).sum())
    return sums, counts, shared, n_pairs, n_none


SATURATION_KEY = ("saturation", "source-raw")


def plan_bootstrap(table: ScoreTable, batch: BootstrapBatch, settings: Settings) -> None:
    """Register the saturation resamples (over queries) with the report's batch."""
    if RAW not in table.targets or SOURCE not in table.targets:
        return
    sums, counts, shared, _, _ = _saturation_sums(table, settings.focus())
    m = sums.shape[1]
    batch.add_statistic(
        SATURATION_KEY, shared, np.hstack([sums, counts]), partial(ratio_of, m=m), m
    )


def saturation_report(
    table: ScoreTable, settings: Settings, batch: BootstrapBatch
) -> Saturation | None:
    """After :func:`plan_bootstrap` and the batch's ``compute()``; ``None`` when Source
    or Raw is not analysed."""
    if RAW not in table.targets or SOURCE not in table.targets:
        return None
    cols = settings.focus()
    names = [settings.names[i] for i in cols]
    width = len(cols)
    sums, counts, shared, n_pairs, n_none = _saturation_sums(table, cols)
    total, items = sums[shared].sum(axis=0), counts[shared].sum(axis=0)
    low, high = batch.bounds(SATURATION_KEY)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.where(items > 0, total / np.where(items > 0, items, 1.0), np.nan)
    bins: dict[str, dict[str, Interval]] = {m: {} for m in names}
    for g, label in enumerate(ADDED_BINS):
        for j, m in enumerate(names):
            c = g * width + j
            bins[m][label] = Interval(
                n=int(items[c]), mean=rnd(observed[c]), ci_low=rnd(low[c]), ci_high=rnd(high[c])
            )
    return Saturation(
        pair=f"{SOURCE}-{RAW}",
        method=SATURATION_METHOD,
        n=n_pairs,
        n_none_added=n_none,
        bins=bins,
    )

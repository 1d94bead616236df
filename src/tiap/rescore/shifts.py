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
|Raw|``: 1, 2, 3, 4 or more), each with a percentile bootstrap interval over that
group's pairs (``resamples``, ``seed``). Pairs where Source adds nothing (the same
set, shift 0) are counted, not binned. Every nDCG measure and the primary one.
"""

from __future__ import annotations

import numpy as np

from tiap.rescore.bootstrap import paired_bootstrap
from tiap.rescore.common import Settings, intervals, rnd, target_pairs
from tiap.rescore.report_models import (
    Interval,
    Saturation,
    ShiftDistribution,
    ShiftHistogram,
)
from tiap.rescore.scores import ScoreTable
from tiap.rescore.sensitivity import pair_data
from tiap.rescore.targets import RAW, SOURCE

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
    "many memories Source adds to Raw (1, 2, 3, 4+); percentile bootstrap per group; pairs "
    "where Source adds nothing are counted in n_none_added"
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


def _added_bin(added: np.ndarray) -> np.ndarray:
    """Bin position per pair (``-1``: nothing added)."""
    return np.where(added <= 0, -1, np.minimum(added, len(ADDED_BINS)) - 1)


def saturation_report(table: ScoreTable, settings: Settings) -> Saturation | None:
    """``None`` when Source or Raw is not analysed."""
    if RAW not in table.targets or SOURCE not in table.targets:
        return None
    cols = settings.focus()
    names = [settings.names[i] for i in cols]
    parts = [pair_data(s, RAW, SOURCE) for s in table.runs.values()]
    width = len(settings.measures)
    diff = np.vstack([p.diff for p in parts]) if parts else np.empty((0, width))
    added = (
        np.concatenate([p.size_b - p.size_a for p in parts]).astype(np.int64)
        if parts
        else np.empty(0, dtype=np.int64)
    )
    where = _added_bin(added)
    bins: dict[str, dict[str, Interval]] = {m: {} for m in names}
    for i, label in enumerate(ADDED_BINS):
        result = paired_bootstrap(
            diff[where == i][:, cols],
            resamples=settings.resamples,
            seed=settings.seed,
            confidence=settings.confidence,
        )
        for m, iv in intervals(result, names).items():
            bins[m][label] = iv
    return Saturation(
        pair=f"{SOURCE}-{RAW}",
        method=SATURATION_METHOD,
        n=int(diff.shape[0]),
        n_none_added=int((where == -1).sum()),
        bins=bins,
    )

"""Point estimates and case-bootstrap intervals of every agreement figure.

A replicate draws ``n`` cases with replacement; its weight vector counts how
often each case was drawn (the draws of :mod:`tiap.stats.bootstrap`, in chunks of
bounded memory). All figures of one report are computed in one pass over the
same draws, and each figure then uses the cases it is defined on (e.g. Fleiss'
kappa only the complete ones among the drawn cases). A chunk's replicates of
every figure come from one matrix product (:mod:`tiap.agreement.formulas`; over
the distinct label patterns, as the sums are the same), and only their values are
kept (:class:`~tiap.stats.percentile.ResampleValues`), so
memory does not grow with resamples x cases. Percentile intervals ignore
replicates in which a figure is undefined.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tiap.agreement.formulas import Stat
from tiap.stats import CONFIDENCE
from tiap.stats.bootstrap import Draws, Progress, collect
from tiap.stats.percentile import percentile_points

__all__ = ["CONFIDENCE", "Estimate", "evaluate", "percentile_interval"]

#: the fewest defined replicates a percentile interval is taken from.
MIN_DEFINED = 2


@dataclass(frozen=True)
class Estimate:
    """A point estimate (``None`` when undefined, with ``reason``) and its
    percentile interval (``None`` without bootstrap or when too few replicates
    are defined)."""

    value: float | None
    ci: tuple[float, float] | None
    n: int
    reason: str | None
    #: the standard deviation of the defined replicates (``None`` without bootstrap)
    sd: float | None = None


def percentile_interval(
    values: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The percentile interval of the finite ``values`` (``None`` below two)."""
    finite = values[np.isfinite(values)]
    if finite.size < MIN_DEFINED:
        return None
    lo, hi = np.percentile(finite, percentile_points(confidence))
    return float(lo), float(hi)


def _distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct row of ``matrix`` (in order of appearance), and
    for every row the position of its distinct row among them."""
    seen: dict[bytes, int] = {}
    of = np.array(
        [seen.setdefault(row.tobytes(), len(seen)) for row in np.ascontiguousarray(matrix)],
        dtype=np.intp,
    ).reshape(-1)
    _, first = np.unique(of, return_index=True)  # positions are numbered as first seen
    return first, of


class _Replicates:
    """Every stat's replicate values from a chunk of counts per pattern (``rows x
    patterns``): one matrix product for all of them, ``nan`` where a figure is
    undefined.

    Cases with the same features (the same labels) are one pattern, and stats that
    share a feature (a pair's confusion cells, for its kappa and its agreement) share
    its column: ``distinct`` holds each pattern's distinct feature columns,
    ``columns`` maps every stat's feature to its column there. The sums are the
    same integers as ``weights @ features`` over the cases."""

    def __init__(
        self, stats: list[Stat], distinct: np.ndarray, columns: np.ndarray, bounds: np.ndarray
    ) -> None:
        self.stats = stats
        self.distinct = distinct
        self.columns = columns
        self.bounds = bounds

        #: per stat: the defined replicates, their sum and their sum of squares
        self.moments = np.zeros((3, len(stats)))

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        sums = (counts @ self.distinct)[:, self.columns]
        out = np.empty((counts.shape[0], len(self.stats)))
        for i, st in enumerate(self.stats):
            out[:, i] = st.finish(sums[:, self.bounds[i] : self.bounds[i + 1]])
        out[~np.isfinite(out)] = np.nan
        defined = np.isfinite(out)
        values = np.where(defined, out, 0.0)
        self.moments += [defined.sum(axis=0), values.sum(axis=0), (values * values).sum(axis=0)]
        return out

    def sd(self, i: int) -> float | None:
        """Stat ``i``'s standard deviation over its defined replicates."""
        count, total, squares = self.moments[:, i]
        if count < MIN_DEFINED:
            return None
        mean = total / count
        return float(np.sqrt(max(squares / count - mean * mean, 0.0) * count / (count - 1)))


def evaluate(
    stats: Mapping[str, Stat], draws: Draws | None, *, progress: Progress | None = None
) -> dict[str, Estimate]:
    """Point estimates of every stat, and its percentile interval over ``draws``
    (``None``: no intervals), in one pass over the draws; ``progress(done, total)``
    after each chunk of resamples.

    A figure the formulas find undefined on the full sample is ``None`` with the
    stat's reason; otherwise its value is the stat's library ``point`` when it has
    one, else the formula's."""
    names = list(stats)
    if not names:
        return {}
    widths = [stats[k].features.shape[1] for k in names]
    bounds = np.cumsum([0, *widths])
    features = np.hstack([stats[k].features for k in names])
    point = features.sum(axis=0)
    intervals: dict[int, tuple[float, float]] = {}
    sds: dict[int, float | None] = {}
    if draws is not None:
        first, groups = _distinct_rows(features)
        kept, columns = _distinct_rows(features[first].T)
        distinct = np.ascontiguousarray(features[np.ix_(first, kept)])
        replicates = _Replicates([stats[k] for k in names], distinct, columns, bounds)
        values = collect(
            draws,
            replicates,
            len(names),
            confidence=CONFIDENCE,
            progress=progress,
            groups=groups,
            width=features.shape[1],
        )
        low, high = values.bounds()
        for i in np.flatnonzero(values.defined >= MIN_DEFINED):
            intervals[int(i)] = (float(low[i]), float(high[i]))
            sds[int(i)] = replicates.sd(int(i))
    out: dict[str, Estimate] = {}
    for i, name in enumerate(names):
        st = stats[name]
        lo, hi = bounds[i], bounds[i + 1]
        formula = float(st.finish(point[None, lo:hi])[0])
        value: float | None = None
        if np.isfinite(formula):  # defined: the reference library's figure, if it has one
            value = st.point() if st.point is not None else formula
        out[name] = Estimate(
            value=value,
            ci=intervals.get(i) if value is not None else None,
            n=st.n,
            reason=None if value is not None else (st.explain(point[lo:hi]) or "undefined"),
            sd=sds.get(i) if value is not None else None,
        )
    return out

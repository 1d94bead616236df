"""Pearson and Spearman correlations with bootstrap percentile intervals, and the
bootstrap interval of a mean.

A resample of the ``n`` (x, y) pairs is a count vector ``w`` (how often each pair
was drawn; the draws of :mod:`tiap.stats.bootstrap`). Its Pearson r is the weighted
r with weights ``w``; its Spearman rho is the weighted Pearson r of the pairs'
*mid-ranks within the resample*: a pair with value ``v`` drawn ``w`` times among
draws of which ``W_<`` fall below ``v`` and ``W_=`` equal it has rank
``W_< + (W_= + 1) / 2``, exactly what ``scipy.stats.spearmanr`` gives on the
resample written out pair by pair. A resample in which x or y does not vary gives
no value and is left out of the percentiles (:class:`~tiap.stats.percentile.ResampleValues`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiap.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, Draws, collect
from tiap.stats.intervals import CONFIDENCE
from tiap.stats.paired import paired_bootstrap

__all__ = [
    "CorrelationCI",
    "MeanCI",
    "bootstrap_correlation",
    "bootstrap_mean",
    "correlation_differences",
    "midranks",
]


@dataclass(frozen=True)
class CorrelationCI:
    """Pearson r and Spearman rho of ``n`` pairs, each with its percentile interval
    (``None`` where undefined)."""

    n: int
    pearson: float | None
    pearson_low: float | None
    pearson_high: float | None
    spearman: float | None
    spearman_low: float | None
    spearman_high: float | None


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float | None
    low: float | None
    high: float | None


#: sums of squares at most this share of n·(1 + mean²) count as no variation
_TINY = 1e-20


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def midranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``rows x n`` mid-ranks of ``values`` (``n``) within each row of ``weights``
    (``rows x n`` counts; see the module doc)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    group = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1  # of each sorted unit
    tied = np.add.reduceat(weights[:, order], starts, axis=1)  # rows x groups
    below = np.cumsum(tied, axis=1) - tied
    ranks_sorted = (below + (tied + 1.0) / 2.0)[:, group]
    out = np.empty_like(ranks_sorted)
    out[:, order] = ranks_sorted
    return out


def weighted_pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, the Pearson r of ``x`` and ``y`` (each ``n`` or ``rows x n``) with the
    row's ``weights``; ``nan`` where either does not vary."""
    total = weights.sum(axis=1, keepdims=True)
    mx = (weights * x).sum(axis=1, keepdims=True) / total
    my = (weights * y).sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    sxy = (weights * dx * dy).sum(axis=1)
    sxx = (weights * dx * dx).sum(axis=1)
    syy = (weights * dy * dy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    # a constant column leaves only rounding error in its sum of squares
    flat = (sxx <= _TINY * total[:, 0] * (1.0 + mx[:, 0] ** 2)) | (
        syy <= _TINY * total[:, 0] * (1.0 + my[:, 0] ** 2)
    )
    r[flat] = np.nan
    return r


def _both(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    pearson = weighted_pearson(x, y, weights)
    spearman = weighted_pearson(midranks(x, weights), midranks(y, weights), weights)
    return np.column_stack([pearson, spearman])


def bootstrap_correlation(
    x: np.ndarray,
    y: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> CorrelationCI:
    """Pearson and Spearman of the pairs (x, y), with percentile intervals over
    ``resamples`` resamples of the pairs from ``seed``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = int(x.size)
    if n < 2:
        return CorrelationCI(n, None, None, None, None, None, None)
    observed = _both(x, y, np.ones((1, n)))[0]
    values = collect(
        Draws(n, resamples, seed),
        lambda counts: _both(x, y, counts),
        2,
        confidence=confidence,
        width=4 * n,
    )
    low, high = values.bounds()
    return CorrelationCI(
        n,
        _finite(observed[0]),
        _finite(low[0]) if np.isfinite(observed[0]) else None,
        _finite(high[0]) if np.isfinite(observed[0]) else None,
        _finite(observed[1]),
        _finite(low[1]) if np.isfinite(observed[1]) else None,
        _finite(high[1]) if np.isfinite(observed[1]) else None,
    )


def correlation_differences(
    xs: np.ndarray,
    y: np.ndarray,
    base: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> list[MeanCI]:
    """Pearson r of column ``base`` of ``xs`` (``n x m``) with ``y`` minus that of each
    other column, paired: every difference from the same resamples of the ``n`` rows.
    One :class:`MeanCI` per other column, in column order (``mean``: the observed
    difference)."""
    xs = np.asarray(xs, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, m = xs.shape
    others = [j for j in range(m) if j != base]
    if n < 2 or not others:
        return [MeanCI(n, None, None, None) for _ in others]

    def differences(weights: np.ndarray) -> np.ndarray:
        r = [weighted_pearson(xs[:, j], y, weights) for j in range(m)]
        return np.column_stack([r[base] - r[j] for j in others])

    observed = differences(np.ones((1, n)))[0]
    values = collect(
        Draws(n, resamples, seed),
        differences,
        len(others),
        confidence=confidence,
        width=(m + 3) * n,
    )
    low, high = values.bounds()
    return [
        MeanCI(n, _finite(observed[i]), _finite(low[i]), _finite(high[i]))
        if np.isfinite(observed[i])
        else MeanCI(n, None, None, None)
        for i in range(len(others))
    ]


def bootstrap_mean(
    values: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> MeanCI:
    """The mean of ``values`` with its percentile interval (``None`` for no values):
    :func:`tiap.stats.paired.paired_bootstrap` of the one column, as a :class:`MeanCI`."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return MeanCI(0, None, None, None)
    r = paired_bootstrap(v, resamples=resamples, seed=seed, confidence=confidence)
    return MeanCI(r.n, float(r.mean[0]), _finite(r.low[0]), _finite(r.high[0]))

"""Percentile intervals of resampled values, kept in bounded memory.

A percentile bootstrap interval at confidence ``c`` is the ``100 a`` and
``100 (1 - a)`` percentiles (``a = (1 - c) / 2``, numpy's linear interpolation)
of a figure's values over the resamples. Those two percentiles depend only on a
few order statistics near each end: with ``N`` values, the lower one on the
sorted values at positions ``floor((N - 1) a)`` and the next, the upper one on
the mirror positions. So :class:`ResampleValues` keeps, per column, every value
while they fit its buffer and, once they do not, only the ``keep`` smallest and
``keep`` largest values (``keep = floor((R - 1) a) + 3`` for ``R`` resamples,
more than any of those positions needs) and how many it let go from the middle.
At the end it rebuilds an array of ``N`` values with those same order statistics
at both ends (the middle filled with the largest kept low value, which no
discarded value is below) and takes numpy's percentiles of it: the same numbers,
bit for bit, as ``numpy.percentile`` over every value at once, in memory that
grows with the number of columns but not with resamples x cases.

``nan`` marks a resample in which a figure is undefined: it is counted
(:attr:`ResampleValues.undefined`) and left out of the percentiles; the caller
decides what too few defined resamples mean.
"""

from __future__ import annotations

import math

import numpy as np

from tiap.limits import MAX_RESAMPLES, check_int
from tiap.stats.intervals import CONFIDENCE, check_confidence

#: the buffer of one :class:`ResampleValues`, in bytes, before it keeps only the tails
#: (it never holds less than four tails and one chunk per column).
BUFFER_BYTES = 64 * 1024 * 1024

__all__ = ["BUFFER_BYTES", "ResampleValues", "percentile_points"]


def percentile_points(confidence: float = CONFIDENCE) -> list[float]:
    """The two percentiles (0 to 100) of a percentile interval at ``confidence``."""
    alpha = (1.0 - check_confidence(confidence)) / 2.0
    return [100.0 * alpha, 100.0 * (1.0 - alpha)]


def _by_fill(cols: np.ndarray, fill: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``cols`` grouped by their fill (taken before any of them changes)."""
    of = fill[cols]
    return [(int(f), cols[of == f]) for f in np.unique(of)]


class ResampleValues:
    """The values of ``columns`` figures over ``resamples`` resamples, added a chunk
    of rows at a time (:meth:`add`), and their percentile intervals (:meth:`bounds`);
    see the module doc for what is kept."""

    def __init__(
        self,
        columns: int,
        resamples: int,
        confidence: float = CONFIDENCE,
        *,
        max_rows: int | None = None,
        buffer_bytes: int = BUFFER_BYTES,
    ) -> None:
        self.columns = check_int("columns", columns, minimum=0, maximum=2**31 - 1)
        self.resamples = check_int("resamples", resamples, minimum=1, maximum=MAX_RESAMPLES)
        self.points = percentile_points(confidence)
        rows = self.resamples if max_rows is None else max_rows
        self.max_rows = check_int("max_rows", rows, minimum=1, maximum=self.resamples)
        alpha = self.points[0] / 100.0
        self.keep = math.floor((self.resamples - 1) * min(alpha, 1.0 - alpha)) + 3
        budget_rows = buffer_bytes // (8 * max(self.columns, 1))
        self.capacity = min(self.resamples, max(4 * self.keep + self.max_rows, budget_rows))
        self._buffer = np.empty((self.columns, self.capacity), dtype=np.float64)
        self._fill = np.zeros(self.columns, dtype=np.int64)
        self._discarded = np.zeros(self.columns, dtype=np.int64)
        self.undefined = np.zeros(self.columns, dtype=np.int64)
        self.added = 0

    @property
    def defined(self) -> np.ndarray:
        """Per column, how many resamples gave a value (not ``nan``)."""
        return self._fill + self._discarded

    def add(self, values: np.ndarray) -> None:
        """Add the next rows (resamples) of values: ``rows x columns``, ``nan`` where a
        figure is undefined in a resample."""
        v = np.asarray(values, dtype=np.float64)
        v = v[:, None] if v.ndim == 1 else v
        if v.ndim != 2 or v.shape[1] != self.columns:
            raise ValueError(f"values must have {self.columns} columns (got shape {v.shape})")
        if self.added + v.shape[0] > self.resamples:
            raise ValueError(f"more than {self.resamples} resamples added")
        for start in range(0, v.shape[0], self.max_rows):
            self._add(v[start : start + self.max_rows])

    def _add(self, v: np.ndarray) -> None:
        rows = v.shape[0]
        missing = np.isnan(v)
        bad = missing.sum(axis=0)
        self.undefined += bad
        self.added += rows
        full = np.flatnonzero(self._fill + rows - bad > self.capacity)
        if full.size:
            self._compact(full)
        clean = np.flatnonzero(bad == 0)
        for fill, cols in _by_fill(clean, self._fill):  # columns at the same fill, at once
            self._buffer[cols, fill : fill + rows] = v[:, cols].T
            self._fill[cols] += rows
        for j in np.flatnonzero(bad):
            kept = v[~missing[:, j], j]
            fill = self._fill[j]
            self._buffer[j, fill : fill + kept.size] = kept
            self._fill[j] += kept.size

    def _compact(self, cols: np.ndarray) -> None:
        """Keep only the ``keep`` smallest (first) and largest (next) values of ``cols``."""
        keep = self.keep
        for j in cols[self._fill[cols] > 2 * keep]:  # in place, one column at a time
            fill = int(self._fill[j])
            row = self._buffer[j, :fill]
            row.partition([keep - 1, fill - keep])
            row[keep : 2 * keep] = row[fill - keep :]  # numpy copies overlapping slices right
            self._discarded[j] += fill - 2 * keep
            self._fill[j] = 2 * keep

    def column(self, j: int) -> np.ndarray:
        """Column ``j``'s defined values, or an array with the same order statistics at
        both ends when its middle was let go (see the module doc)."""
        if not self._discarded[j]:
            return self._buffer[j, : self._fill[j]].copy()
        self._compact(np.array([j]))
        keep = self.keep
        out = np.empty(int(self.defined[j]), dtype=np.float64)
        out[: 2 * keep] = self._buffer[j, : 2 * keep]
        out[2 * keep :] = self._buffer[j, :keep].max()
        return out

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per column, the percentile interval over its defined resamples (``nan``
        where none is defined)."""
        low = np.full(self.columns, np.nan)
        high = np.full(self.columns, np.nan)
        for j in np.flatnonzero(self.defined):
            low[j], high[j] = np.percentile(self.column(int(j)), self.points)
        return low, high

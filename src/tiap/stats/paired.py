"""Paired bootstrap percentile intervals on shared subsets of units.

For a paired comparison over ``n`` shared units (queries) with per-unit
differences ``d`` (``n x m``: one column per measure), resample ``n`` unit
positions with replacement ``R`` times (the draws of :mod:`tiap.stats.bootstrap`),
take the mean difference of each resample, and report the percentile interval of
those ``R`` means (:mod:`tiap.stats.percentile`). Efron & Tibshirani, *An
Introduction to the Bootstrap*, 1993, ch. 13; Sakai, "Evaluating evaluation
metrics based on the bootstrap", SIGIR 2006.

Every comparison of ``n`` units uses the draws of ``n`` units from the same seed,
so a comparison's interval depends only on its own differences, ``R`` and the
seed (not on which other runs or measures are analysed). Resample means come from
a chunk of counts (how often each unit was drawn) times the stacked per-unit
values: a matrix product per chunk, no loop over units, no ``R x n`` matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from tiap.stats.bootstrap import (
    CHUNK_ELEMENTS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Draws,
    Progress,
    collect,
)
from tiap.stats.intervals import CONFIDENCE, check_confidence
from tiap.stats.percentile import BUFFER_BYTES

__all__ = ["BootstrapBatch", "BootstrapResult", "Column", "paired_bootstrap", "ratio_of"]

Column = tuple[Hashable, np.ndarray]
#: resample means of a block (``rows x m``) -> a figure's values (``rows x columns``)
MeanStatistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class BootstrapResult:
    """Per column: the observed mean difference and its percentile interval."""

    n: int
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def ratio_of(means: np.ndarray, m: int) -> np.ndarray:
    """Resampled ratio means from the resample means of ``hstack([sums, counts])``
    (``m`` columns each): ``sum(w * sums) / sum(w * counts)`` per resample, ``nan``
    where a resample draws no item of a column.

    For a mean over items grouped in resampled units (queries), ``sums`` holds each
    unit's sum of values and ``counts`` how many items it has."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = means[:, :m] / means[:, m:]
    out[means[:, m:] == 0] = np.nan
    return out


def _matrix(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    if v.shape[0] != mask.shape[0]:
        raise ValueError("values and mask must cover the same queries")
    return v


def _shifted(progress: Progress, done: int, total: int) -> Progress:
    """``progress`` of one pass among several: resamples counted over all of them."""

    def step(resamples_done: int, _resamples: int) -> None:
        progress(done + resamples_done, total)

    return step


@dataclass(frozen=True)
class _Derived:
    """A block whose resample means feed a statistic (see ``add_statistic``)."""

    block: np.ndarray
    statistic: MeanStatistic
    columns: int


class BootstrapBatch:
    """Many paired comparisons, bootstrapped together with few matrix products.

    ``add(key, mask, first, second)`` registers the comparison ``first -
    second`` over the queries where ``mask`` is true; ``first`` and ``second``
    are ``(name, values)`` with ``values`` a ``(queries, m)`` array over *all*
    queries. Because a resample mean is linear, the resample means of each
    named array are computed once per mask and differences are taken
    afterwards, so comparing 8 runs pairwise costs 8 columns, not 28. All
    masks with the same number of queries share one pass over the draws.
    ``compute()`` runs everything; ``batch[key]`` is the
    :class:`BootstrapResult`, equal (to rounding) to :func:`paired_bootstrap`
    on the difference matrix alone.

    ``add_statistic(key, mask, values, statistic, columns)`` registers a figure
    that is not a mean difference (e.g. a ratio of resampled sums): each chunk's
    resample means of ``values`` over the queries of ``mask`` go through
    ``statistic`` (``rows x m`` -> ``rows x columns``, ``nan`` where undefined),
    drawn in the same pass as every comparison of its size; after ``compute()``,
    ``batch.bounds(key)`` is its percentile interval per column over the resamples
    where it is defined (``nan`` where none is).
    """

    def __init__(
        self,
        *,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        confidence: float = CONFIDENCE,
        chunk_elements: int = CHUNK_ELEMENTS,
        buffer_bytes: int = BUFFER_BYTES,
    ) -> None:
        Draws(1, resamples, seed, chunk_elements=chunk_elements)  # checks the numbers
        self.resamples = resamples
        self.seed = seed
        self.confidence = check_confidence(confidence)
        self.chunk_elements = chunk_elements
        self.buffer_bytes = buffer_bytes
        self._masks: dict[bytes, np.ndarray] = {}
        self._columns: dict[bytes, dict[Hashable, np.ndarray]] = {}
        self._pending: dict[Hashable, tuple[bytes, Hashable, Hashable | None]] = {}
        self._results: dict[Hashable, BootstrapResult] = {}
        self._derived: dict[Hashable, _Derived] = {}
        self._bounds: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}

    def add(
        self, key: Hashable, mask: np.ndarray, first: Column, second: Column | None = None
    ) -> None:
        if key in self._pending or key in self._results:
            raise KeyError(f"comparison {key!r} added twice")
        mask = np.asarray(mask, dtype=bool)
        mkey = mask.tobytes()
        self._masks.setdefault(mkey, mask)
        cols = self._columns.setdefault(mkey, {})
        for name, values in (first, second) if second is not None else (first,):
            cols.setdefault(name, _matrix(values, mask)[mask])
        self._pending[key] = (mkey, first[0], None if second is None else second[0])

    def add_statistic(
        self,
        key: Hashable,
        mask: np.ndarray,
        values: np.ndarray,
        statistic: MeanStatistic,
        columns: int,
    ) -> None:
        """Register a figure of the resample means of ``values`` (``queries x m`` over
        all queries) over the queries where ``mask`` is true; see the class."""
        if key in self._derived or key in self._bounds:
            raise KeyError(f"statistic {key!r} added twice")
        mask = np.asarray(mask, dtype=bool)
        self._derived[key] = _Derived(_matrix(values, mask)[mask], statistic, columns)

    def bounds(self, key: Hashable) -> tuple[np.ndarray, np.ndarray]:
        """The percentile interval of a statistic per column (``nan`` where no resample
        defines it)."""
        if key in self._derived:
            raise KeyError(f"statistic {key!r} not computed yet (call compute())")
        return self._bounds[key]

    def compute(self, progress: Progress | None = None) -> None:
        """Every comparison and statistic: one pass over the draws per subset size;
        ``progress(done, total)`` counts resamples over all passes."""
        by_mask: dict[bytes, list[Hashable]] = {}
        for key, (mkey, _, _) in self._pending.items():
            by_mask.setdefault(mkey, []).append(key)
        by_size: dict[int, list[bytes]] = {}
        for mkey in by_mask:
            by_size.setdefault(int(self._masks[mkey].sum()), []).append(mkey)
        derived_by_size: dict[int, list[Hashable]] = {}
        for key, d in self._derived.items():
            derived_by_size.setdefault(d.block.shape[0], []).append(key)
        sizes = sorted(set(by_size) | set(derived_by_size))
        self._empty(by_size.get(0, []), by_mask, derived_by_size.get(0, []))
        passes = [n for n in sizes if n]
        total = self.resamples * len(passes)
        for i, n in enumerate(passes):
            step = None if progress is None else _shifted(progress, i * self.resamples, total)
            self._pass(n, by_size.get(n, []), by_mask, derived_by_size.get(n, []), step)
        self._pending.clear()
        self._columns.clear()
        self._masks.clear()
        self._derived.clear()

    def _empty(
        self, mkeys: list[bytes], by_mask: dict[bytes, list[Hashable]], derived: list[Hashable]
    ) -> None:
        """Comparisons and statistics over no query: ``nan`` everywhere."""
        for mkey in mkeys:
            for key in by_mask[mkey]:
                _, a, _ = self._pending[key]
                nan = np.full(self._columns[mkey][a].shape[1], np.nan)
                self._results[key] = BootstrapResult(0, nan, nan.copy(), nan.copy())
        for key in derived:
            nan = np.full(self._derived[key].columns, np.nan)
            self._bounds[key] = (nan, nan.copy())

    def _pass(
        self,
        n: int,
        mkeys: list[bytes],
        by_mask: dict[bytes, list[Hashable]],
        derived: list[Hashable],
        progress: Progress | None,
    ) -> None:
        """One pass over the draws of ``n`` queries for every mask and statistic of
        that size."""
        stacked, spans = [], {}
        for mkey in mkeys:
            cols = self._columns[mkey]
            stacked.append(np.hstack(list(cols.values())))
            edges = np.cumsum([0, *(v.shape[1] for v in cols.values())])
            spans[mkey] = {
                name: slice(int(a), int(b))
                for name, a, b in zip(cols, edges[:-1], edges[1:], strict=True)
            }
        comparisons = []  # (key, block index, first span, second span or None, observed)
        for i, mkey in enumerate(mkeys):
            observed = stacked[i].mean(axis=0)
            for key in by_mask[mkey]:
                _, a, b = self._pending[key]
                sa, sb = spans[mkey][a], None if b is None else spans[mkey][b]
                obs = observed[sa] if sb is None else observed[sa] - observed[sb]
                comparisons.append((key, i, sa, sb, obs))
        blocks = stacked + [self._derived[k].block for k in derived]
        functions = [self._derived[k].statistic for k in derived]
        first = len(stacked)

        def statistic(counts: np.ndarray) -> np.ndarray:
            means = []
            for block in blocks:
                m = np.matmul(counts, block)
                m /= n
                means.append(m)
            parts = [
                means[i][:, sa] if sb is None else means[i][:, sa] - means[i][:, sb]
                for _, i, sa, sb, _ in comparisons
            ]
            parts += [f(means[first + j]) for j, f in enumerate(functions)]
            return np.hstack(parts) if parts else np.empty((counts.shape[0], 0))

        widths = [obs.size for *_, obs in comparisons]
        widths += [self._derived[k].columns for k in derived]
        edges = np.cumsum([0, *widths])
        values = collect(
            Draws(n, self.resamples, self.seed, chunk_elements=self.chunk_elements),
            statistic,
            int(edges[-1]),
            confidence=self.confidence,
            progress=progress,
            width=sum(block.shape[1] for block in blocks),
            buffer_bytes=self.buffer_bytes,
        )
        low, high = values.bounds()
        # a comparison with an undefined resample has no interval (numpy's percentile of nan)
        undefined = values.undefined > 0
        for c, (key, *_, obs) in enumerate(comparisons):
            span = slice(int(edges[c]), int(edges[c + 1]))
            lo = np.where(undefined[span], np.nan, low[span])
            hi = np.where(undefined[span], np.nan, high[span])
            self._results[key] = BootstrapResult(n, obs, lo, hi)
        for j, key in enumerate(derived):
            span = slice(int(edges[len(comparisons) + j]), int(edges[len(comparisons) + j + 1]))
            self._bounds[key] = (low[span], high[span])

    def __getitem__(self, key: Hashable) -> BootstrapResult:
        if key in self._pending:
            raise KeyError(f"comparison {key!r} not computed yet (call compute())")
        return self._results[key]


def paired_bootstrap(
    diffs: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> BootstrapResult:
    """Mean and percentile interval of each column of ``diffs`` (``n`` or ``n x m``)."""
    d = np.asarray(diffs, dtype=np.float64)
    batch = BootstrapBatch(resamples=resamples, seed=seed, confidence=confidence)
    batch.add("diffs", np.ones(d.shape[0], dtype=bool), ("diffs", d))
    batch.compute()
    return batch["diffs"]

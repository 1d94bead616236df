"""Paired bootstrap percentile confidence intervals, vectorised.

For a paired comparison over ``n`` shared queries with per-query differences
``d`` (``n x m``: one column per measure), resample ``B`` times ``n`` query
positions with replacement, take the mean difference of each resample, and
report the ``(1 - c) / 2`` and ``(1 + c) / 2`` percentiles of those ``B``
means (numpy's linear interpolation). Efron & Tibshirani, *An Introduction to
the Bootstrap*, 1993, ch. 13; Sakai, "Evaluating evaluation metrics based on
the bootstrap", SIGIR 2006.

Resamples are drawn as
``numpy.random.default_rng(seed).integers(0, n, (B, n), dtype=numpy.int32)``:
row ``b`` is resample ``b``. Every comparison starts from the same seed, so a
comparison's interval depends only on its own differences, ``B`` and the
seed (not on which other runs or measures are analysed), and a plain loop
``rng = default_rng(seed); for b in range(B): d[rng.integers(0, n, n,
dtype=numpy.int32)].mean(0)`` gives the same resamples. Resample means come
from a count matrix (``B x n``, how often each query was drawn) times the
stacked per-query values (``n x M``): a matrix product, no loop over queries.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 3000
DEFAULT_SEED = 1337
DEFAULT_CONFIDENCE = 0.95
_CHUNK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class BootstrapResult:
    """Per column: the observed mean difference and its percentile interval."""

    n: int
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")


def resample_means_many(blocks: list[np.ndarray], resamples: int, seed: int) -> list[np.ndarray]:
    """Resample means of several ``n x m_i`` matrices over the *same* resamples.

    Returns one ``(resamples, m_i)`` array per block. The count matrix is drawn
    once, in row chunks, and multiplied with every block.
    """
    n = blocks[0].shape[0]
    if any(b.shape[0] != n for b in blocks):
        raise ValueError("all blocks must have the same number of rows")
    rng = np.random.default_rng(seed)
    outs = [np.empty((resamples, b.shape[1]), dtype=np.float64) for b in blocks]
    chunk = min(max(1, _CHUNK_ELEMENTS // max(n, 1)), resamples)
    offsets = (np.arange(chunk, dtype=np.int64) * n)[:, None]
    # buffers reused by every chunk: flat (resample, query) cells and their counts
    cells = np.empty((chunk, n), dtype=np.intp)
    weights = np.empty((chunk, n), dtype=np.float64)
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n), dtype=np.int32)
        np.add(drawn, offsets[:rows], out=cells[:rows])
        counts = np.bincount(cells[:rows].reshape(-1), minlength=rows * n)
        np.copyto(weights[:rows], counts.reshape(rows, n))
        for block, out in zip(blocks, outs, strict=True):
            part = out[start : start + rows]
            np.matmul(weights[:rows], block, out=part)
            part /= n
    return outs


def resample_means(diffs: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, m)`` means of ``diffs`` (``n x m``) over the bootstrap resamples."""
    return resample_means_many([diffs], resamples, seed)[0]


def paired_bootstrap(
    diffs: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> BootstrapResult:
    """Mean and percentile interval of each column of ``diffs`` (``n`` or ``n x m``)."""
    _check(resamples, confidence)
    d = np.asarray(diffs, dtype=np.float64)
    d = d[:, None] if d.ndim == 1 else d
    n, m = d.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return BootstrapResult(0, nan, nan.copy(), nan.copy())
    means = resample_means(d, resamples, seed)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [100.0 * alpha, 100.0 * (1.0 - alpha)], axis=0)
    return BootstrapResult(n, d.mean(axis=0), low, high)


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


def percentile_bounds(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of each column over its defined (non-``nan``) resamples;
    ``nan`` where none is defined."""
    alpha = (1.0 - confidence) / 2.0
    q = [100.0 * alpha, 100.0 * (1.0 - alpha)]
    low = np.full(samples.shape[1], np.nan)
    high = np.full(samples.shape[1], np.nan)
    gaps = np.isnan(samples).any(axis=0)
    if samples.shape[0] and not gaps.all():
        low[~gaps], high[~gaps] = np.percentile(samples[:, ~gaps], q, axis=0)
    for j in np.flatnonzero(gaps):  # columns with undefined resamples, one by one
        col = samples[:, j]
        col = col[~np.isnan(col)]
        if col.size:
            low[j], high[j] = np.percentile(col, q)
    return low, high


Column = tuple[Hashable, np.ndarray]


class BootstrapBatch:
    """Many paired comparisons, bootstrapped together with few matrix products.

    ``add(key, mask, first, second)`` registers the comparison ``first -
    second`` over the queries where ``mask`` is true; ``first`` and ``second``
    are ``(name, values)`` with ``values`` a ``(queries, m)`` array over *all*
    queries. Because a resample mean is linear, the resample means of each
    named array are computed once per mask and differences are taken
    afterwards, so comparing 8 runs pairwise costs 8 columns, not 28. All
    masks with the same number of queries share one count matrix.
    ``compute()`` runs everything; ``batch[key]`` is the
    :class:`BootstrapResult`, equal (to rounding) to :func:`paired_bootstrap`
    on the difference matrix alone.

    ``add_resamples(key, mask, values)`` registers a block whose resample means
    themselves are wanted (for a statistic that is not a mean difference, e.g. a
    ratio of resampled sums): it is drawn with the same count matrix as every
    comparison of its size, as a matrix product of its own (the comparisons'
    products are unchanged), and ``batch.resampled(key)`` is its ``(resamples, m)``
    array after ``compute()``.
    """

    def __init__(
        self,
        *,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        confidence: float = DEFAULT_CONFIDENCE,
    ) -> None:
        _check(resamples, confidence)
        self.resamples = resamples
        self.seed = seed
        self.confidence = confidence
        self._masks: dict[bytes, np.ndarray] = {}
        self._columns: dict[bytes, dict[Hashable, np.ndarray]] = {}
        self._pending: dict[Hashable, tuple[bytes, Hashable, Hashable | None]] = {}
        self._results: dict[Hashable, BootstrapResult] = {}
        self._blocks: dict[Hashable, np.ndarray] = {}
        self._resampled: dict[Hashable, np.ndarray] = {}

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
            v = np.asarray(values, dtype=np.float64)
            v = v[:, None] if v.ndim == 1 else v
            if v.shape[0] != mask.shape[0]:
                raise ValueError("values and mask must cover the same queries")
            cols.setdefault(name, v[mask])
        self._pending[key] = (mkey, first[0], None if second is None else second[0])

    def add_resamples(self, key: Hashable, mask: np.ndarray, values: np.ndarray) -> None:
        """Register ``values`` (``queries x m`` over all queries) to be resampled over the
        queries where ``mask`` is true; see the class."""
        if key in self._blocks or key in self._resampled:
            raise KeyError(f"block {key!r} added twice")
        mask = np.asarray(mask, dtype=bool)
        v = np.asarray(values, dtype=np.float64)
        v = v[:, None] if v.ndim == 1 else v
        if v.shape[0] != mask.shape[0]:
            raise ValueError("values and mask must cover the same queries")
        self._blocks[key] = v[mask]

    def resampled(self, key: Hashable) -> np.ndarray:
        """The ``(resamples, m)`` resample means of a block (``nan`` over no query)."""
        if key in self._blocks:
            raise KeyError(f"block {key!r} not computed yet (call compute())")
        return self._resampled[key]

    def _means(
        self, mkeys: list[bytes], blocks: list[Hashable] | None = None
    ) -> dict[bytes, dict[Hashable, tuple]]:
        """Per mask and named array: (observed column means, resample means); the
        ``blocks`` of the same size are drawn with them, into ``_resampled``."""
        names = {m: list(self._columns[m]) for m in mkeys}
        stacked = {m: np.hstack([self._columns[m][n] for n in names[m]]) for m in mkeys}
        extra = list(blocks or [])
        boots = resample_means_many(
            [stacked[m] for m in mkeys] + [self._blocks[k] for k in extra],
            self.resamples,
            self.seed,
        )
        for k, boot in zip(extra, boots[len(mkeys) :], strict=True):
            self._resampled[k] = boot
        out: dict[bytes, dict[Hashable, tuple]] = {}
        for m, boot in zip(mkeys, boots[: len(mkeys)], strict=True):
            observed = stacked[m].mean(axis=0)
            widths = [self._columns[m][n].shape[1] for n in names[m]]
            edges = np.cumsum([0, *widths])
            out[m] = {
                n: (observed[a:b], boot[:, a:b])
                for n, a, b in zip(names[m], edges[:-1], edges[1:], strict=True)
            }
        return out

    def compute(self) -> None:
        alpha = (1.0 - self.confidence) / 2.0
        by_mask: dict[bytes, list[Hashable]] = {}
        for key, (mkey, _, _) in self._pending.items():
            by_mask.setdefault(mkey, []).append(key)
        by_size: dict[int, list[bytes]] = {}
        for mkey in by_mask:
            by_size.setdefault(int(self._masks[mkey].sum()), []).append(mkey)
        blocks_by_size: dict[int, list[Hashable]] = {}
        for key, block in self._blocks.items():
            blocks_by_size.setdefault(block.shape[0], []).append(key)
            by_size.setdefault(block.shape[0], [])
        for key in blocks_by_size.pop(0, []):
            self._resampled[key] = np.full((self.resamples, self._blocks[key].shape[1]), np.nan)
        for n in sorted(by_size):
            mkeys = by_size[n]
            per_mask = self._means(mkeys, blocks_by_size.get(n)) if n else {}
            done: list[tuple[Hashable, np.ndarray, np.ndarray]] = []
            for mkey in mkeys:
                for key in by_mask[mkey]:
                    _, a, b = self._pending[key]
                    if n == 0:
                        nan = np.full(self._columns[mkey][a].shape[1], np.nan)
                        self._results[key] = BootstrapResult(0, nan, nan.copy(), nan.copy())
                        continue
                    obs, boot = per_mask[mkey][a]
                    if b is not None:
                        obs = obs - per_mask[mkey][b][0]
                        boot = boot - per_mask[mkey][b][1]
                    done.append((key, obs, boot))
            if not done:
                continue
            # percentiles column by column: one call for every comparison of this size
            bounds = np.percentile(
                np.hstack([boot for _, _, boot in done]),
                [100.0 * alpha, 100.0 * (1.0 - alpha)],
                axis=0,
            )
            edges = np.cumsum([0, *(obs.size for _, obs, _ in done)])
            for (key, obs, _), lo, hi in zip(done, edges[:-1], edges[1:], strict=True):
                self._results[key] = BootstrapResult(n, obs, bounds[0, lo:hi], bounds[1, lo:hi])
        self._pending.clear()
        self._columns.clear()
        self._masks.clear()
        self._blocks.clear()

    def __getitem__(self, key: Hashable) -> BootstrapResult:
        if key in self._pending:
            raise KeyError(f"comparison {key!r} not computed yet (call compute())")
        return self._results[key]

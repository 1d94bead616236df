"""The bootstrap's draws, delivered in chunks of bounded memory.

A bootstrap over ``n`` units (cases, queries) draws ``R`` resamples of ``n``
units with replacement. Resample ``b`` is row ``b`` of
``numpy.random.default_rng(seed).integers(0, n, (R, n), dtype=numpy.int32)``;
the draws come in consecutive chunks of rows, so a plain loop ``rng =
default_rng(seed); for b in range(R): rng.integers(0, n, n, dtype=numpy.int32)``
gives the same resamples. Each chunk arrives as a count matrix (``rows x n``,
float64: how often each unit was drawn in each resample), so a figure that is a
function of sums over units is ``statistic(counts @ features)``: a matrix
product per chunk, no loop over units.

Every figure of a report is computed from one pass over one :class:`Draws`
(:func:`collect` runs that pass), so all of them see the same resamples; a chunk
holds at most :data:`CHUNK_ELEMENTS` counts (about 56 MB of buffers), whatever
``R`` and ``n``. The resample values are kept by
:class:`~tiap.stats.percentile.ResampleValues`, in memory that does not grow with
``R x n`` either. Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from tiap.limits import MAX_RESAMPLES, check_int, check_seed
from tiap.stats.intervals import CONFIDENCE
from tiap.stats.percentile import BUFFER_BYTES, ResampleValues

#: the paper's number of resamples.
DEFAULT_RESAMPLES = 3000
#: the paper's seed.
DEFAULT_SEED = 1337
#: the most counts (resamples x units) in one chunk of draws.
CHUNK_ELEMENTS = 2_000_000
#: the integer type of the drawn positions (it fixes the random stream).
INDEX_DTYPE = np.int32

#: called after each chunk with (resamples done, resamples in all).
Progress = Callable[[int, int], None]
#: chunk of counts (``rows x n``) -> that chunk's resample values (``rows x columns``).
Statistic = Callable[[np.ndarray], np.ndarray]

__all__ = [
    "CHUNK_ELEMENTS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "INDEX_DTYPE",
    "Draws",
    "Progress",
    "Statistic",
    "collect",
]


class Draws:
    """``resamples`` bootstrap resamples of ``n`` units from ``seed`` (see the module
    doc); :meth:`counts` yields them chunk by chunk."""

    def __init__(
        self,
        n: int,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        *,
        chunk_elements: int = CHUNK_ELEMENTS,
    ) -> None:
        self.n = check_int("n", n, minimum=1, maximum=int(np.iinfo(INDEX_DTYPE).max))
        self.resamples = check_int("resamples", resamples, minimum=1, maximum=MAX_RESAMPLES)
        self.seed = check_seed("seed", seed)
        self.chunk_elements = check_int("chunk_elements", chunk_elements, minimum=1, maximum=2**40)
        #: resamples per chunk (of a statistic no wider than ``n``)
        self.rows = self.rows_for(0)

    def rows_for(self, width: int) -> int:
        """Resamples per chunk when a chunk's statistic makes ``width`` values per
        resample: neither its counts nor those values pass ``chunk_elements``."""
        return min(max(1, self.chunk_elements // max(self.n, width)), self.resamples)

    def counts(
        self,
        progress: Progress | None = None,
        *,
        groups: np.ndarray | None = None,
        width: int = 0,
    ) -> Iterator[np.ndarray]:
        """The count matrix, ``rows x n`` per chunk, in resample order (``rows`` from
        :meth:`rows_for` ``width``, the widest array the caller makes per resample);
        ``progress(done, resamples)`` after each chunk. A chunk's array is reused for
        the next one: use it before asking for the next.

        With ``groups`` (each unit's group, ``0..g-1``), the counts are per group
        (``rows x g``: how many of a resample's draws fell in each group): the same
        draws, summed over units that count alike (e.g. cases with the same labels)."""
        n, rows = self.n, self.rows_for(width)
        columns, of = n, None
        if groups is not None:
            of = np.asarray(groups, dtype=np.intp)
            if of.shape != (n,) or of.min() < 0:
                raise ValueError(f"groups must give each of the {n} units a group from 0")
            columns = int(of.max()) + 1
        rng = np.random.default_rng(self.seed)
        offsets = (np.arange(rows, dtype=np.intp) * columns)[:, None]
        # buffers reused by every chunk: flat (resample, column) cells and their counts
        cells = np.empty((rows, n), dtype=np.intp)
        weights = np.empty((rows, columns), dtype=np.float64)
        for start in range(0, self.resamples, rows):
            size = min(rows, self.resamples - start)
            drawn = rng.integers(0, n, size=(size, n), dtype=INDEX_DTYPE)
            if of is None:
                np.add(drawn, offsets[:size], out=cells[:size])
            else:
                np.take(of, drawn, out=cells[:size], mode="clip")  # drawn is in range
                cells[:size] += offsets[:size]
            del drawn
            tally = np.bincount(cells[:size].reshape(-1), minlength=size * columns)
            np.copyto(weights[:size], tally.reshape(size, columns))
            del tally
            yield weights[:size]
            if progress is not None:
                progress(start + size, self.resamples)


def collect(
    draws: Draws,
    statistic: Statistic,
    columns: int,
    *,
    confidence: float = CONFIDENCE,
    progress: Progress | None = None,
    groups: np.ndarray | None = None,
    width: int = 0,
    buffer_bytes: int = BUFFER_BYTES,
) -> ResampleValues:
    """One pass over ``draws``: ``statistic`` of every chunk of counts (per group with
    ``groups``, see :meth:`Draws.counts`), kept in a :class:`ResampleValues` of
    ``columns`` columns (its intervals at ``confidence``). ``width``: the widest array
    ``statistic`` makes per resample (at least ``columns``), which bounds the chunks."""
    width = max(width, columns)
    values = ResampleValues(
        columns,
        draws.resamples,
        confidence,
        max_rows=draws.rows_for(width),
        buffer_bytes=buffer_bytes,
    )
    for counts in draws.counts(progress, groups=groups, width=width):
        values.add(statistic(counts))
    return values

"""Rankings as arrays: first occurrences and padded index matrices.

Ranking order is the order given in the run. A memory listed again later in
the same ranking counts once, at its first position, and the later copies are
dropped so that the ranks close up (as a TREC run file, which cannot hold a
document twice, would have it). Ranks are 1-based.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tiap.rescore.ids import IdIndex


def first_occurrences(ranking: Iterable[str]) -> list[str]:
    """The ranking with later repeats of a memory removed (order kept)."""
    return list(dict.fromkeys(ranking))


def first_hit_rank(
    ranking: Sequence[str], target: Collection[str], k: int | None = None
) -> int | None:
    """1-based rank of the first target member in the top ``k`` (all ranks if ``k`` is None).

    Repeats are dropped first, so the rank is the one every measure uses.
    ``None`` when no target member is ranked within the cut-off.
    """
    for rank, memory_id in enumerate(first_occurrences(ranking), start=1):
        if k is not None and rank > k:
            return None
        if memory_id in target:
            return rank
    return None


@dataclass(frozen=True)
class RankMatrix:
    """A run's rankings over a fixed query order, as memory indices.

    ``index[q, i]`` is the store index of the memory at rank ``i + 1`` of query
    ``q`` (``-1`` past the end of the ranking); ``present[q]`` says whether the
    run has an entry for query ``q``; ``repeats[q]`` counts the repeats dropped
    from a ranking that has one within the top ``depth`` (0 otherwise: a
    repeat further down changes no measure).
    """

    index: np.ndarray
    present: np.ndarray
    repeats: np.ndarray

    @property
    def depth(self) -> int:
        return int(self.index.shape[1])


def _fill(index: np.ndarray, rows: list[list[str]], memories: IdIndex) -> None:
    """Write ``rows`` (already cut to the depth) into ``index`` (rows of ``-1``)."""
    n, _ = index.shape
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    flat = memories.positions(list(chain.from_iterable(rows)))
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(flat.size, dtype=np.int64) - np.repeat(starts, lengths)
    index[np.repeat(np.arange(n), lengths), cols] = flat


def rank_matrix(
    rankings: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    memories: IdIndex,
    depth: int,
) -> RankMatrix:
    """Build a :class:`RankMatrix` ``(len(query_ids), depth)`` from ``query_id -> ranking``.

    Every ranked id must be one of ``memories`` (bundle validation guarantees
    it). Queries missing from ``rankings`` get an empty ranking. Repeats are
    found with one vectorised test over the top ``depth`` of every ranking;
    only rankings that have one are rebuilt from their first occurrences (and
    ``repeats`` counts what was dropped from those).
    """
    n = len(query_ids)
    empty: Sequence[str] = ()
    given = [rankings.get(q, empty) for q in query_ids]
    present = np.fromiter((q in rankings for q in query_ids), dtype=bool, count=n)
    index = np.full((n, depth), -1, dtype=np.int64)
    _fill(index, [list(r[:depth]) for r in given], memories)
    ordered = np.sort(index, axis=1)
    repeated = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
    repeats = np.zeros(n, dtype=np.int64)
    fix = np.flatnonzero(repeated)
    if fix.size:
        firsts = [first_occurrences(given[i]) for i in fix]
        sub = np.full((fix.size, depth), -1, dtype=np.int64)
        _fill(sub, [r[:depth] for r in firsts], memories)
        index[fix] = sub
        repeats[fix] = [len(given[i]) - len(f) for i, f in zip(fix, firsts, strict=True)]
    return RankMatrix(index=index, present=present, repeats=repeats)

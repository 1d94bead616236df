"""Rankings as arrays: first occurrences and padded matrices of id hashes.

Ranking order is the order given in the run. A memory listed again later in
the same ranking counts once, at its first position, and the later copies are
dropped so that the ranks close up (as a TREC run file, which cannot hold a
document twice, would have it). Ranks are 1-based.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from tiap.rescore.ids import IdIndex, hashes


def first_occurrences(ranking: Iterable[str]) -> list[str]:
    """The ranking with later repeats of a memory removed (order kept)."""
    return list(dict.fromkeys(ranking))


@dataclass(frozen=True)
class RankedIds:
    """A run's rankings over a fixed query order, cut to a depth, repeats dropped.

    ``hashes[q, i]`` is ``hash()`` of the memory id at rank ``i + 1`` of query
    ``q`` (``-1``, which ``hash`` never returns, past the end of the ranking);
    ``rows[q]`` is the ranking itself (repeats dropped when it had one within
    the top ``depth``: its first ``depth`` ids are the ranked ones);
    ``present[q]`` says whether the run has an entry for query ``q``;
    ``repeats[q]`` counts the repeats dropped from a ranking that has one
    within the top ``depth`` (0 otherwise: a repeat further down changes no
    measure); ``complete`` says whether every ranking lies within the top
    ``depth`` (then no memory is ranked below it).
    """

    rows: list[Sequence[str]]
    hashes: np.ndarray
    present: np.ndarray
    repeats: np.ndarray
    complete: bool

    @property
    def depth(self) -> int:
        return int(self.hashes.shape[1])

    def ids_at(self, rows: np.ndarray, cols: np.ndarray) -> list[str]:
        """The memory ids at the given (query position, 0-based rank) cells."""
        ranking = self.rows
        return [ranking[q][i] for q, i in zip(rows.tolist(), cols.tolist(), strict=True)]

    def check_known(self, index: IdIndex) -> None:
        """Raise :class:`~tiap.errors.TiapError` naming the first ranked id that ``index``
        does not know (by hash when the known ids' hashes are distinct, else by id)."""
        if index.table is None:
            self.codes(index, strict=True)
            return
        ranked = self.hashes.reshape(-1) != -1
        absent = index.table.absent(self.hashes)
        absent = absent[ranked[absent]]
        if absent.size:
            rows, cols = np.divmod(absent, self.depth)
            raise index.unknown(self.ids_at(rows, cols))

    def codes(self, index: IdIndex, *, strict: bool) -> np.ndarray:
        """``(queries, depth)`` positions in ``index`` of the ranked ids (``-1``: none),
        found by the ids themselves.

        With ``strict`` a ranked id that ``index`` does not know raises
        :class:`~tiap.errors.TiapError`; otherwise it gets ``-1`` too.
        """
        ranked = self.hashes != -1
        codes = np.full(self.hashes.shape, -1, dtype=np.int64)
        rows, cols = np.nonzero(ranked)
        get = index.mapping.get
        codes[rows, cols] = [get(x, -1) for x in self.ids_at(rows, cols)]
        if strict:
            missing = ranked & (codes < 0)
            if missing.any():
                raise index.unknown(self.ids_at(*np.nonzero(missing)))
        return codes


def ranked_ids(
    rankings: Mapping[str, Sequence[str]], query_ids: Sequence[str], depth: int
) -> RankedIds:
    """Build :class:`RankedIds` ``(len(query_ids), depth)`` from ``query_id -> ranking``.

    Queries missing from ``rankings`` get an empty ranking; rankings of other
    queries are ignored. The top ``depth`` ids of all rankings are hashed in
    one pass; repeats are found with one vectorised test over those hashes
    (equal hashes of different ids only send a ranking down the exact path);
    only rankings that have one are rebuilt from their first occurrences.
    """
    n = len(query_ids)
    empty: Sequence[str] = ()
    given = list(map(rankings.get, query_ids, repeat(empty)))
    present = np.fromiter(map(rankings.__contains__, query_ids), dtype=bool, count=n)
    lengths = np.fromiter(map(len, given), dtype=np.int64, count=n)
    cut = np.minimum(lengths, depth)
    long = lengths > depth
    if long.any():
        cells: Iterable[str] = chain.from_iterable(
            r[:depth] if over else r for r, over in zip(given, long.tolist(), strict=True)
        )
    else:
        cells = chain.from_iterable(given)
    flat = np.fromiter(map(hash, cells), dtype=np.int64, count=int(cut.sum()))
    if n and int(cut.min()) == depth:
        hashed = flat.reshape(n, depth)
    else:
        hashed = np.full((n, depth), -1, dtype=np.int64)
        hashed[np.arange(depth) < cut[:, None]] = flat
    ordered = np.sort(hashed, axis=1)
    repeated = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != -1)).any(axis=1)
    repeats = np.zeros(n, dtype=np.int64)
    rows = given
    fix = np.flatnonzero(repeated).tolist()
    if fix:
        rows = list(given)
        for i in fix:
            firsts = first_occurrences(given[i])
            rows[i] = firsts
            repeats[i] = len(given[i]) - len(firsts)
            top = firsts[:depth]
            hashed[i] = -1
            hashed[i, : len(top)] = hashes(top)
    return RankedIds(
        rows=rows, hashes=hashed, present=present, repeats=repeats, complete=not long.any()
    )

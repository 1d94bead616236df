"""String ids to integer positions, many at a time.

Looking up one Python string in a dict compares it with the stored key, which
touches a second object; for the hundreds of thousands of memory ids in a
bundle's runs that comparison dominates. :class:`IdIndex` instead looks the
ids' cached ``hash()`` values up among the hashes of the known ids in a
:class:`HashTable` (an open-addressing table held in numpy arrays: a few
vectorised gathers for any number of lookups). That is exact whenever the
known ids have distinct hashes (checked; otherwise the plain dict path is
used) and every looked-up id is one of the known ids, which bundle validation
guarantees for the memories a run ranks. Callers that cannot rely on that
(relevance of arbitrary rankings) compare the strings of the few positions
that matter.

Why a table of our own: ``benchmarks/rescore.py`` also times every step with
the table's lookups done by numpy and pandas primitives instead. On its
LoCoMo-scale bundle (2,000 queries, 8 runs, k = 60) the per-query measures
took 0.157 s with this table, 0.217 s with ``np.searchsorted`` over the
``np.unique`` keys and 0.164 s with ``pandas.Index.get_indexer``, against
pytrec_eval's 0.603 s (ratios 0.261, 0.360, 0.271); from the loaded bundle
0.217 s, 0.330 s and 0.213 s. A sorted search costs 38-52% more; pandas'
table is as fast as this one (the difference is within the noise of three
runs) but importing pandas adds 0.22-0.28 s to every ``tiap rescore``, which
otherwise never imports it (tested), about 12% of the whole command on the
LoCoMo BM25 bundle (1.8-2.3 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from tiap.errors import TiapError

#: Fibonacci hashing multiplier (2**64 / golden ratio): spreads any int64 keys over the slots.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Values looked up per block (the temporaries of a block stay in the CPU cache).
_BLOCK = 1 << 15


def hashes(ids: Sequence[str]) -> np.ndarray:
    """``hash(id)`` of every id as an int64 array (``hash`` never returns ``-1``)."""
    return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))


class HashTable:
    """Where each of many int64 values occurs among distinct int64 keys.

    An open-addressing table held in numpy arrays. A key's home slot is the
    top bits of ``key * golden`` (Fibonacci hashing) in a table of 8 to 16
    slots per key (fewer for large tables: 4 to 8 from 65,536 keys, 2 to 4
    from a million); keys sharing a home take the next free slots (linear
    probing, laid out at once: with keys sorted by home, ``slot_i = i +
    cummax(home_i - i)``). Free slots hold a value that is not a key. A lookup
    gathers each value's home slot and compares, one vectorised round per
    further probe; most values settle in the first round. Much faster than a
    binary search per value. Build one with :meth:`of_distinct`.
    """

    def __init__(self, keys: np.ndarray, mixed: np.ndarray, order: np.ndarray, bits: int) -> None:
        self._shift = np.uint64(64 - bits)
        home = (mixed >> self._shift).view(np.int64)
        rank = np.arange(mixed.size, dtype=np.int64)
        slots = rank + np.maximum.accumulate(home - rank) if mixed.size else rank
        size = max(1 << bits, int(slots[-1]) + 1 if slots.size else 0) + 1  # last slot free
        free = np.iinfo(np.int64).min
        while bool(np.any(keys == free)):
            free += 1
        self._free = free
        self._keys = np.full(size, free, dtype=np.int64)
        self._where = np.full(size, -1, dtype=np.int64)
        self._keys[slots] = keys[order]
        self._where[slots] = order

    @classmethod
    def of_distinct(cls, keys: np.ndarray) -> HashTable | None:
        """A table of ``keys``, or ``None`` if two of them are equal."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        n = int(keys.size)
        mixed = keys.view(np.uint64) * _GOLDEN  # a bijection: equal keys <=> equal values
        order = np.argsort(mixed, kind="stable")
        mixed = mixed[order]
        if n > 1 and bool(np.any(mixed[1:] == mixed[:-1])):
            return None
        extra_bits = 3 if n < 1 << 16 else 2 if n < 1 << 20 else 1  # 2**extra_bits slots a key
        return cls(keys, mixed, order, n.bit_length() + extra_bits)

    def _homes(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values as a flat int64 array and the home slot of each."""
        flat = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        slots = flat.view(np.uint64) * _GOLDEN
        slots >>= self._shift
        return flat, slots.view(np.int64)

    def absent(self, values: np.ndarray) -> np.ndarray:
        """Flat indices (ascending) of the values that are not keys."""
        flat = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        if flat.size <= _BLOCK:
            return self._absent(flat)
        starts = range(0, flat.size, _BLOCK)
        return np.concatenate([self._absent(flat[s : s + _BLOCK]) + s for s in starts])

    def _absent(self, values: np.ndarray) -> np.ndarray:
        flat, slots = self._homes(values)
        todo = np.flatnonzero(self._keys[slots] != flat)
        slots = slots[todo]
        gone = [np.flatnonzero(flat == self._free)]  # "found" in a free slot: not a key
        while todo.size:
            found = self._keys[slots]
            free = found == self._free
            gone.append(todo[free])
            more = ~free & (found != flat[todo])
            todo, slots = todo[more], slots[more] + 1
        return np.unique(np.concatenate(gone))

    def lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(i, p)``: ``values.flat[i]`` is the key at position ``p`` (keys as given);
        ``i`` ascending, values that are not keys left out."""
        flat = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        if flat.size <= _BLOCK:
            return self._lookup(flat)
        starts = range(0, flat.size, _BLOCK)
        found = [self._lookup(flat[s : s + _BLOCK]) for s in starts]
        index = [i + s for (i, _), s in zip(found, starts, strict=True)]
        return np.concatenate(index), np.concatenate([p for _, p in found])

    def _lookup(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat, slots = self._homes(values)
        found = self._keys[slots]
        hit = found == flat
        todo = np.flatnonzero(~hit & (found != self._free))
        index = [np.flatnonzero(hit)]
        where = [self._where[slots[index[0]]]]
        slots = slots[todo]
        while todo.size:
            slots += 1
            found = self._keys[slots]
            hit = found == flat[todo]
            index.append(todo[hit])
            where.append(self._where[slots[hit]])
            more = ~hit & (found != self._free)
            todo, slots = todo[more], slots[more]
        i, p = np.concatenate(index), np.concatenate(where)
        keep = p >= 0  # a value equal to the free marker "finds" a free slot
        if len(index) > 1:
            order = np.argsort(i[keep], kind="stable")
            return i[keep][order], p[keep][order]
        return i[keep], p[keep]


class IdIndex:
    """Positions ``0..n-1`` of ``ids`` (which must be distinct)."""

    def __init__(
        self, ids: Sequence[str], what: str = "id", *, id_hashes: np.ndarray | None = None
    ) -> None:
        """``id_hashes``, if given, must be ``hash()`` of each of ``ids``."""
        self.ids = tuple(ids)
        self.what = what
        self.hashes = hashes(self.ids) if id_hashes is None else id_hashes

    @cached_property
    def table(self) -> HashTable | None:
        """The ids' hashes in a :class:`HashTable` (``None`` if two ids share a hash)."""
        return HashTable.of_distinct(self.hashes)

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def mapping(self) -> dict[str, int]:
        return {x: i for i, x in enumerate(self.ids)}

    def unknown(self, ids: Sequence[str]) -> TiapError:
        """The error for the first of ``ids`` that is not known."""
        mapping = self.mapping
        missing = next((x for x in ids if x not in mapping), "?")
        return TiapError(f"unknown {self.what} '{missing}'")

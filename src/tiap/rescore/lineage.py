"""Target sets as arrays: the lineage join behind every target, vectorised.

For one store, every (query, memory) pair where the memory's ``source_ids``
meet the query's evidence is found with one sorted join (on the ids' hashes,
each match checked on the ids themselves); each target then keeps the pairs
whose memory it admits (:mod:`tiap.rescore.targets`). A pair is encoded as the
integer key ``q * n_memories + m`` (query position ``q`` in the bundle, memory
position ``m`` in the store), so relevance of a whole run under every target
is one hash-table lookup of its ranked keys (:meth:`StoreTargets.relevance`).
:func:`qrels_targets` builds the same arrays from target sets given directly
(``target -> query_id -> relevant memory ids``). :mod:`tiap.rescore.target_index`
puts these sets and a run's ranks together for the measures and for case
extraction.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat

import numpy as np

from tiap.errors import TiapError
from tiap.rescore.ids import HashTable, IdIndex, hashes
from tiap.rescore.ranking import RankedIds
from tiap.rescore.targets import DEFAULT_TARGETS, get_target
from tiap.traces.bundle import Bundle


@dataclass(frozen=True)
class StoreTargets:
    """Every target's members for every query, on one store: from a bundle's lineage
    (:func:`store_targets`) or from target sets given directly (:func:`qrels_targets`)."""

    store: str
    query_ids: tuple[str, ...]
    memories: IdIndex
    linked: np.ndarray
    admitted: dict[str, np.ndarray]
    sizes: dict[str, np.ndarray]

    @property
    def keys(self) -> dict[str, np.ndarray]:
        """Per target: sorted keys ``q * n_memories + m`` of its (query, memory) members."""
        return {t: self.linked[mask] for t, mask in self.admitted.items()}

    @cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray, HashTable | None]:
        """Query and memory position of each linked pair, and a table of their
        :func:`pair_keys` (``None`` if two pairs share one: then lookups go by id)."""
        width = max(self.n_memories, 1)
        query, memory = np.divmod(self.linked, width)
        keys = pair_keys(self.memories.hashes[memory], query)
        return query, memory, HashTable.of_distinct(keys)

    def relevance(self, ranked: RankedIds, *, strict: bool = False) -> dict[str, np.ndarray]:
        """``target -> rel`` with ``rel[q, i]``: is the memory at rank ``i + 1`` of query
        ``q`` in that query's target?

        Each ranked cell's (query, id hash) key is looked up among the linked
        pairs' keys in one vectorised pass, and the few cells found are checked
        on the query and the id itself (so a hash collision cannot make
        anything relevant); each target then picks its members with a mask. A
        ranked id that is not one of :attr:`memories` is not relevant, or with
        ``strict`` raises :class:`~tiap.errors.TiapError`.
        """
        if strict:
            ranked.check_known(self.memories)
        query, memory, table = self._pairs
        shape = ranked.hashes.shape
        rows_of = np.arange(shape[0], dtype=np.int64)[:, None]
        cells: np.ndarray
        pos: np.ndarray
        if not self.linked.size:
            cells, pos = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        elif table is None:
            width = max(self.n_memories, 1)
            codes = ranked.codes(self.memories, strict=False)
            keys = np.where(codes >= 0, rows_of * width + codes, -1).reshape(-1)
            at = np.minimum(np.searchsorted(self.linked, keys), self.linked.size - 1)
            cells = np.flatnonzero(self.linked[at] == keys)
            pos = at[cells]
        else:
            cells, pos = table.lookup(pair_keys(ranked.hashes, rows_of))
        ranked_cell = ranked.hashes.reshape(-1)[cells] != -1
        rows, cols = np.divmod(cells[ranked_cell], shape[1])
        pos = pos[ranked_cell]
        ranked_ids = ranked.ids_at(rows, cols)
        member_ids = list(map(self.memory_ids.__getitem__, memory[pos].tolist()))
        same = query[pos] == rows
        if ranked_ids != member_ids:  # one C-level comparison; element-wise only on a mismatch
            same &= np.fromiter(map(operator.eq, ranked_ids, member_ids), bool, count=pos.size)
        rows, cols, pos = rows[same], cols[same], pos[same]
        out: dict[str, np.ndarray] = {}
        for t, mask in self.admitted.items():
            rel = np.zeros(shape, dtype=bool)
            rel[rows, cols] = mask[pos]
            out[t] = rel
        return out

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return self.memories.ids

    @property
    def n_memories(self) -> int:
        return len(self.memories)

    def members(self, target: str, query_position: int) -> frozenset[str]:
        """The target set of one query as memory ids."""
        keys = self.keys[target]
        width = max(self.n_memories, 1)
        lo, hi = np.searchsorted(keys, [query_position * width, (query_position + 1) * width])
        return frozenset(self.memory_ids[int(k) % width] for k in keys[lo:hi])

    def as_sets(self, target: str) -> dict[str, frozenset[str]]:
        """``query_id -> set of memory ids`` of one target (a qrels dict, every query kept)."""
        return {q: self.members(target, i) for i, q in enumerate(self.query_ids)}


#: Odd multiplier that spreads query positions over the 64-bit key space.
_QUERY_MIX = np.uint64(0xD6E8FEB86659FD93)


def pair_keys(id_hashes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """A 64-bit key per (query position, memory id hash) pair (broadcast; wraps around).

    Distinct pairs can share a key, very rarely: matches are checked on the
    query and the id.
    """
    query_part = np.asarray(query, dtype=np.int64).view(np.uint64) * _QUERY_MIX
    return (id_hashes.view(np.uint64) + query_part).view(np.int64)


def _flatten(groups: Sequence[Collection[str]]) -> tuple[np.ndarray, list[str]]:
    """(owner position of each id, the ids) for a list of id groups."""
    counts = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    return np.repeat(np.arange(len(groups), dtype=np.int64), counts), list(
        chain.from_iterable(groups)
    )


def linked_pairs(
    memory_sources: Sequence[Collection[str]], query_evidence: Sequence[Collection[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """(query position, memory position) of every pair whose lineage meets the evidence.

    Source ids are matched on their hashes with one sorted join; every
    matched pair is then checked on the ids themselves, so a hash collision
    cannot link anything. Pairs may repeat.
    """
    mem_pos, mem_src = _flatten(memory_sources)
    qry_pos, qry_src = _flatten(query_evidence)
    mem_hash, qry_hash = hashes(mem_src), hashes(qry_src)
    order = np.argsort(mem_hash, kind="stable")
    sorted_hash = mem_hash[order]
    lo = np.searchsorted(sorted_hash, qry_hash, side="left")
    hi = np.searchsorted(sorted_hash, qry_hash, side="right")
    counts = hi - lo
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    offsets = np.arange(total, dtype=np.int64) - np.repeat(starts, counts)
    mem_entry = order[np.repeat(lo, counts) + offsets]
    qry_entry = np.repeat(np.arange(len(qry_src), dtype=np.int64), counts)
    same = np.fromiter(
        map(operator.eq, map(mem_src.__getitem__, mem_entry.tolist()),
            map(qry_src.__getitem__, qry_entry.tolist())),
        dtype=bool,
        count=total,
    )  # fmt: skip
    return qry_pos[qry_entry[same]], mem_pos[mem_entry[same]]


def store_targets(
    bundle: Bundle, store: str, targets: Iterable[str] = DEFAULT_TARGETS
) -> StoreTargets:
    """Target sets of every query of ``bundle`` on ``store``, for each named target."""
    chosen = [get_target(t) for t in targets]
    memories = bundle.stores[store]
    queries = bundle.queries
    width = max(len(memories), 1)
    qry, mem = linked_pairs([m.source_ids for m in memories], [q.evidence for q in queries])
    linked_keys = np.unique(qry * width + mem)
    linked_mem = linked_keys % width
    used = np.unique(linked_mem)
    admitted: dict[str, np.ndarray] = {}
    sizes: dict[str, np.ndarray] = {}
    linked_memories = list(map(memories.__getitem__, used.tolist()))
    for t in chosen:
        admits = np.zeros(width, dtype=bool)
        admits[used] = np.fromiter(
            map(bool, map(t.admits, linked_memories)), dtype=bool, count=used.size
        )
        admitted[t.name] = admits[linked_mem]
        sizes[t.name] = np.bincount(linked_keys[admitted[t.name]] // width, minlength=len(queries))
    return StoreTargets(
        store=store,
        query_ids=tuple(q.query_id for q in queries),
        memories=IdIndex([m.memory_id for m in memories], what=f"memory id in store '{store}'"),
        linked=linked_keys,
        admitted=admitted,
        sizes=sizes,
    )


def _distinct(ids: list[str], what: str) -> tuple[IdIndex, np.ndarray]:
    """An :class:`IdIndex` of the distinct ids (first-seen order) and each id's position.

    Grouped by hash in one sort; each id is then checked against its group's
    first id, and only if two different ids share a hash is a dict used.
    """
    h = hashes(ids)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    order = np.argsort(first)
    distinct = list(map(ids.__getitem__, first[order].tolist()))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    codes = rank[inverse.reshape(-1)]
    if all(map(operator.eq, ids, map(distinct.__getitem__, codes.tolist()))):
        return IdIndex(distinct, what, id_hashes=h[first[order]]), codes
    index = dict.fromkeys(ids)
    position = {x: i for i, x in enumerate(index)}
    codes = np.fromiter(map(position.__getitem__, ids), np.int64, count=len(ids))
    return IdIndex(list(index), what), codes


def qrels_targets(
    qrels: Mapping[str, Mapping[str, Collection[str]]],
    query_ids: Sequence[str],
    store: str = "",
) -> StoreTargets:
    """Target sets given directly, as ``target -> query_id -> relevant memory ids``.

    The form of a qrels file (binary relevance): no store or lineage needed.
    The memories are the distinct ids named anywhere in ``qrels`` (in
    first-seen order); a query absent from a target's mapping has an empty
    target there, and queries not in ``query_ids`` are ignored. The result
    scores rankings exactly like the lineage join of :func:`store_targets`.
    """
    names = list(qrels)
    n = len(query_ids)
    empty: Collection[str] = ()
    groups = list(chain.from_iterable(map(qrels[t].get, query_ids, repeat(empty)) for t in names))
    if any(map(isinstance, groups, repeat(str))):
        at = next(i for i, g in enumerate(groups) if isinstance(g, str))
        t, q = names[at // max(n, 1)], query_ids[at % max(n, 1)]
        raise TiapError(
            f"relevant ids of query '{q}' under target '{t}' must be a collection of "
            f"memory ids, not the string '{groups[at]}'"
        )
    owner, flat = _flatten(groups)
    memories, codes = _distinct(flat, f"memory id in store '{store}'")
    width = max(len(memories), 1)
    keys = (owner % max(n, 1)) * width + codes
    which = owner // max(n, 1)
    linked = np.unique(keys)
    admitted: dict[str, np.ndarray] = {}
    sizes: dict[str, np.ndarray] = {}
    for i, t in enumerate(names):
        members = np.unique(keys[which == i])
        pos = np.minimum(np.searchsorted(members, linked), max(members.size - 1, 0))
        admitted[t] = members[pos] == linked if members.size else np.zeros(linked.size, bool)
        sizes[t] = np.bincount(members // width, minlength=n)
    return StoreTargets(
        store=store,
        query_ids=tuple(query_ids),
        memories=memories,
        linked=linked,
        admitted=admitted,
        sizes=sizes,
    )

"""Target sets as arrays: the lineage join of :mod:`tiap.rescore.targets`, vectorised.

For one store, every (query, memory) pair where the memory's ``source_ids``
meet the query's evidence is found with one sorted join (on the ids' hashes,
each match checked on the ids themselves); each target then
keeps the pairs whose memory it admits. A pair is encoded as the integer key
``q * n_memories + m`` (query position ``q`` in the bundle, memory position
``m`` in the store), so relevance of a whole run under every target is one
``searchsorted`` (:meth:`StoreTargets.relevance`). The sets are exactly those of
:func:`tiap.rescore.targets.target_sets`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tiap.rescore.ids import IdIndex, hashes
from tiap.rescore.targets import DEFAULT_TARGETS, get_target
from tiap.traces.bundle import Bundle


@dataclass(frozen=True)
class StoreTargets:
    """Every target's members for every query of a bundle, on one store."""

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

    def relevance(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """``target -> rel`` with ``rel[q, i]``: is memory ``index[q, i]`` in query ``q``'s
        target? ``index`` holds store positions (``-1`` = no memory), one row per query.

        One vectorised search of every ranked (query, memory) key in the linked
        pairs; each target then picks its members with a mask.
        """
        width = max(self.n_memories, 1)
        keys = np.arange(index.shape[0], dtype=np.int64)[:, None] * width + index
        if self.linked.size == 0:
            return {t: np.zeros(index.shape, dtype=bool) for t in self.admitted}
        pos = np.searchsorted(self.linked, keys)
        np.minimum(pos, self.linked.size - 1, out=pos)
        found = (self.linked[pos] == keys) & (index >= 0)
        return {t: found & mask[pos] for t, mask in self.admitted.items()}

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
        """``query_id -> set of memory ids``, like :func:`~tiap.rescore.targets.target_sets`."""
        return {q: self.members(target, i) for i, q in enumerate(self.query_ids)}


def _flatten(groups: Sequence[Sequence[str]]) -> tuple[np.ndarray, list[str]]:
    """(owner position of each id, the ids) for a list of id groups."""
    counts = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    return np.repeat(np.arange(len(groups), dtype=np.int64), counts), list(
        chain.from_iterable(groups)
    )


def linked_pairs(
    memory_sources: Sequence[Sequence[str]], query_evidence: Sequence[Sequence[str]]
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
    for t in chosen:
        admits = np.zeros(width, dtype=bool)
        admits[used] = np.fromiter(
            (bool(t.admits(memories[i])) for i in used.tolist()), dtype=bool, count=used.size
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

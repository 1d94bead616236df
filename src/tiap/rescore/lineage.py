"""Target sets as arrays: the lineage join of :mod:`tiap.rescore.targets`, vectorised.

For one store, every (query, memory) pair where the memory's ``source_ids``
meet the query's evidence is found with one sorted join; each target then
keeps the pairs whose memory it admits. A pair is encoded as the integer key
``q * n_memories + m`` (query position ``q`` in the bundle, memory position
``m`` in the store), so relevance of a whole run is one ``searchsorted``
(:func:`tiap.rescore.ranking.relevance_matrix`). The sets are exactly those of
:func:`tiap.rescore.targets.target_sets`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tiap.rescore.targets import DEFAULT_TARGETS, get_target
from tiap.traces.bundle import Bundle


@dataclass(frozen=True)
class StoreTargets:
    """Every target's members for every query of a bundle, on one store."""

    store: str
    query_ids: tuple[str, ...]
    memory_ids: tuple[str, ...]
    memory_index: dict[str, int]
    keys: dict[str, np.ndarray]
    sizes: dict[str, np.ndarray]

    @property
    def n_memories(self) -> int:
        return len(self.memory_ids)

    def members(self, target: str, query_position: int) -> frozenset[str]:
        """The target set of one query as memory ids."""
        keys = self.keys[target]
        lo, hi = np.searchsorted(
            keys, [query_position * self.n_memories, (query_position + 1) * self.n_memories]
        )
        return frozenset(self.memory_ids[int(k) % self.n_memories] for k in keys[lo:hi])

    def as_sets(self, target: str) -> dict[str, frozenset[str]]:
        """``query_id -> set of memory ids``, like :func:`~tiap.rescore.targets.target_sets`."""
        return {q: self.members(target, i) for i, q in enumerate(self.query_ids)}


def _pairs(groups: Sequence[Sequence[str]], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(owner position, id index) for every id of every group (repeats are kept; the
    join removes them)."""
    counts = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    total = int(counts.sum())
    ids = np.fromiter(map(index.__getitem__, chain.from_iterable(groups)), np.int64, total)
    return np.repeat(np.arange(len(groups), dtype=np.int64), counts), ids


def store_targets(
    bundle: Bundle, store: str, targets: Iterable[str] = DEFAULT_TARGETS
) -> StoreTargets:
    """Target sets of every query of ``bundle`` on ``store``, for each named target."""
    chosen = [get_target(t) for t in targets]
    memories = bundle.stores[store]
    queries = bundle.queries
    n_mem = len(memories)
    source_index: dict[str, int] = {sid: i for i, sid in enumerate(bundle.sources)}
    for m in memories:  # an in-memory bundle may skip validation; keep the join total
        for sid in m.source_ids:
            source_index.setdefault(sid, len(source_index))
    for q in queries:
        for sid in q.evidence:
            source_index.setdefault(sid, len(source_index))

    mem_pos, mem_src = _pairs([m.source_ids for m in memories], source_index)
    qry_pos, qry_src = _pairs([q.evidence for q in queries], source_index)

    order = np.argsort(mem_src, kind="stable")
    src_sorted, mem_sorted = mem_src[order], mem_pos[order]
    lo = np.searchsorted(src_sorted, qry_src, side="left")
    hi = np.searchsorted(src_sorted, qry_src, side="right")
    counts = hi - lo
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    offsets = np.arange(total, dtype=np.int64) - np.repeat(starts, counts)
    linked_mem = mem_sorted[np.repeat(lo, counts) + offsets]
    linked_qry = np.repeat(qry_pos, counts)
    all_keys = np.unique(linked_qry * max(n_mem, 1) + linked_mem)

    keys: dict[str, np.ndarray] = {}
    sizes: dict[str, np.ndarray] = {}
    for t in chosen:
        admits = np.fromiter((bool(t.admits(m)) for m in memories), dtype=bool, count=n_mem)
        tkeys = all_keys[admits[all_keys % max(n_mem, 1)]] if n_mem else all_keys
        keys[t.name] = tkeys
        sizes[t.name] = np.bincount(tkeys // max(n_mem, 1), minlength=len(queries))
    memory_ids = tuple(m.memory_id for m in memories)
    return StoreTargets(
        store=store,
        query_ids=tuple(q.query_id for q in queries),
        memory_ids=memory_ids,
        memory_index={mid: i for i, mid in enumerate(memory_ids)},
        keys=keys,
        sizes=sizes,
    )

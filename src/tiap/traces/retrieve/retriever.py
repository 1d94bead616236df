"""What every retriever shares: candidate pools (scopes), top-k with stable ties, rounding.

A retriever turns a list of document texts into an index and scores a batch
of query texts against it (:class:`Retriever`). :func:`rank_store` runs it over
one store: for each candidate pool (the query's own conversation or haystack
by default; an explicit pool such as LMEB's candidates; or the whole store with
``scope="global"``) it indexes the pool's memories once, scores all of the
pool's queries in one batch, rounds the scores to the retriever's ``digits``
and keeps the top k, ties broken by store order. So the same input gives the
same rankings and the same bytes, whatever floating-point noise the scoring has.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tiap.errors import TiapError
from tiap.traces.models import Memory, Query, RunEntry

SCOPES: tuple[str, ...] = ("conversation", "global")
_QUERY_BLOCK = 256


class Retriever(Protocol):
    name: str
    #: scores are rounded to this many decimals before ranking and writing
    digits: int
    #: drop candidates whose rounded score is <= 0 (BM25: no shared term)
    drop_nonpositive: bool

    def config(self) -> dict[str, Any]:
        """What to record in ``bundle.toml`` for runs of this retriever."""
        ...

    def prepare(self, texts: Sequence[str], advance: Callable[[int], None]) -> None:
        """Work done once over every text to be indexed (e.g. embeddings)."""
        ...

    def index(self, docs: Sequence[str]) -> Any:
        """An index over one candidate pool."""
        ...

    def score(self, index: Any, queries: Sequence[str]) -> np.ndarray:
        """``len(queries) x len(docs)`` scores."""
        ...


@dataclass(frozen=True)
class ScopeGroup:
    """One candidate pool: positions of its memories in the store and of its queries."""

    key: str | None
    memories: list[int]
    queries: list[int]


def scope_groups(
    memories: Sequence[Memory],
    queries: Sequence[Query],
    scope: str,
    pools: dict[str, frozenset[str]] | None = None,
) -> list[ScopeGroup]:
    """Candidate pools for one store, in first-query order."""
    if scope not in SCOPES:
        raise TiapError(f"unknown scope '{scope}' (use {', '.join(SCOPES)})")
    if scope == "global":
        return [ScopeGroup(None, list(range(len(memories))), list(range(len(queries))))]
    by_query: dict[str | None, list[int]] = {}
    for j, q in enumerate(queries):
        by_query.setdefault(q.conversation_id, []).append(j)
    if pools is not None:
        by_source: dict[str, list[int]] = {}
        for i, m in enumerate(memories):
            for sid in m.source_ids:
                by_source.setdefault(sid, []).append(i)
        groups = []
        for key, qs in by_query.items():
            pool = pools.get(key or "", frozenset())
            mems = sorted({i for sid in pool for i in by_source.get(sid, ())})
            groups.append(ScopeGroup(key, mems, qs))
        return groups
    by_conv: dict[str | None, list[int]] = {}
    for i, m in enumerate(memories):
        by_conv.setdefault(m.conversation_id, []).append(i)
    return [ScopeGroup(key, by_conv.get(key, []), qs) for key, qs in by_query.items()]


def top_k(
    scores: np.ndarray, k: int, digits: int, drop_nonpositive: bool
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per row: (column positions, rounded scores) of the k best, ties by column order."""
    rounded = np.round(scores.astype(np.float64), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    n_cols = rounded.shape[1]
    out = []
    if n_cols > 4 * k:
        # k-th best value per row; every column at least that good is a candidate (ties too)
        kth = -np.partition(-rounded, k - 1, axis=1)[:, k - 1]
    for r, row in enumerate(rounded):
        if n_cols > 4 * k:
            cand = np.flatnonzero(row >= kth[r])
            cols = cand[np.lexsort((cand, -row[cand]))][:k]
        else:
            cols = np.argsort(-row, kind="stable")[:k]
        vals = row[cols]
        if drop_nonpositive:
            keep = vals > 0
            cols, vals = cols[keep], vals[keep]
        out.append((cols, vals))
    return out


@dataclass
class RankTimings:
    index: float = 0.0
    retrieve: float = 0.0


def rank_store(
    retriever: Retriever,
    memories: Sequence[Memory],
    queries: Sequence[Query],
    k: int,
    groups: Sequence[ScopeGroup],
    advance: Callable[[int], None] = lambda n: None,
    timings: RankTimings | None = None,
) -> list[RunEntry]:
    """Rank each query's candidate pool; entries in query order. Consecutive groups
    with the same pool (LMEB gives each query its own candidate list, the same for
    every query of a conversation) share one index."""
    timings = timings if timings is not None else RankTimings()
    entries: list[RunEntry | None] = [None] * len(queries)
    pool: list[int] | None = None
    index: Any = None
    for g in groups:
        t0 = time.perf_counter()
        ids = [memories[i].memory_id for i in g.memories]
        if g.memories != pool:
            docs = [memories[i].text for i in g.memories]
            index = retriever.index(docs) if docs else None
            pool = g.memories
        t1 = time.perf_counter()
        timings.index += t1 - t0
        for start in range(0, len(g.queries), _QUERY_BLOCK):
            block = g.queries[start : start + _QUERY_BLOCK]
            if index is None:
                for j in block:
                    entries[j] = RunEntry(query_id=queries[j].query_id, ranking=[], scores=[])
                advance(len(block))
                continue
            mat = retriever.score(index, [queries[j].question for j in block])
            ranked = top_k(mat, k, retriever.digits, retriever.drop_nonpositive)
            for j, (cols, vals) in zip(block, ranked, strict=True):
                entries[j] = RunEntry(
                    query_id=queries[j].query_id,
                    ranking=[ids[c] for c in cols.tolist()],
                    scores=vals.tolist(),
                )
            advance(len(block))
        timings.retrieve += time.perf_counter() - t1
    return [e for e in entries if e is not None]

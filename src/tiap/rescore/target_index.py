"""One index of target sets and ranks, read by the measures and by case extraction.

:class:`TargetIndex` holds a bundle's target sets: for each store, every
named target's members for every query (:class:`~tiap.rescore.lineage.StoreTargets`,
one lineage join per store, built when a run on it is first asked for). For a
run it gives a :class:`RunIndex`: where that run ranks each target's members,
query by query, with the ranking conventions of :mod:`tiap.rescore.ranking`
(a memory counts at its first occurrence; later repeats are dropped and the
ranks close up). Every measure (``hit@k`` included) is computed from a
:class:`RunIndex`'s relevance, and so is every contested case
(:mod:`tiap.cases.extract`), so "target t gets credit within k" means the same
in ``per_query.csv`` and in the case store. From a notebook::

    index = TargetIndex(bundle)
    ranks = index.run("bm25-parser-D5")
    ranks.hit("raw", 60)          # per query (bundle order): a Raw member in the top 60?
    ranks.first_rank("canonical") # per query: rank of the first Canonical member (0: none)
    index.store("parser-D5").as_sets("source")  # query_id -> set of memory ids
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tiap.errors import TiapError
from tiap.rescore.lineage import StoreTargets, store_targets
from tiap.rescore.metrics import RankedRelevance
from tiap.rescore.ranking import RankedIds, ranked_ids
from tiap.rescore.targets import DEFAULT_TARGETS, get_target
from tiap.traces.bundle import Bundle


@dataclass(frozen=True)
class RunIndex:
    """Where one run ranks the members of each target, for every query of its store's sets.

    ``relevance[t]`` holds, for target ``t``, which ranks of each query's ranking
    (to ``ranked.depth``) are members of that query's target set. Query
    arguments are positions in :attr:`query_ids`; ranks are 1-based.
    """

    run: str
    sets: StoreTargets
    ranked: RankedIds
    relevance: dict[str, RankedRelevance]

    @classmethod
    def of(
        cls, sets: StoreTargets, ranked: RankedIds, *, run: str = "", strict: bool = False
    ) -> RunIndex:
        """Index ``ranked`` (which must cover ``sets.query_ids`` in that order) against
        ``sets``; with ``strict`` every ranked id must be one of ``sets.memories``."""
        relevance = {
            t: RankedRelevance(rel, sets.sizes[t])
            for t, rel in sets.relevance(ranked, strict=strict).items()
        }
        return cls(run=run, sets=sets, ranked=ranked, relevance=relevance)

    @property
    def query_ids(self) -> tuple[str, ...]:
        return self.sets.query_ids

    @property
    def depth(self) -> int:
        """How many ranks of each ranking are held."""
        return self.ranked.depth

    def _target(self, target: str) -> RankedRelevance:
        try:
            return self.relevance[target]
        except KeyError:
            held = ", ".join(self.relevance)
            raise TiapError(f"target '{target}' is not indexed (indexed: {held})") from None

    def size(self, target: str) -> np.ndarray:
        """Per query: how many memories the target set holds."""
        return self._target(target).n_rel.copy()

    def first_rank(self, target: str) -> np.ndarray:
        """Per query: rank of the target's highest-ranked member, ``0`` when none is ranked
        (within :attr:`depth`)."""
        return self._target(target).first_hit.copy()

    def hit(self, target: str, k: int) -> np.ndarray:
        """Per query: is a member of the target within the top ``k``? (``hit@k`` as a mask.)"""
        if k < 1:
            raise TiapError(f"k must be at least 1 (got {k})")
        if k > self.depth and not self.ranked.complete:
            raise TiapError(f"cut-off {k} is deeper than the ranks indexed ({self.depth})")
        first = self.first_rank(target)
        return (first > 0) & (first <= k)

    def ranking(self, query: int) -> Sequence[str]:
        """The query's ranking as indexed: first occurrences only, to :attr:`depth`."""
        return self.ranked.rows[query][: self.depth]

    def memory_at(self, query: int, rank: int) -> str:
        """The memory id at a 1-based rank of the query's ranking."""
        ranking = self.ranking(query)
        if not 1 <= rank <= len(ranking):
            raise TiapError(f"query '{self.query_ids[query]}' has no rank {rank}")
        return ranking[rank - 1]


class TargetIndex:
    """A bundle's target sets per store and, for each run, where it ranks them.

    ``targets`` names registered targets (default: Raw, Source, Canonical); an
    unknown name raises :class:`~tiap.errors.TiapError`. The bundle is not
    modified.
    """

    def __init__(self, bundle: Bundle, targets: Iterable[str] = DEFAULT_TARGETS) -> None:
        self.bundle = bundle
        self.targets: tuple[str, ...] = tuple(get_target(t).name for t in dict.fromkeys(targets))
        if not self.targets:
            raise TiapError("no target selected")
        self.query_ids: tuple[str, ...] = tuple(q.query_id for q in bundle.queries)
        self._stores: dict[str, StoreTargets] = {}

    def store(self, name: str) -> StoreTargets:
        """Every target's members for every query on one store (built once)."""
        sets = self._stores.get(name)
        if sets is None:
            if name not in self.bundle.stores:
                raise TiapError(f"unknown store '{name}'")
            sets = self._stores[name] = store_targets(self.bundle, name, self.targets)
        return sets

    def run(self, run: str, depth: int | None = None) -> RunIndex:
        """Where ``run`` ranks each target's members: its top ``depth`` ranks, by default
        all of them (every ranked id must be in the run's store)."""
        if run not in self.bundle.config.runs:
            raise TiapError(f"unknown run '{run}'")
        store = self.bundle.run_store(run)
        if store not in self.bundle.stores:
            raise TiapError(f"run '{run}' names store '{store}', which the bundle does not have")
        rankings = self.bundle.rankings(run)
        if depth is None:
            depth = max(map(len, rankings.values()), default=0)
        ranked = ranked_ids(rankings, self.query_ids, max(depth, 1))
        return RunIndex.of(self.store(store), ranked, run=run, strict=True)

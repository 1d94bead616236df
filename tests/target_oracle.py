"""Plain-dict reference implementations of target sets, first ranks and contested credits.

The test oracle for :mod:`tiap.rescore.target_index` (the arrays every measure and
every contested case are computed from): written for clarity, one query at a
time, straight from the definitions in DESIGN.md.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from tiap.rescore.targets import get_target
from tiap.traces.bundle import Bundle
from tiap.traces.models import Memory

PAPER_TARGETS = ("raw", "source", "canonical")


def source_index(memories: Iterable[Memory]) -> dict[str, list[Memory]]:
    """``source_id -> memories linked to it``, in store order."""
    index: dict[str, list[Memory]] = {}
    for m in memories:
        for sid in dict.fromkeys(m.source_ids):
            index.setdefault(sid, []).append(m)
    return index


def target_sets(
    bundle: Bundle, store: str, targets: Iterable[str] = PAPER_TARGETS
) -> dict[str, dict[str, frozenset[str]]]:
    """``target -> query_id -> set of memory ids`` for every query of the bundle on one store
    (an empty set where the target is empty)."""
    chosen = [get_target(t) for t in targets]
    index = source_index(bundle.stores[store])
    out: dict[str, dict[str, frozenset[str]]] = {t.name: {} for t in chosen}
    for q in bundle.queries:
        linked: dict[str, Memory] = {}
        for sid in q.evidence:
            for m in index.get(sid, ()):
                linked.setdefault(m.memory_id, m)
        for t in chosen:
            out[t.name][q.query_id] = frozenset(mid for mid, m in linked.items() if t.admits(m))
    return out


def first_ranks(ranking: Sequence[str]) -> dict[str, int]:
    """``memory_id -> 1-based rank`` once later repeats are dropped (ranks close up)."""
    return {mid: rank for rank, mid in enumerate(dict.fromkeys(ranking), start=1)}


def first_hit_rank(
    ranking: Sequence[str], target: Collection[str], k: int | None = None
) -> int | None:
    """1-based rank of the first target member in the top ``k`` (all ranks if ``k`` is None);
    ``None`` when no member is ranked within the cut-off."""
    ranks = [r for m, r in first_ranks(ranking).items() if m in target]
    best = min(ranks, default=None)
    return None if best is None or (k is not None and best > k) else best


def contested(bundle: Bundle, k: int) -> list[tuple[str, str, str, int, int | None]]:
    """The paper's contested credits, ``(run, query_id, memory_id, rank, first_raw_rank)``:
    no Raw member in the top k, a Source and a Canonical member there; the credited memory
    is the highest-ranked Canonical member; ``first_raw_rank`` is the rank of the first Raw
    member anywhere in the ranking."""
    out = []
    for run in bundle.config.runs:
        sets = target_sets(bundle, bundle.run_store(run))
        rankings = bundle.rankings(run)
        for q in bundle.queries:
            raw, source, canon = (sets[t][q.query_id] for t in PAPER_TARGETS)
            if not raw or not canon:
                continue
            ranking = rankings.get(q.query_id, [])
            ranks = first_ranks(ranking)
            top = {m for m, r in ranks.items() if r <= k}
            if top & raw or not (top & source and top & canon):
                continue
            credited = min(top & canon, key=ranks.__getitem__)
            out.append((run, q.query_id, credited, ranks[credited], first_hit_rank(ranking, raw)))
    return out

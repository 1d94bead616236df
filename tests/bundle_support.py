"""Small bundle builders for tests of rescoring and extraction (hand-made and random)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.bundle import Bundle
from tiap.traces.models import BundleConfig, Memory, Query, RunConfig, RunEntry, Source


def mem(memory_id: str, sources: str | Sequence[str], kind: str) -> Memory:
    """``kind``: ``raw`` (raw turn), ``fact`` (canonical, derived) or ``summary`` (derived)."""
    ids = [sources] if isinstance(sources, str) else list(sources)
    return Memory(
        memory_id=memory_id,
        text=f"text of {memory_id}",
        source_ids=ids,
        raw=kind == "raw",
        canonical=kind == "fact",
    )


def make_bundle(
    queries: Mapping[str, Sequence[str]],
    stores: Mapping[str, Iterable[Memory]],
    runs: Mapping[str, tuple[str, Mapping[str, Sequence[str]]]],
    *,
    categories: Mapping[str, str] | None = None,
    run_config: Mapping[str, Mapping[str, Any]] | None = None,
    retrievers: Mapping[str, str] | None = None,
    k: int = 60,
) -> Bundle:
    """A validated in-memory bundle.

    ``queries``: query_id -> evidence source ids; ``runs``: name -> (store,
    query_id -> ranking). Sources are every id cited anywhere.
    """
    store_lists = {name: list(ms) for name, ms in stores.items()}
    source_ids = dict.fromkeys(
        [s for ev in queries.values() for s in ev]
        + [s for ms in store_lists.values() for m in ms for s in m.source_ids]
    )
    bundle = Bundle(
        config=BundleConfig(
            dataset="unit",
            k=k,
            runs={
                name: RunConfig(
                    store=store,
                    retriever=(retrievers or {}).get(name),
                    config=dict((run_config or {}).get(name, {})),
                )
                for name, (store, _) in runs.items()
            },
        ),
        queries=[
            Query(
                query_id=q,
                question=f"question {q}",
                answer="a",
                evidence=list(ev),
                category=(categories or {}).get(q),
            )
            for q, ev in queries.items()
        ],
        sources={s: Source(source_id=s, text=f"turn {s}") for s in source_ids},
        stores=store_lists,
        runs={
            name: [RunEntry(query_id=q, ranking=list(r)) for q, r in rankings.items()]
            for name, (_, rankings) in runs.items()
        },
    )
    bundle.validate()
    return bundle


def random_bundle(
    seed: int,
    *,
    n_queries: int = 300,
    n_sources: int = 400,
    n_runs: int = 3,
    depth: int = 80,
    repeat_rate: float = 0.05,
    missing_rate: float = 0.02,
    empty_rate: float = 0.02,
) -> Bundle:
    """Random queries, one store with raw turns, facts (some multi-source) and summaries,
    and ``n_runs`` runs with relevant memories scattered over the ranks, some repeats,
    some empty rankings and some queries missing from a run."""
    rng = np.random.default_rng(seed)
    sources = [f"s{i}" for i in range(n_sources)]
    memories = [mem(f"raw-{s}", s, "raw") for s in sources]
    for i, s in enumerate(sources):
        for f in range(int(rng.integers(0, 4))):
            linked = [s] if rng.random() < 0.8 else [s, sources[(i + 1) % n_sources]]
            memories.append(mem(f"fact-{s}-{f}", linked, "fact"))
    for start in range(0, n_sources, 10):
        memories.append(mem(f"sum-{start}", sources[start : start + 10], "summary"))
    # a few sources have no raw turn stored: their queries may have an empty raw target
    dropped = {f"raw-{s}" for s in rng.choice(sources, size=n_sources // 20, replace=False)}
    memories = [m for m in memories if m.memory_id not in dropped]
    ids = [m.memory_id for m in memories]
    by_source: dict[str, list[str]] = {}
    for m in memories:
        for s in m.source_ids:
            by_source.setdefault(s, []).append(m.memory_id)

    queries: dict[str, list[str]] = {}
    categories: dict[str, str] = {}
    for qi in range(n_queries):
        start = int(rng.integers(0, n_sources - 4))
        queries[f"q{qi:04d}"] = sources[start : start + int(rng.choice([1, 1, 2, 4]))]
        categories[f"q{qi:04d}"] = str(rng.integers(1, 6))

    runs: dict[str, tuple[str, dict[str, list[str]]]] = {}
    for r in range(n_runs):
        rankings: dict[str, list[str]] = {}
        for q, ev in queries.items():
            if rng.random() < missing_rate:
                continue
            if rng.random() < empty_rate:
                rankings[q] = []
                continue
            length = int(rng.integers(depth // 2, depth + 1))
            picks = [ids[i] for i in rng.choice(len(ids), size=length, replace=False)]
            gold = [m for s in ev for m in by_source.get(s, [])]
            for m in gold:
                if rng.random() < 0.5:
                    picks.insert(int(min(rng.geometric(0.1) - 1, len(picks))), m)
            picks = list(dict.fromkeys(picks))[:length]
            if picks and rng.random() < repeat_rate:
                dup = picks[int(rng.integers(0, len(picks)))]
                picks.insert(int(rng.integers(0, len(picks) + 1)), dup)
            rankings[q] = picks
        runs[f"run{r}"] = ("store", rankings)
    return make_bundle(queries, {"store": memories}, runs, categories=categories)


#: the worked two-run example: discounts and ideal DCGs at k = 3
L3 = 1 / math.log2(3)  # discount at rank 2 = 0.6309297535714575
IDCG2 = 1 + L3
IDCG3 = 1 + L3 + 0.5

NOISE = [mem(f"n{i}", "s9", "raw") for i in range(1, 4)]
MEMORIES = [
    mem("r1", "s1", "raw"),
    mem("f1", "s1", "fact"),
    mem("r2", "s2", "raw"),
    mem("f2", "s2", "fact"),
    mem("f2b", "s2", "fact"),
    mem("r3", "s3", "raw"),
    mem("r4", "s4", "raw"),
    *NOISE,
]
QUERIES = {"q1": ["s1"], "q2": ["s2"], "q3": ["s3"], "q4": ["s4"]}
CATEGORIES = {"q1": "A", "q2": "A", "q3": "B", "q4": "B"}
# Targets: q1 raw {r1} source {r1,f1} canonical {f1}; q2 raw {r2} source {r2,f2,f2b}
# canonical {f2,f2b}; q3 raw=source={r3}, canonical empty; q4 raw=source={r4}, canonical empty.
RUN_A = {
    "q1": ["f1", "n1", "r1"],  # raw 0.5, source 1.5/IDCG2, canonical 1
    "q2": ["r2", "n1", "n2"],  # raw 1, source 1/IDCG3, canonical 0
    "q3": ["n1", "n2", "r3"],  # raw = source = 0.5
    "q4": ["n1", "n2", "n3"],  # raw = source = 0
}
RUN_B = {
    "q1": ["r1", "n1", "n2"],  # raw 1, source 1/IDCG2, canonical 0
    "q2": ["f2", "n1", "r2"],  # raw 0.5, source 1.5/IDCG3, canonical 1/IDCG2
    "q3": ["r3", "n1", "n2"],  # raw = source = 1
    "q4": ["r4", "n1", "n2"],  # raw = source = 1
}


def two_run_bundle() -> Bundle:
    """Two runs (A, B) over four queries and one store with raw and fact memories:
    the worked example of the rescoring tests (figures by hand in the comments)."""
    return make_bundle(
        QUERIES,
        {"st": MEMORIES},
        {"A": ("st", RUN_A), "B": ("st", RUN_B)},
        categories=CATEGORIES,
    )


def conversations(ds: DatasetTraces, keep: set[str]) -> DatasetTraces:
    """A dataset read by an adapter, cut down to the conversations ``keep`` (a new
    object: its sources, queries, turns and derived memories of those conversations)."""

    def ours(items: list[Any]) -> list[Any]:
        return [x for x in items if x.conversation_id in keep]

    derived = {family: ours(memories) for family, memories in ds.derived.items()}
    sources, queries, turns = ours(ds.sources), ours(ds.queries), ours(ds.turns)
    return replace(ds, sources=sources, queries=queries, turns=turns, derived=derived)

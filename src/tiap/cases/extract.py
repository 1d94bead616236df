"""Contested-credit extraction (DESIGN.md, "cases").

For every (run, query) of a bundle, with the run's ranking cut at ``k``:

- a memory *counts* only at its first occurrence in the ranking: later
  repeats are dropped and the ranks close up (as in a TREC run file, and as
  :mod:`tiap.rescore` ranks them); a memory is in the top k when its 1-based
  rank is at most ``k``;
- a target *gets credit* when at least one of its members is in the top k;
- the pair is **contested** when Raw gets no credit while Source and Canonical
  both do. The credited memory is the highest-ranked member of the Canonical
  target.

Pairs that cannot be contested are counted, never silently dropped: a query
whose Raw or Canonical target is empty on the run's store (``empty_target``),
and a query the run has no ranking for (``no_ranking``; it is treated as an
empty ranking, so it cannot be contested either).

``case_id`` is a hash of (dataset, run, query, memory), so extracting the same
bundle twice gives the same ids and the workspace keeps one row per case.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.models import RANK_BUCKETS, Case, EvidenceItem, rank_bucket
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rescore.targets import target_sets
from tiap.traces.bundle import Bundle

#: Bucket names in report order (the paper's strata, then anything past 60).
BUCKET_ORDER: tuple[str, ...] = (*(name for name, _, _ in RANK_BUCKETS), "61+")


def case_id_for(dataset: str, run: str, query_id: str, memory_id: str) -> str:
    """Stable id of a contested case: ``c-`` and 16 hex digits of a sha256."""
    key = json.dumps([dataset, run, query_id, memory_id], ensure_ascii=False)
    return "c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def first_ranks(ranking: Sequence[str]) -> dict[str, int]:
    """``memory_id -> 1-based rank`` once later repeats are dropped (ranks close up)."""
    return {mid: rank for rank, mid in enumerate(dict.fromkeys(ranking), start=1)}


class RunCounts(BaseModel):
    """What happened to one run's queries."""

    model_config = ConfigDict(extra="forbid")

    store: str
    queries: int = 0
    no_ranking: int = 0
    empty_target: int = 0
    raw_credited: int = 0
    canonical_missed: int = 0
    contested: int = 0
    buckets: dict[str, int] = Field(default_factory=dict)


class ExtractReport(BaseModel):
    """Counts of one extraction (also recorded as a ``cases.extract`` event)."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    k: int
    runs: dict[str, RunCounts]
    buckets: dict[str, int]
    contested: int
    added: int = 0
    already_present: int = 0


def _evidence(bundle: Bundle, source_ids: Iterable[str]) -> list[EvidenceItem]:
    items = []
    for sid in dict.fromkeys(source_ids):
        src = bundle.sources[sid]
        items.append(EvidenceItem(source_id=sid, text=src.text, speaker=src.speaker, time=src.time))
    return items


def find_contested(
    bundle: Bundle, *, k: int | None = None, runs: Sequence[str] | None = None
) -> tuple[list[Case], ExtractReport]:
    """Every contested (run, query) of ``bundle`` at cut-off ``k`` (default: the bundle's).

    Cases come out ordered by run (bundle order), then query order in ``queries.jsonl``.
    """
    cut = bundle.config.k if k is None else k
    if cut < 1:
        raise TiapError(f"k must be at least 1 (got {cut})")
    names = list(bundle.config.runs) if runs is None else list(runs)
    unknown = [r for r in names if r not in bundle.config.runs]
    if unknown:
        known = ", ".join(bundle.config.runs) or "none"
        raise TiapError(f"unknown run(s) {', '.join(unknown)} (bundle runs: {known})")
    dataset = bundle.config.dataset
    targets_by_store: dict[str, dict[str, dict[str, frozenset[str]]]] = {}
    cases: list[Case] = []
    counts: dict[str, RunCounts] = {}
    for run in names:
        store = bundle.run_store(run)
        if store not in targets_by_store:
            targets_by_store[store] = target_sets(bundle, store)
        targets = targets_by_store[store]
        memories = bundle.memories(store)
        rankings = bundle.rankings(run)
        rc = RunCounts(store=store, buckets=dict.fromkeys(BUCKET_ORDER, 0))
        for index, q in enumerate(bundle.queries):
            rc.queries += 1
            raw, source, canon = (targets[t][q.query_id] for t in ("raw", "source", "canonical"))
            ranking = rankings.get(q.query_id)
            if ranking is None:
                rc.no_ranking += 1
                ranking = []
            if not raw or not canon:
                rc.empty_target += 1
                continue
            ranks = first_ranks(ranking)
            top = {mid for mid, r in ranks.items() if r <= cut}
            if top & raw:
                rc.raw_credited += 1
                continue
            if not (top & canon and top & source):
                rc.canonical_missed += 1
                continue
            memory_id = min(top & canon, key=lambda m: ranks[m])
            rank = ranks[memory_id]
            bucket = rank_bucket(rank)
            mem = memories[memory_id]
            raw_ranks = sorted(ranks[m] for m in raw if m in ranks)
            cases.append(
                Case(
                    case_id=case_id_for(dataset, run, q.query_id, memory_id),
                    dataset=dataset,
                    run=run,
                    store=store,
                    query_id=q.query_id,
                    query_index=index,
                    question=q.question,
                    answer=q.answer,
                    category=q.category,
                    conversation_id=q.conversation_id,
                    evidence=_evidence(bundle, q.evidence),
                    memory_id=memory_id,
                    memory_text=mem.text,
                    memory_source_ids=list(mem.source_ids),
                    rank=rank,
                    rank_bucket=bucket,
                    k=cut,
                    metadata={
                        "retriever": bundle.run_config(run).retriever,
                        "raw_target_size": len(raw),
                        "canonical_target_size": len(canon),
                        "source_target_size": len(source),
                        "first_raw_rank": raw_ranks[0] if raw_ranks else None,
                    },
                )
            )
            rc.contested += 1
            rc.buckets[bucket] += 1
        rc.buckets = {b: n for b, n in rc.buckets.items() if n or b != "61+"}
        counts[run] = rc
    buckets = {b: sum(rc.buckets.get(b, 0) for rc in counts.values()) for b in BUCKET_ORDER}
    if not buckets["61+"]:
        del buckets["61+"]
    report = ExtractReport(
        dataset=dataset, k=cut, runs=counts, buckets=buckets, contested=len(cases)
    )
    return cases, report


def extract_cases(
    bundle: Bundle,
    workspace: Workspace,
    *,
    k: int | None = None,
    runs: Sequence[str] | None = None,
) -> ExtractReport:
    """Find the contested cases of ``bundle`` and add the new ones to ``workspace``.

    Cases already in the workspace (same ``case_id``) are kept as they are.
    """
    cases, report = find_contested(bundle, k=k, runs=runs)
    with workspace.transaction():
        added, existing = workspace.add_cases(cases)
        report = report.model_copy(update={"added": added, "already_present": existing})
        payload = report.model_dump(mode="json")
        payload["bundle"] = str(bundle.root) if bundle.root is not None else None
        workspace.record_event("cases.extract", payload)
    return report

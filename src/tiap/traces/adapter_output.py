"""What a dataset adapter hands to the store builder: sources, queries, derived memories.

Each adapter (LoCoMo, LongMemEval, LMEB) reads its files into a
:class:`DatasetTraces`: the benchmark's sources (evidence fixtures), its
queries with resolved evidence, the units the extractive parser reads (one per
turn), any derived memories the benchmark ships itself (LoCoMo's observations
and session summaries), and the issue log of every rule applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tiap.traces.models import Memory, Query, Source
from tiap.traces.report import IssueLog


@dataclass(frozen=True)
class Turn:
    """One dialogue turn as the parser sees it.

    ``unit_id`` names the turn (derived memory ids extend it); ``source_id`` is
    the source its facts link to (the turn itself, or its session when the
    bundle's sources are sessions). ``listener`` is who "you" refers to.
    """

    unit_id: str
    source_id: str
    conversation_id: str
    speaker: str
    listener: str
    text: str
    date: str | None = None
    caption: str | None = None


@dataclass
class DatasetTraces:
    """A dataset read into bundle terms, before stores and runs are built."""

    dataset: str
    input_file: str
    input_sha256: str
    sources: list[Source]
    queries: list[Query]
    turns: list[Turn]
    #: Derived memories the dataset ships itself, by store family (e.g. "observations").
    derived: dict[str, list[Memory]] = field(default_factory=dict)
    #: Explicit candidate pools (scene -> source ids), e.g. LMEB's candidates.jsonl.
    #: When None, a query's pool is the memories of its own conversation.
    candidate_pools: dict[str, frozenset[str]] | None = None
    log: IssueLog = field(default_factory=IssueLog)
    counts: dict[str, int] = field(default_factory=dict)
    excluded_queries: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    #: the memory type bundle.toml records (LMEB's tree: Episodic, Dialogue, ...)
    memory_type: str | None = None

    def raw_memories(self) -> list[Memory]:
        """One raw memory per source: the stored source itself."""
        return [
            Memory(
                memory_id=s.source_id,
                text=s.text,
                source_ids=[s.source_id],
                raw=True,
                canonical=False,
                conversation_id=s.conversation_id,
            )
            for s in self.sources
        ]

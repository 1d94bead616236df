"""Pydantic models for what the workspace stores: cases, labels, model calls,
subsets and events (one model per table; :mod:`tiap.cases.rows` derives the
columns from them)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tiap.cases.vocab import RETRACTED, RaterKind

__all__ = [
    "RANK_BUCKETS",
    "RETRACTED",
    "Case",
    "EventRecord",
    "EvidenceItem",
    "LabelMark",
    "LabelRecord",
    "ModelCall",
    "RaterKind",
    "SubsetMember",
    "SubsetRecord",
    "rank_bucket",
]

#: Rank buckets of the credited memory (the paper's strata), as (name, first, last).
RANK_BUCKETS: tuple[tuple[str, int, int], ...] = (("1-5", 1, 5), ("6-20", 6, 20), ("21-60", 21, 60))


def rank_bucket(rank: int) -> str:
    """The bucket of a 1-based rank; ranks past 60 fall in ``61+``."""
    for name, lo, hi in RANK_BUCKETS:
        if lo <= rank <= hi:
            return name
    return "61+"


class EvidenceItem(BaseModel):
    """One gold source turn as a rater sees it."""

    model_config = ConfigDict(extra="forbid")

    source_id: str
    text: str
    speaker: str | None = None
    time: str | None = None

    def render(self) -> str:
        head = " | ".join(x for x in (self.source_id, self.speaker, self.time) if x)
        return f"[{head}] {self.text}"


class Case(BaseModel):
    """A contested credit: Raw missed in the top k, Source and Canonical credited a memory."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    dataset: str
    run: str
    store: str
    query_id: str
    query_index: int
    question: str
    answer: str
    category: str | None = None
    conversation_id: str | None = None
    evidence: list[EvidenceItem]
    memory_id: str
    memory_text: str
    memory_source_ids: list[str]
    rank: int = Field(ge=1)
    rank_bucket: str
    k: int = Field(ge=1)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def prompt_fields(self) -> dict[str, str]:
        """The fields a rubric renders (see ``tiap.rubric``)."""
        return {
            "question": self.question,
            "answer": self.answer,
            "category": self.category or "unknown",
            "evidence": "\n".join(e.render() for e in self.evidence),
            "memory": self.memory_text,
            "rank": str(self.rank),
            "query_id": self.query_id,
            "run": self.run,
            "dataset": self.dataset,
        }


class LabelRecord(BaseModel):
    """One row of the ``labels`` table. ``label`` is ``None`` for an invalid judgment
    (``reason`` says why) or for a retracted human label (``reason='retracted'``)."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    case_id: str
    rater: str
    rater_kind: RaterKind
    label: str | None
    reason: str | None = None
    rationale: str | None = None
    note: str | None = None
    raw: str | None = None
    rubric_id: str | None = None
    rubric_hash: str | None = None
    panel: str | None = None
    model: str | None = None
    request_hash: str | None = None
    settings_hash: str | None = None
    origin: str | None = None
    external_id: str | None = None
    created_at: str | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class LabelMark(BaseModel):
    """What identifies a label row without its texts: enough to tell whether a
    judgment is done (:meth:`tiap.cases.workspace.Workspace.latest_judge_labels`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    case_id: str
    rater: str
    rater_kind: RaterKind
    label: str | None
    reason: str | None = None
    rubric_hash: str | None = None
    model: str | None = None
    request_hash: str | None = None


class ModelCall(BaseModel):
    """One row of ``model_calls``: a judge's request (never its key) and the reply,
    keyed by the request hash."""

    model_config = ConfigDict(extra="forbid")

    request_hash: str
    model: str
    api_base: str | None = None
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    status: str
    error: str | None = None
    created_at: str
    latency_ms: float | None = None
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class SubsetRecord(BaseModel):
    """One row of ``subsets``: a named subset and its parameters (``kind``, ...)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    params: dict[str, Any]
    created_at: str


class SubsetMember(BaseModel):
    """One row of ``subset_cases``."""

    model_config = ConfigDict(extra="forbid")

    subset: str
    case_id: str
    position: int
    overlap: bool = False


class EventRecord(BaseModel):
    """One row of ``events`` (extractions, samples, gates, forced runs, renames)."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    kind: str
    created_at: str
    payload: dict[str, Any]

"""Pydantic models for what the workspace stores: cases and labels."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RaterKind = Literal["judge", "human"]

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


RETRACTED = "retracted"

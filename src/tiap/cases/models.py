"""Pydantic models for what the workspace stores: cases, labels, model calls,
subsets and events (one model per table; :mod:`tiap.cases.rows` derives the
columns from them)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tiap.cases.vocab import (
    ANSWER,
    CONTESTED,
    QRELS,
    RETRACTED,
    CaseKind,
    QrelsPairOrigin,
    RaterKind,
)

if TYPE_CHECKING:  # imported where used: importing tiap.cases loads no rubric code
    from tiap.rubric.answer_criteria import AnswerVariant

__all__ = [
    "QRELS_RUN",
    "RANK_BUCKETS",
    "RETRACTED",
    "BundleVersion",
    "Case",
    "CaseKind",
    "CaseVersion",
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


#: the ``run`` of an annotated qrels pair (the qrels file credited the document);
#: a sampled negative has the name of the run it was drawn from.
QRELS_RUN = "qrels"


def rank_bucket(rank: int) -> str:
    """The bucket of a 1-based rank; ranks past 60 fall in ``61+``."""
    for name, lo, hi in RANK_BUCKETS:
        if lo <= rank <= hi:
            return name
    return "61+"


def stable_case_id(prefix: str, *parts: str) -> str:
    """A case id that the same parts always give: ``prefix``, a dash and 16 hex digits
    of the sha256 of the parts as a JSON list (contested ``c``, qrels ``q``, answer
    ``a``)."""
    key = json.dumps(list(parts), ensure_ascii=False)
    return f"{prefix}-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


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


#: the fields only one kind of case fills (the others leave them empty)
_QRELS_ONLY = ("title", "grade", "pair", "memory_type")
_ANSWER_ONLY = ("hypothesis",)
_RANKED = ("rank", "k")
#: kind -> the fields its cases leave empty (``None``)
_EMPTY_FIELDS: dict[str, tuple[str, ...]] = {
    CONTESTED: (*_QRELS_ONLY, *_ANSWER_ONLY),
    QRELS: _ANSWER_ONLY,
    ANSWER: (*_QRELS_ONLY, *_RANKED),
}


class Case(BaseModel):
    """A case of the workspace, of one of three kinds (``kind``):

    - ``contested`` (the default): a contested credit. Raw missed in the top k,
      Source and Canonical credited ``memory_id`` (at ``rank``, ``rank_bucket``)
      in ``run``; ``evidence`` is the query's gold source evidence.
    - ``qrels``: one annotated (query, document) pair of a qrels file.
      ``question`` is the query, ``memory_id``/``memory_text`` the document and
      ``title`` its title; ``grade`` its qrels grade (``None``: the qrels file has
      no line for it); ``pair`` says whether it was drawn from the qrels file
      (``annotated``, ``run`` is ``"qrels"``) or is a top-ranked document of
      ``run`` without a positive grade (``negative``, at ``rank`` in that run);
      ``rank_bucket`` is the sampling stratum (``grade 2``, ``grade 0``,
      ``unjudged``); ``dataset`` is the task's name, ``memory_type`` its type.
    - ``answer``: a run's generated answer to one query. ``question`` and
      ``answer`` are the query and its gold answer, ``hypothesis`` the answer the
      run generated (``runs/RUN.jsonl``'s ``answer``), ``category`` the question
      type (LongMemEval's ``question_type``), ``metadata["abstention"]`` whether the
      query is an abstention question; ``rank_bucket`` is the question type (the
      sampling stratum, with the run). It has no memory (``memory_id`` and
      ``memory_text`` empty, no sources), rank or k.

    The kind-specific fields of the other kinds stay empty.
    """

    model_config = ConfigDict(extra="forbid")

    case_id: str
    kind: CaseKind = CONTESTED
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
    rank: int | None = Field(default=None, ge=1)
    rank_bucket: str
    k: int | None = Field(default=None, ge=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # qrels pairs only
    title: str | None = None
    grade: int | None = None
    pair: QrelsPairOrigin | None = None
    memory_type: str | None = None
    # answers only
    hypothesis: str | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> Case:
        other = [f for f in _EMPTY_FIELDS[self.kind] if getattr(self, f) is not None]
        if other:
            raise ValueError(f"fields of other kinds of case on a {self.kind} case: {other}")
        if self.kind == CONTESTED and (self.rank is None or self.k is None):
            raise ValueError("a contested case needs its rank and k")
        if self.kind == QRELS and self.pair is None:
            raise ValueError("a qrels case needs its pair origin (annotated or negative)")
        if self.kind == ANSWER:
            self._check_answer()
        return self

    def _check_answer(self) -> None:
        if not (self.hypothesis or "").strip():
            raise ValueError("an answer case needs the run's answer (hypothesis)")
        if self.memory_id or self.memory_text or self.memory_source_ids:
            raise ValueError("an answer case has no memory (memory_id, memory_text, sources)")
        if not isinstance(self.metadata.get("abstention", False), bool):
            raise ValueError("an answer case's metadata 'abstention' must be true or false")

    @property
    def is_qrels(self) -> bool:
        return self.kind == QRELS

    @property
    def is_answer(self) -> bool:
        return self.kind == ANSWER

    @property
    def abstention(self) -> bool:
        """An answer case's query is an abstention question (marked so by its bundle)."""
        return self.metadata.get("abstention") is True

    @property
    def criteria_variant(self) -> AnswerVariant:
        """The criteria variant an answer case is judged by
        (:func:`tiap.rubric.answer_criteria.answer_variant`: from its question type and
        whether it is an abstention question, never from its text)."""
        from tiap.rubric.answer_criteria import answer_variant

        return answer_variant(self.category, self.query_id, abstention=self.abstention)

    @property
    def grade_text(self) -> str:
        """A qrels pair's annotation: ``grade 2``, or ``no qrels line``."""
        return "no qrels line" if self.grade is None else f"grade {self.grade}"

    def prompt_fields(self) -> dict[str, str]:
        """The fields a rubric renders (see ``tiap.rubric``), with the case's id and
        kind (``case_id``, ``case_kind``: a rubric judges cases of one kind)."""
        common = {
            "case_id": self.case_id,
            "case_kind": self.kind,
            "query_id": self.query_id,
            "run": self.run,
            "dataset": self.dataset,
        }
        if self.kind == ANSWER:
            from tiap.rubric.answer_criteria import criteria_for

            variant = self.criteria_variant
            return {
                **common,
                "question": self.question,
                "answer": self.answer,
                "response": self.hypothesis or "",
                "question_type": self.category or "unknown",
                "criteria": criteria_for(variant),
                "variant": variant,
            }
        if self.kind == QRELS:
            return {
                **common,
                "query": self.question,
                "title": self.title or "",
                "document": self.memory_text,
                "doc_id": self.memory_id,
                "memory_type": self.memory_type or "unknown",
                "category": self.category or "unknown",
                "answer": self.answer,
                # offered for a rubric that wants it; the built-in one stays blind
                "grade": "none" if self.grade is None else str(self.grade),
            }
        return {
            **common,
            "question": self.question,
            "answer": self.answer,
            "category": self.category or "unknown",
            "evidence": "\n".join(e.render() for e in self.evidence),
            "memory": self.memory_text,
            "rank": str(self.rank),
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
    #: set on a label made on a case version that has been retired: the
    #: ``case_versions`` row of that version (the label is kept, out of every figure)
    retired_with: int | None = None


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
    #: the bundle version its cases were of when it was drawn (``None``: not recorded,
    #: or cases of several versions)
    bundle_fingerprint: str | None = None
    #: when it became stale: a case version it holds was retired, or its cases moved
    #: to another bundle version (:mod:`tiap.cases.versions`); ``None``: current
    stale_since: str | None = None


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


class BundleVersion(BaseModel):
    """One row of ``bundle_versions``: a version of the cases of one *scope* (the
    workspace's contested credits, or one subset of drawn qrels pairs), known by its
    fingerprint (:mod:`tiap.cases.fingerprint`). ``retired_at`` ``None``: the scope's
    current version."""

    model_config = ConfigDict(extra="forbid")

    scope: str
    fingerprint: str
    kind: CaseKind
    source: str | None = None
    #: what went into the fingerprint besides the cases (dataset, k, rule; draw options)
    definition: dict[str, Any]
    #: the cases the version defines (all of the bundle's, whichever were stored)
    cases: int
    created_at: str
    retired_at: str | None = None


class CaseVersion(BaseModel):
    """One row of ``case_versions``: a case as it was in a bundle version that has
    been retired, kept with the labels made on it (their ``retired_with``)."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    case_id: str
    #: the version it was of (``None``: extracted before versions were recorded)
    bundle_fingerprint: str | None
    case: Case
    created_at: str
    retired_at: str
    #: the fingerprint of the version that retired it
    retired_by: str

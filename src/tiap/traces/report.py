"""The build report (``build_report.json``): every normalisation and exclusion, counted and listed.

Building a bundle from benchmark files applies fixed rules to the files'
quirks: what is unambiguous is normalised, what is not is excluded. Each time a
rule fires, an :class:`Issue` is recorded, so nothing is changed or dropped
silently. :data:`ISSUE_KINDS` is the registry of rules, with the action each
takes and what it means; ``issue_counts`` sums them up by kind.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Action = Literal["normalised", "excluded", "kept"]

#: kind -> (action, meaning). Every Issue kind must be listed here.
ISSUE_KINDS: dict[str, tuple[Action, str]] = {
    "evidence_split": (
        "normalised",
        "one evidence string packed several turn ids; split into separate ids",
    ),
    "evidence_reformatted": (
        "normalised",
        "an evidence id with a stray colon or a leading zero, rewritten to the canonical form",
    ),
    "evidence_malformed": (
        "excluded",
        "an evidence string with no recognisable id; that evidence entry is dropped",
    ),
    "evidence_unresolved": (
        "excluded",
        "a well-formed evidence id that names no turn or session; that entry is dropped",
    ),
    "evidence_duplicate": (
        "normalised",
        "the same evidence id listed twice in one item; kept once",
    ),
    "evidence_fallback": (
        "normalised",
        "no turn is flagged has_answer: every turn of the answer sessions is the evidence",
    ),
    "query_no_evidence": (
        "excluded",
        "a question left with no resolvable evidence; the bundle format needs evidence",
    ),
    "query_no_candidates": (
        "excluded",
        "a query whose scene has no candidate list; it has no candidate pool to rank",
    ),
    "duplicate_question": (
        "excluded",
        "an exact repeat (question, answer, evidence, category) of an earlier item",
    ),
    "repeated_question_text": (
        "kept",
        "the same question text as an earlier item but a different answer or category",
    ),
    "duplicate_query_id": ("excluded", "a question id already used by an earlier record"),
    "answer_from_adversarial": (
        "normalised",
        "category 5 item: the answer is the item's adversarial_answer",
    ),
    "answer_not_text": ("normalised", "a numeric answer, kept as text"),
    "duplicate_session": (
        "excluded",
        "a session id listed again in the same haystack (identical content); later copy dropped",
    ),
    "duplicate_session_conflict": (
        "excluded",
        "a session id listed again in the same haystack with different content; later copy dropped",
    ),
    "answer_session_unflagged": (
        "kept",
        "an answer session with no turn flagged has_answer (turn-level evidence skips it)",
    ),
    "observation_split": (
        "normalised",
        "an observation naming several turns (a list or a comma-joined string); linked to each",
    ),
    "observation_unresolved": (
        "excluded",
        "an observation's turn id that names no turn: that link is dropped "
        "(an observation left with no link is not stored)",
    ),
    "summary_without_turns": (
        "excluded",
        "a session summary for a session that has no turns; not stored",
    ),
    "session_without_turns": (
        "kept",
        "a session with a date but no turn list; it contributes no sources",
    ),
    "image_caption": (
        "normalised",
        "a turn that shares an image: '[shares an image: CAPTION]' appended to its text",
    ),
    "parser_no_facts": (
        "kept",
        "a turn from which the parser extracted no fact (greetings, questions only)",
    ),
    "run_query_excluded": (
        "excluded",
        "an attached run ranks a query that the build excluded; those rankings are dropped",
    ),
    # BEAM
    "index_marker": (
        "normalised",
        "a message ends with its ' ->-> b,k' plan marker (its index); the marker is stripped",
    ),
    "stray_marker": (
        "normalised",
        "a '->-> b,k' plan marker on a message whose index is not that marker; stripped",
    ),
    "whitespace_collapsed": (
        "normalised",
        "runaway whitespace (a run of 100 or more characters, or trailing) collapsed",
    ),
    "text_capped": (
        "normalised",
        "a message longer than the length cap, cut to the cap before indexing",
    ),
    "evidence_not_integer": (
        "normalised",
        "a message id given as a digit string or a whole float; read as the integer",
    ),
    # tiap traces import
    "import_link_unresolved": (
        "excluded",
        "a memory's source link names no source of the benchmark; that link is dropped",
    ),
    "import_memory_unlinked": (
        "kept",
        "a memory with no resolvable source link: kept, neither raw nor linked "
        "(it is in no target)",
    ),
    "import_raw_unlinked": (
        "normalised",
        "a memory flagged raw without any resolvable source link; kept as not raw",
    ),
    "import_ranked_unknown": (
        "excluded",
        "a ranked id that is not one of the store's memories; dropped from the ranking "
        "(later memories move up)",
    ),
    "import_ranked_repeat": (
        "kept",
        "a memory ranked twice for one query; kept (only its first rank counts)",
    ),
    "import_query_excluded": (
        "excluded",
        "search results for a query the benchmark build excluded; dropped",
    ),
}

#: Kinds whose every occurrence is listed in ``issues`` (others are only counted,
#: with the first few listed as examples, because they are routine and numerous).
ROUTINE_KINDS = frozenset(
    {"answer_from_adversarial", "image_caption", "parser_no_facts", "index_marker"}
)
EXAMPLES_PER_ROUTINE_KIND = 5


class Issue(BaseModel):
    """One application of a rule to one item of the input."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    action: Action
    item: str = Field(description="the query, memory, session or turn the rule applied to")
    conversation_id: str | None = None
    value: str | None = Field(default=None, description="the input value the rule read")
    result: str | None = Field(default=None, description="what the build kept, if anything")
    detail: str = ""


class BuildReport(BaseModel):
    """``build_report.json``: what a build read, kept, normalised and excluded."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    input_file: str
    input_sha256: str
    options: dict[str, Any] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    categories: dict[str, int] = Field(default_factory=dict)
    stores: dict[str, int] = Field(default_factory=dict)
    runs: dict[str, int] = Field(default_factory=dict)
    rules: dict[str, str] = Field(default_factory=dict)
    issue_counts: dict[str, int] = Field(default_factory=dict)
    excluded_queries: list[str] = Field(default_factory=list)
    issues: list[Issue] = Field(default_factory=list)


class IssueLog:
    """Collects issues while a dataset is read; kinds must be in :data:`ISSUE_KINDS`."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.issues: list[Issue] = []

    def add(
        self,
        kind: str,
        item: str,
        *,
        conversation_id: str | None = None,
        value: object = None,
        result: object = None,
        detail: str = "",
    ) -> None:
        action, _ = ISSUE_KINDS[kind]
        n = self.counts.get(kind, 0) + 1
        self.counts[kind] = n
        if kind in ROUTINE_KINDS and n > EXAMPLES_PER_ROUTINE_KIND:
            return
        self.issues.append(
            Issue(
                kind=kind,
                action=action,
                item=item,
                conversation_id=conversation_id,
                value=None if value is None else _text(value),
                result=None if result is None else _text(result),
                detail=detail,
            )
        )

    def copy(self) -> IssueLog:
        new = IssueLog()
        new.counts = dict(self.counts)
        new.issues = list(self.issues)
        return new

    def of_kind(self, kind: str) -> list[Issue]:
        return [i for i in self.issues if i.kind == kind]

    def rules(self) -> dict[str, str]:
        """The meaning of each rule that fired."""
        return {k: f"{ISSUE_KINDS[k][0]}: {ISSUE_KINDS[k][1]}" for k in sorted(self.counts)}


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)

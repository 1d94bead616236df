"""LongMemEval (oracle, S or M files) -> sources and queries, one haystack per question.

The file is streamed record by record (the M file is gigabytes). Every question
is its own conversation: its haystack is namespaced by the question id, so a
session shared by two questions (or dated differently in two haystacks) is two
sets of sources, and retrieval for a question sees only its own haystack.

- ``granularity="turn"``: every turn is a source ``<question_id>:<session_id>:<n>``
  (``n`` from 1) with its role and its session's date.
- ``granularity="session"``: every session is a source ``<question_id>:<session_id>``
  whose text is its turns as ``role: content`` lines.

Evidence (recorded in ``bundle.toml`` as ``evidence``):

- ``has-answer`` (default): the turns flagged ``has_answer`` (at session
  granularity, the sessions holding one). A question with no flagged turn (21
  abstention questions in the oracle file) is excluded and listed.
- ``answer-sessions``: every turn of the ``answer_session_ids`` sessions (at
  session granularity, those sessions).
- ``has-answer-or-sessions``: flagged turns; a question with none falls back to
  every turn of its answer sessions (listed as ``evidence_fallback``).

A session id repeated in one haystack keeps its first position; the repeat is
dropped and listed. An answer session id missing from the haystack is listed
and skipped. Abstention questions (``_abs``) are kept and marked; numeric
answers become text; answers with grading notes are kept verbatim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.errors import InputError, TiapError
from tiap.io import describe_validation_error
from tiap.traces.adapter_output import DatasetTraces, Turn
from tiap.traces.jsonstream import StreamInfo, iter_json_list
from tiap.traces.models import Query, Source
from tiap.traces.report import IssueLog

Granularity = Literal["turn", "session"]
EvidenceRule = Literal["has-answer", "answer-sessions", "has-answer-or-sessions"]
GRANULARITIES: tuple[str, ...] = ("turn", "session")
EVIDENCE_RULES: tuple[str, ...] = ("has-answer", "answer-sessions", "has-answer-or-sessions")
NO_EVIDENCE_REASONS: dict[str, str] = {
    "has-answer": "no turn is flagged has_answer",
    "answer-sessions": "no answer session in the haystack",
    "has-answer-or-sessions": "no turn is flagged has_answer and no answer session in the haystack",
}
SPEAKERS: dict[str, tuple[str, str]] = {
    "user": ("User", "Assistant"),
    "assistant": ("Assistant", "User"),
}


class LmeTurn(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str
    has_answer: bool = False


class LmeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    question_id: str
    question_type: str
    question: str
    answer: str | int | float
    question_date: str | None = None
    haystack_dates: list[str]
    haystack_session_ids: list[str]
    haystack_sessions: list[list[LmeTurn]]
    answer_session_ids: list[str] = []


class _Record:
    """Reads one LongMemEval record into the dataset."""

    def __init__(self, out: DatasetTraces, rec: LmeRecord, granularity: str) -> None:
        self.out = out
        self.r = rec
        self.qid = rec.question_id
        self.granularity = granularity
        self.log: IssueLog = out.log
        # session id -> (source id of the session, turn ids, flagged turn ids)
        self.sessions: dict[str, tuple[str, list[str], list[str]]] = {}

    def read_haystack(self) -> None:
        r = self.r
        kept: dict[str, list[tuple[str, str]]] = {}
        for pos, (sid, date, turns) in enumerate(
            zip(r.haystack_session_ids, r.haystack_dates, r.haystack_sessions, strict=True)
        ):
            self.out.counts["session_slots"] += 1
            content = [(t.role, t.content) for t in turns]
            if sid in kept:
                same = kept[sid] == content
                self.log.add(
                    "duplicate_session" if same else "duplicate_session_conflict",
                    f"{self.qid}:{sid}",
                    conversation_id=self.qid,
                    value=f"position {pos} ({date})",
                    detail="first occurrence kept",
                )
                continue
            kept[sid] = content
            self.add_session(sid, date, turns)

    def add_session(self, sid: str, date: str, turns: list[LmeTurn]) -> None:
        session_source = f"{self.qid}:{sid}"
        turn_ids: list[str] = []
        flagged: list[str] = []
        for j, t in enumerate(turns, start=1):
            tid = f"{session_source}:{j}"
            speaker, listener = SPEAKERS.get(t.role, (t.role, "Assistant"))
            source_id = tid if self.granularity == "turn" else session_source
            if self.granularity == "turn":
                meta: dict[str, Any] = {"session_id": sid, "turn": j}
                if t.has_answer:
                    meta["has_answer"] = True
                self.out.sources.append(
                    Source(
                        source_id=tid,
                        text=t.content,
                        speaker=t.role,
                        time=date,
                        conversation_id=self.qid,
                        metadata=meta,
                    )
                )
            self.out.turns.append(
                Turn(
                    unit_id=tid,
                    source_id=source_id,
                    conversation_id=self.qid,
                    speaker=speaker,
                    listener=listener,
                    text=t.content,
                    date=date,
                )
            )
            turn_ids.append(tid)
            if t.has_answer:
                flagged.append(tid)
        if self.granularity == "session":
            self.out.sources.append(
                Source(
                    source_id=session_source,
                    text="\n".join(f"{t.role}: {t.content}" for t in turns),
                    time=date,
                    conversation_id=self.qid,
                    metadata={"session_id": sid, "turns": len(turns)},
                )
            )
        self.sessions[sid] = (session_source, turn_ids, flagged)
        self.out.counts["sessions"] += 1
        self.out.counts["turns"] += len(turns)

    def evidence(self, rule: str) -> tuple[list[str], str | None]:
        """The query's evidence under ``rule`` and the fallback used, if any."""
        answer_sessions: list[str] = []
        for sid in dict.fromkeys(self.r.answer_session_ids):
            if sid not in self.sessions:
                self.log.add(
                    "evidence_unresolved",
                    self.qid,
                    conversation_id=self.qid,
                    value=sid,
                    detail="answer session id is not in the haystack",
                )
                continue
            answer_sessions.append(sid)
            if not self.sessions[sid][2]:
                self.log.add(
                    "answer_session_unflagged", f"{self.qid}:{sid}", conversation_id=self.qid
                )
        by_turn = self.granularity == "turn"
        flagged = [
            x
            for src, _turns, flags in self.sessions.values()
            for x in ((flags if by_turn else [src]) if flags else [])
        ]
        in_answer = [
            x
            for sid in answer_sessions
            for x in (self.sessions[sid][1] if by_turn else [self.sessions[sid][0]])
        ]
        if rule == "answer-sessions":
            return in_answer, None
        if flagged or rule == "has-answer":
            return flagged, None
        return in_answer, "answer-sessions"

    def query(self, rule: str) -> Query | None:
        r = self.r
        evidence, fallback = self.evidence(rule)
        if not evidence:
            why = NO_EVIDENCE_REASONS[rule]
            self.log.add(
                "query_no_evidence",
                self.qid,
                conversation_id=self.qid,
                detail=why + (" (abstention question)" if self.qid.endswith("_abs") else ""),
            )
            return None
        meta: dict[str, Any] = {
            "question_date": r.question_date,
            "answer_session_ids": list(r.answer_session_ids),
        }
        if fallback:
            meta["evidence_rule"] = fallback
            self.log.add(
                "evidence_fallback", self.qid, conversation_id=self.qid, result=len(evidence)
            )
        if isinstance(r.answer, int | float):
            self.log.add("answer_not_text", self.qid, conversation_id=self.qid, value=r.answer)
        return Query(
            query_id=self.qid,
            question=r.question,
            answer=r.answer if isinstance(r.answer, str) else _number_text(r.answer),
            evidence=evidence,
            category=r.question_type,
            conversation_id=self.qid,
            abstention=self.qid.endswith("_abs"),
            metadata=meta,
        )


def _number_text(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def load_longmemeval(
    path: str | Path,
    *,
    granularity: str = "turn",
    evidence: str = "has-answer",
) -> DatasetTraces:
    """Read a LongMemEval JSON file (oracle, S or M) into bundle terms, streaming it."""
    if granularity not in GRANULARITIES:
        raise TiapError(f"unknown granularity '{granularity}' (use {', '.join(GRANULARITIES)})")
    if evidence not in EVIDENCE_RULES:
        raise TiapError(f"unknown evidence rule '{evidence}' (use {', '.join(EVIDENCE_RULES)})")
    p = Path(path)
    info = StreamInfo()
    out = DatasetTraces(
        dataset="longmemeval",
        input_file=p.name,
        input_sha256="",
        sources=[],
        queries=[],
        turns=[],
        options={"granularity": granularity, "evidence": evidence},
        description=f"LongMemEval: {granularity}s as sources, evidence '{evidence}'",
    )
    for key in ("records", "abstention_questions", "session_slots", "sessions", "turns"):
        out.counts[key] = 0
    seen: set[str] = set()
    for line, raw in iter_json_list(p, info):
        n = out.counts["records"]
        out.counts["records"] += 1
        try:
            rec = LmeRecord.model_validate(raw)
        except ValidationError as exc:
            where = raw.get("question_id", "?") if isinstance(raw, dict) else "?"
            raise InputError(
                p, f"record {n} ('{where}'): {describe_validation_error(exc)}", line
            ) from None
        lengths = {
            len(rec.haystack_session_ids),
            len(rec.haystack_dates),
            len(rec.haystack_sessions),
        }
        if len(lengths) != 1:
            raise InputError(
                p,
                f"record {n} ('{rec.question_id}'): haystack_session_ids, haystack_dates and "
                "haystack_sessions differ in length",
                line,
            )
        if rec.question_id in seen:
            out.log.add("duplicate_query_id", rec.question_id, value=f"record {n}")
            out.excluded_queries.append(f"{rec.question_id} (record {n})")
            continue
        seen.add(rec.question_id)
        out.counts["abstention_questions"] += rec.question_id.endswith("_abs")
        reader = _Record(out, rec, granularity)
        reader.read_haystack()
        query = reader.query(evidence)
        if query is None:
            out.excluded_queries.append(rec.question_id)
        else:
            out.queries.append(query)
    out.input_sha256 = info.sha256
    out.counts["queries"] = len(out.queries)
    out.counts["queries_excluded"] = len(out.excluded_queries)
    out.counts["sources"] = len(out.sources)
    return out

"""LoCoMo (``locomo10.json``) -> sources, queries, observations and session summaries.

Rules (each application is recorded in the build report):

- Every turn is a source ``<sample_id>:<dia_id>`` (e.g. ``conv-26:D1:3``) with its
  speaker and its session's date-time. A turn that shares an image shows its
  BLIP caption: ``" [shares an image: CAPTION]"`` is appended to its text (the
  caption is also kept in ``metadata.image_caption``), because answers are
  sometimes only in the caption.
- Every QA item is a query ``<sample_id>:q<index>`` (index in the sample's
  ``qa`` list, from 0) with its category named (1 multi-hop, 2 temporal,
  3 open-domain, 4 single-hop, 5 adversarial). Category 5 answers come from
  ``adversarial_answer``; numeric answers become text.
- Evidence strings are normalised: ``D:`` becomes ``D``, every ``D<s>:<t>`` in the
  string is an id (so ``"D8:6; D9:17"`` gives two), leading zeros are dropped
  (``D30:05`` -> ``D30:5``), repeats are kept once. A string with no id (``"D"``)
  and an id that names no turn (``D10:19`` in a 16-turn session) are dropped and
  listed. A query left with no evidence is excluded and listed.
- An exact repeat of an earlier item (same question, answer, evidence and
  category) is excluded and listed (``keep_duplicates`` keeps it); the same
  question text with a different answer or category is kept and listed.
- Observations (``observation``) become canonical memories ``<sample_id>:obs:<n>``
  (``n`` from 1 in file order) linked to every turn they name (a list or a
  comma-joined string names several).
- Session summaries become derived, non-canonical memories
  ``<sample_id>:summary:<session>`` linked to every turn of their session.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.errors import InputError
from tiap.io import describe_validation_error
from tiap.traces.adapter_output import DatasetTraces, Turn
from tiap.traces.jsonstream import StreamInfo, iter_json_list
from tiap.traces.models import Memory, Query, Source
from tiap.traces.report import IssueLog

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")
_OBS_KEY = re.compile(r"session_(\d+)_observation")
_SUMMARY_KEY = re.compile(r"session_(\d+)_summary")
_DIA_ID = re.compile(r"D(\d+):(\d+)")

EVIDENCE_RULES: dict[str, str | None] = {
    "malformed": "evidence_malformed",
    "split": "evidence_split",
    "reformatted": "evidence_reformatted",
    "unresolved": "evidence_unresolved",
    "duplicate": "evidence_duplicate",
}
OBSERVATION_RULES: dict[str, str | None] = {
    "malformed": "observation_unresolved",
    "split": None,  # logged once per observation as observation_split
    "reformatted": "evidence_reformatted",
    "unresolved": "observation_unresolved",
    "duplicate": None,
}


class LocomoTurn(BaseModel):
    model_config = ConfigDict(extra="allow")

    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None


class LocomoQA(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: str
    answer: str | int | float | None = None
    adversarial_answer: str | int | float | None = None
    evidence: list[str] = []
    category: int


class LocomoSample(BaseModel):
    model_config = ConfigDict(extra="allow")

    sample_id: str
    conversation: dict[str, Any]
    observation: dict[str, Any] = {}
    session_summary: dict[str, Any] = {}
    qa: list[LocomoQA] = []


def normalise_dia_ids(value: str) -> list[str]:
    """Every ``D<session>:<turn>`` id in ``value``, canonical form, in order (may be empty)."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(value.replace("D:", "D"))]


def _answer_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class _Sample:
    """Reads one LoCoMo sample into the dataset."""

    def __init__(self, out: DatasetTraces, sample: LocomoSample, path: Path, line: int) -> None:
        self.out = out
        self.s = sample
        self.cid = sample.sample_id
        self.path = path
        self.line = line
        self.log: IssueLog = out.log
        self.turn_ids: set[str] = set()
        self.session_turns: dict[int, list[str]] = {}

    def fail(self, problem: str) -> InputError:
        return InputError(self.path, f"sample '{self.cid}': {problem}", self.line)

    # ---------------------------------------------------------------- turns
    def read_turns(self) -> None:
        conv = self.s.conversation
        a, b = str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.fullmatch(key)) is not None
        )
        dated = {int(m.group(1)) for key in conv if (m := _DATE_KEY.fullmatch(key))}
        for n in sorted(dated - {s for s, _ in sessions}):
            self.log.add(
                "session_without_turns",
                f"{self.cid}:S{n}",
                conversation_id=self.cid,
                detail=f"session_{n}_date_time is present but session_{n} is not",
            )
        self.out.counts["sessions_date_only"] += len(dated - {s for s, _ in sessions})
        for n, key in sessions:
            turns = conv[key]
            if not isinstance(turns, list):
                raise self.fail(f"'{key}' is not a list of turns")
            date = conv.get(f"{key}_date_time")
            date = str(date) if date is not None else None
            ids: list[str] = []
            for i, raw in enumerate(turns):
                try:
                    t = LocomoTurn.model_validate(raw)
                except ValidationError as exc:
                    raise self.fail(f"{key}[{i}]: {describe_validation_error(exc)}") from None
                ids.append(self.add_turn(t, n, date, a, b))
            self.session_turns[n] = ids
            self.out.counts["sessions"] += 1

    def add_turn(self, t: LocomoTurn, session: int, date: str | None, a: str, b: str) -> str:
        norm = normalise_dia_ids(t.dia_id)
        if len(norm) != 1:
            raise self.fail(f"turn id '{t.dia_id}' is not of the form D<session>:<turn>")
        sid = f"{self.cid}:{norm[0]}"
        if sid in self.turn_ids:
            raise self.fail(f"turn id '{t.dia_id}' appears twice")
        self.turn_ids.add(sid)
        text = t.text
        meta: dict[str, Any] = {"dia_id": norm[0], "session": session}
        caption = (t.blip_caption or "").strip() or None
        if caption:
            text = f"{text} [shares an image: {caption}]"
            meta["image_caption"] = caption
            self.log.add("image_caption", sid, conversation_id=self.cid, value=caption)
        self.out.sources.append(
            Source(
                source_id=sid,
                text=text,
                speaker=t.speaker,
                time=date,
                conversation_id=self.cid,
                metadata=meta,
            )
        )
        listener = b if t.speaker == a else a
        self.out.turns.append(
            Turn(
                unit_id=sid,
                source_id=sid,
                conversation_id=self.cid,
                speaker=t.speaker,
                listener=listener,
                text=t.text,
                date=date,
                caption=caption,
            )
        )
        self.out.counts["turns"] += 1
        return sid

    # ---------------------------------------------------------------- queries
    def resolve(self, item: str, strings: list[str], kinds: dict[str, str | None]) -> list[str]:
        """Normalise and resolve turn-id strings; ``kinds`` names the rule logged per case."""
        out: list[str] = []

        def log(case: str, **kw: Any) -> None:
            kind = kinds.get(case)
            if kind is not None:
                self.log.add(kind, item, conversation_id=self.cid, **kw)

        for raw in strings:
            ids = normalise_dia_ids(raw)
            if not ids:
                log("malformed", value=raw)
                continue
            if len(ids) > 1:
                log("split", value=raw, result=ids)
            elif ids[0] != raw.strip():
                log("reformatted", value=raw, result=ids[0])
            for dia in ids:
                sid = f"{self.cid}:{dia}"
                if sid not in self.turn_ids:
                    log("unresolved", value=dia, detail=_why_unresolved(dia, self.session_turns))
                elif sid in out:
                    log("duplicate", value=dia)
                else:
                    out.append(sid)
        return out

    def read_queries(self, keep_duplicates: bool) -> None:
        seen_items: dict[tuple[Any, ...], str] = {}
        seen_text: dict[str, str] = {}
        for i, qa in enumerate(self.s.qa):
            qid = f"{self.cid}:q{i}"
            self.out.counts["qa_items"] += 1
            self.out.counts["evidence_strings"] += len(qa.evidence)
            meta: dict[str, Any] = {"qa_index": i, "category_code": qa.category}
            answer_value = qa.answer
            if qa.category == ADVERSARIAL and qa.adversarial_answer is not None:
                answer_value = qa.adversarial_answer
                self.log.add("answer_from_adversarial", qid, conversation_id=self.cid)
                if qa.answer is not None:
                    meta["answer_field"] = _answer_text(qa.answer)
            if isinstance(answer_value, int | float):
                self.log.add(
                    "answer_not_text",
                    qid,
                    conversation_id=self.cid,
                    value=answer_value,
                    result=_answer_text(answer_value),
                )
            answer = _answer_text(answer_value)
            key = (qa.question.strip(), answer, tuple(qa.evidence), qa.category)
            if key in seen_items and not keep_duplicates:
                self.log.add(
                    "duplicate_question",
                    qid,
                    conversation_id=self.cid,
                    value=qa.question,
                    result=seen_items[key],
                    detail=f"repeats {seen_items[key]}",
                )
                self.out.excluded_queries.append(qid)
                continue
            if key not in seen_items and qa.question.strip() in seen_text:
                first = seen_text[qa.question.strip()]
                self.log.add(
                    "repeated_question_text",
                    qid,
                    conversation_id=self.cid,
                    value=qa.question,
                    result=first,
                    detail=f"same text as {first}, different answer or category",
                )
            seen_items.setdefault(key, qid)
            seen_text.setdefault(qa.question.strip(), qid)
            evidence = self.resolve(qid, qa.evidence, EVIDENCE_RULES)
            if not evidence:
                why = "empty evidence list" if not qa.evidence else "no evidence id resolves"
                self.log.add(
                    "query_no_evidence",
                    qid,
                    conversation_id=self.cid,
                    value=qa.evidence,
                    detail=why,
                )
                self.out.excluded_queries.append(qid)
                continue
            if [f"{self.cid}:{e}" for e in qa.evidence] != evidence:
                meta["evidence_as_given"] = list(qa.evidence)
            self.out.queries.append(
                Query(
                    query_id=qid,
                    question=qa.question,
                    answer=answer,
                    evidence=evidence,
                    category=CATEGORY_NAMES.get(qa.category, str(qa.category)),
                    conversation_id=self.cid,
                    metadata=meta,
                )
            )

    # ---------------------------------------------------------------- derived
    def read_observations(self) -> None:
        mems = self.out.derived.setdefault("observations", [])
        sessions = sorted(
            (int(m.group(1)), key)
            for key in self.s.observation
            if (m := _OBS_KEY.fullmatch(key)) is not None
        )
        n = 0
        for session, key in sessions:
            by_speaker = self.s.observation[key]
            if not isinstance(by_speaker, dict):
                raise self.fail(f"observation '{key}' is not an object of speaker -> facts")
            for speaker, facts in by_speaker.items():
                if not isinstance(facts, list):
                    raise self.fail(f"observation '{key}.{speaker}' is not a list")
                for j, fact in enumerate(facts):
                    n += 1
                    mid = f"{self.cid}:obs:{n}"
                    text, ids = _observation_parts(fact)
                    if text is None:
                        raise self.fail(
                            f"observation '{key}.{speaker}[{j}]' is not [text, turn id(s)]"
                        )
                    self.out.counts["observations_read"] += 1
                    strings = ids if isinstance(ids, list) else [ids]
                    if (isinstance(ids, list) and len(ids) > 1) or any("," in s for s in strings):
                        self.log.add("observation_split", mid, conversation_id=self.cid, value=ids)
                    parts = [p for s in strings for p in s.split(",")]
                    links = self.resolve(mid, parts, OBSERVATION_RULES)
                    if not links:  # every id was logged as observation_unresolved
                        continue
                    mems.append(
                        Memory(
                            memory_id=mid,
                            text=text,
                            source_ids=links,
                            raw=False,
                            canonical=True,
                            conversation_id=self.cid,
                            metadata={"session": session, "speaker": str(speaker)},
                        )
                    )

    def read_summaries(self) -> None:
        mems = self.out.derived.setdefault("summaries", [])
        sessions = sorted(
            (int(m.group(1)), key)
            for key in self.s.session_summary
            if (m := _SUMMARY_KEY.fullmatch(key)) is not None
        )
        for session, key in sessions:
            mid = f"{self.cid}:summary:{session}"
            text = self.s.session_summary[key]
            if not isinstance(text, str):
                raise self.fail(f"session summary '{key}' is not a string")
            links = self.session_turns.get(session, [])
            if not links:
                self.log.add("summary_without_turns", mid, conversation_id=self.cid)
                continue
            mems.append(
                Memory(
                    memory_id=mid,
                    text=text,
                    source_ids=list(links),
                    raw=False,
                    canonical=False,
                    conversation_id=self.cid,
                    metadata={"session": session},
                )
            )


def _observation_parts(fact: object) -> tuple[str | None, str | list[str]]:
    if (
        isinstance(fact, list)
        and len(fact) == 2
        and isinstance(fact[0], str)
        and (
            isinstance(fact[1], str)
            or (isinstance(fact[1], list) and all(isinstance(x, str) for x in fact[1]))
        )
    ):
        return fact[0], fact[1]
    return None, ""


def _why_unresolved(dia: str, session_turns: dict[int, list[str]]) -> str:
    s, t = (int(x) for x in dia[1:].split(":"))
    if s not in session_turns:
        return f"session {s} has no turns"
    return f"session {s} has only {len(session_turns[s])} turns (asked for turn {t})"


def load_locomo(path: str | Path, *, keep_duplicates: bool = False) -> DatasetTraces:
    """Read ``locomo10.json`` (or a file of the same shape) into bundle terms."""
    p = Path(path)
    info = StreamInfo()
    out = DatasetTraces(
        dataset="locomo",
        input_file=p.name,
        input_sha256="",
        sources=[],
        queries=[],
        turns=[],
        options={"keep_duplicates": keep_duplicates, "evidence": "turn"},
        description="LoCoMo: turns as sources, QA items as queries",
    )
    for key in (
        "conversations",
        "sessions",
        "sessions_date_only",
        "turns",
        "qa_items",
        "evidence_strings",
        "observations_read",
    ):
        out.counts[key] = 0
    out.derived = {"observations": [], "summaries": []}
    seen: set[str] = set()
    for line, raw in iter_json_list(p, info):
        try:
            sample = LocomoSample.model_validate(raw)
        except ValidationError as exc:
            where = raw.get("sample_id", "?") if isinstance(raw, dict) else "?"
            raise InputError(
                p, f"sample '{where}': {describe_validation_error(exc)}", line
            ) from None
        if sample.sample_id in seen:
            raise InputError(p, f"sample id '{sample.sample_id}' appears twice", line)
        seen.add(sample.sample_id)
        reader = _Sample(out, sample, p, line)
        reader.read_turns()
        reader.read_queries(keep_duplicates)
        reader.read_observations()
        reader.read_summaries()
        out.counts["conversations"] += 1
    out.input_sha256 = info.sha256
    out.counts["queries"] = len(out.queries)
    out.counts["queries_excluded"] = len(out.excluded_queries)
    out.counts["sources"] = len(out.sources)
    return out

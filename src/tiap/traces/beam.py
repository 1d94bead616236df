"""BEAM (a scale directory ``N/chat.json`` + ``N/probing_questions.json``) -> sources and queries.

A BEAM scale directory (``100K``, ``500K``, ``1M``, ``10M``) holds one folder per
conversation ``N`` with ``chat.json`` (a list of batches of groups of messages;
at 10M a list of plans ``{"plan-k": [batches]}``) and ``probing_questions.json``
(or upstream's ``probing_questions/probing_questions.json``): ten ability
categories, each a list of questions.

- Every message (user and assistant) is a source ``BEAM-<scale>-<N>:<message id>``
  in conversation ``BEAM-<scale>-<N>``, with its role as speaker and its batch's
  time anchor (``March-15-2024``) as time.
- Every probing question is a query ``BEAM-<scale>-<N>:<category>:<index>``
  (index in that category's list) with its category, the answer from the field
  that category uses (:data:`ANSWER_FIELDS`) and as evidence its
  ``source_chat_ids`` flattened (lists, dicts of lists, nested lists), deduplicated
  and resolved against the conversation's message ids. The rubric, difficulty
  and the ids as given are kept in the query's metadata.

Rules (each application is recorded in the build report):

- The ``->-> b,k`` plan marker is stripped wherever it occurs (``index_marker``
  when it is the message's own ``index``, ``stray_marker`` otherwise); a run of
  100 or more whitespace characters becomes one line break (or space), trailing
  whitespace is dropped (``whitespace_collapsed``); a text still longer than
  ``max_chars`` is cut there (``text_capped``), before anything tokenises it.
- Questions without usable evidence (the abstention category has no
  ``source_chat_ids`` at all; some lists are empty) are excluded and listed, as
  every adapter does for a query with no evidence; an abstention question that
  does have evidence is kept and marked ``abstention``. Ids that are not
  integers or name no message are dropped and listed; repeats are kept once.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tiap.errors import InputError, TiapError
from tiap.io import decode_utf8, describe_validation_error, load_json
from tiap.limits import MAX_TEXT_CHARS, check_int
from tiap.traces.adapter_output import DatasetTraces, Turn
from tiap.traces.dataset_registry import BEAM_MAX_CHARS
from tiap.traces.models import Query, Source
from tiap.traces.report import IssueLog

DATASET = "beam"
CHAT_FILE = "chat.json"
QUESTION_FILES = ("probing_questions.json", "probing_questions/probing_questions.json")
ABSTENTION = "abstention"
#: category -> the field holding its reference answer
ANSWER_FIELDS: dict[str, str] = {
    "abstention": "ideal_response",
    "contradiction_resolution": "ideal_answer",
    "event_ordering": "answer",
    "information_extraction": "answer",
    "instruction_following": "expected_compliance",
    "knowledge_update": "answer",
    "multi_session_reasoning": "answer",
    "preference_following": "expected_compliance",
    "summarization": "ideal_summary",
    "temporal_reasoning": "answer",
}
#: tried in this order for a category not in ANSWER_FIELDS
FALLBACK_ANSWER_FIELDS = (
    "answer",
    "ideal_answer",
    "ideal_response",
    "expected_compliance",
    "ideal_summary",
)
DEFAULT_MAX_CHARS = BEAM_MAX_CHARS
RUNAWAY_WHITESPACE = 100
SPEAKERS: dict[str, tuple[str, str]] = {
    "user": ("User", "Assistant"),
    "assistant": ("Assistant", "User"),
}

_SCALE = re.compile(r"\d+(?:\.\d+)?[KkMm]")
_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MARKER = re.compile(r"[ \t]*->->[^\n]*")
_RUNAWAY = re.compile(rf"\s{{{RUNAWAY_WHITESPACE},}}")
_ANCHOR_FORMAT = "%B-%d-%Y"


class BeamMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    id: int
    content: str
    time_anchor: str | None = None
    index: str | None = None
    question_type: str | None = None


class BeamBatch(BaseModel):
    model_config = ConfigDict(extra="allow")

    batch_number: int | None = None
    turns: list[list[BeamMessage]]
    time_anchor: str | None = None


def scale_of(directory: Path, scale: str | None) -> str:
    """The scale name: ``scale`` if given, else the directory's name (e.g. ``100K``)."""
    name = scale if scale is not None else directory.name
    if not _SCALE.fullmatch(name):
        if scale is not None:
            raise TiapError(f"--scale '{scale}' is not a BEAM scale name like 100K, 1M or 10M")
        raise TiapError(
            f"{directory}: the directory name '{directory.name}' is not a BEAM scale "
            "(100K, 500K, 1M, 10M); name it with --scale"
        )
    return name.upper()


def conversation_folders(directory: Path) -> list[Path]:
    """The conversation folders (those holding chat.json), numbers in numeric order first."""
    if not directory.is_dir():
        raise TiapError(f"{directory}: not a directory (expected N/{CHAT_FILE} folders)")
    folders = [p for p in directory.iterdir() if p.is_dir() and (p / CHAT_FILE).is_file()]
    if not folders:
        raise TiapError(
            f"{directory}: no conversation folders (expected N/{CHAT_FILE} and "
            f"N/{QUESTION_FILES[0]}, e.g. BEAM's chats/100K)"
        )
    for p in folders:
        if not _FOLDER.fullmatch(p.name):
            raise TiapError(f"{p}: a conversation folder name may use only letters, digits, . _ -")
    return sorted(
        folders, key=lambda p: (0, int(p.name), "") if p.name.isdigit() else (1, 0, p.name)
    )


def questions_file(folder: Path) -> Path:
    for name in QUESTION_FILES:
        if (folder / name).is_file():
            return folder / name
    raise InputError(folder / QUESTION_FILES[0], f"file not found (nor {QUESTION_FILES[1]})")


def _read_json(path: Path, digest: Any, root: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read file ({exc.strerror})") from None
    digest.update(path.relative_to(root).as_posix().encode() + b"\0" + data)
    text = decode_utf8(data, path)  # a byte order mark dropped; a bad byte names its line
    return load_json(text, path)  # malformed JSON or a repeated key: an error naming its line


def _batches(path: Path, chat: Any) -> Iterator[tuple[str | None, int, Any]]:
    """``(plan, position, raw batch)``: a list of batches, or (10M) of ``{plan: [batches]}``."""
    if not isinstance(chat, list):
        raise InputError(path, "expected a JSON list of batches")
    for i, item in enumerate(chat):
        if isinstance(item, dict) and "turns" not in item:
            for plan, batches in item.items():
                if not isinstance(batches, list):
                    raise InputError(path, f"item {i}: plan '{plan}' is not a list of batches")
                for j, batch in enumerate(batches):
                    yield str(plan), j, batch
        else:
            yield None, i, item


def clean_text(text: str, max_chars: int) -> tuple[str, list[str], bool, bool]:
    """``(text, markers stripped, whitespace collapsed, capped)``."""
    markers = [m.group(0).strip() for m in _MARKER.finditer(text)]
    out = _MARKER.sub("", text) if markers else text
    collapsed = _RUNAWAY.sub(lambda m: "\n" if "\n" in m.group(0) else " ", out)
    stripped = collapsed.rstrip()
    changed_ws = stripped != out
    capped = 0 < max_chars < len(stripped)
    if capped:
        stripped = stripped[:max_chars].rstrip() + " […]"
    return stripped, markers, changed_ws, capped


def _anchor_date(anchor: str | None) -> str | None:
    if anchor is None:
        return None
    try:
        return datetime.strptime(anchor.strip(), _ANCHOR_FORMAT).date().isoformat()
    except ValueError:
        return anchor


def flatten_ids(value: Any) -> list[Any]:
    """Every leaf of ``source_chat_ids`` (lists, dicts of lists, nested), in order."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in flatten_ids(v)]
    if isinstance(value, list):
        return [x for v in value for x in flatten_ids(v)]
    return [value]


def _as_message_id(value: Any) -> tuple[int | None, bool]:
    """``(id, reformatted)``; ``(None, False)`` when the value is no message id."""
    if isinstance(value, bool):
        return None, False
    if isinstance(value, int):
        return value, False
    if isinstance(value, float) and value.is_integer():
        return int(value), True
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()), True
    return None, False


class _Conversation:
    """Reads one conversation folder into the dataset."""

    def __init__(self, out: DatasetTraces, folder: Path, scale: str, max_chars: int) -> None:
        self.out = out
        self.folder = folder
        self.cid = f"BEAM-{scale}-{folder.name}"
        self.max_chars = max_chars
        self.log: IssueLog = out.log
        self.ids: dict[int, str] = {}  # message id -> role

    def read_chat(self, path: Path, chat: Any) -> None:
        for plan, pos, raw in _batches(path, chat):
            where = f"batch {pos}" if plan is None else f"plan '{plan}', batch {pos}"
            try:
                batch = BeamBatch.model_validate(raw)
            except ValidationError as exc:
                raise InputError(path, f"{where}: {describe_validation_error(exc)}") from None
            anchor = batch.time_anchor or next(
                (m.time_anchor for g in batch.turns for m in g if m.time_anchor), None
            )
            self.out.counts["batches"] += 1
            self.out.counts["batches_without_time_anchor"] += anchor is None
            for group in batch.turns:
                self.out.counts["groups"] += 1
                for m in group:
                    self.add_message(path, m, batch, plan, anchor)

    def add_message(
        self, path: Path, m: BeamMessage, batch: BeamBatch, plan: str | None, anchor: str | None
    ) -> None:
        sid = f"{self.cid}:{m.id}"
        if m.id in self.ids:
            raise InputError(path, f"message id {m.id} appears twice in conversation {self.cid}")
        self.ids[m.id] = m.role
        text, markers, collapsed, capped = clean_text(m.content, self.max_chars)
        for marker in markers:
            own = m.index is not None and marker == f"->-> {m.index}"
            self.log.add(
                "index_marker" if own else "stray_marker",
                sid,
                conversation_id=self.cid,
                value=marker,
                detail="" if own else f"{m.role} message, index {m.index!r}",
            )
        if collapsed:
            self.log.add(
                "whitespace_collapsed",
                sid,
                conversation_id=self.cid,
                value=f"{len(m.content):,} characters",
            )
        if capped:
            self.log.add(
                "text_capped",
                sid,
                conversation_id=self.cid,
                value=f"{len(m.content):,} characters",
                result=f"cut at {self.max_chars:,}",
            )
        meta: dict[str, Any] = {"message_id": m.id}
        for key, value in (
            ("batch", batch.batch_number),
            ("plan", plan),
            ("question_type", m.question_type),
            ("index", m.index),
        ):
            if value is not None:
                meta[key] = value
        if text != m.content:
            meta["chars_original"] = len(m.content)
        self.out.sources.append(
            Source(
                source_id=sid,
                text=text,
                speaker=m.role,
                time=anchor,
                conversation_id=self.cid,
                metadata=meta,
            )
        )
        speaker, listener = SPEAKERS.get(m.role, (m.role, "User"))
        self.out.turns.append(
            Turn(
                unit_id=sid,
                source_id=sid,
                conversation_id=self.cid,
                speaker=speaker,
                listener=listener,
                text=text,
                date=_anchor_date(anchor),
            )
        )
        self.out.counts["messages"] += 1
        self.out.counts[f"{m.role}_messages" if m.role in SPEAKERS else "other_messages"] += 1

    def read_questions(self, path: Path, data: Any) -> None:
        if not isinstance(data, dict):
            raise InputError(path, "expected a JSON object of category -> list of questions")
        for category, questions in data.items():
            if not isinstance(questions, list):
                raise InputError(path, f"category '{category}' is not a list of questions")
            for i, q in enumerate(questions):
                if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                    raise InputError(path, f"{category}[{i}]: expected an object with 'question'")
                self.add_query(str(category), i, q)

    def evidence(self, qid: str, value: Any) -> list[str]:
        out: list[str] = []
        leaves = flatten_ids(value)
        self.out.counts["evidence_ids"] += len(leaves)
        for raw in leaves:
            mid, reformatted = _as_message_id(raw)
            if mid is None:
                self.log.add("evidence_malformed", qid, conversation_id=self.cid, value=raw)
                continue
            if reformatted:
                self.log.add(
                    "evidence_not_integer", qid, conversation_id=self.cid, value=raw, result=mid
                )
            sid = f"{self.cid}:{mid}"
            if mid not in self.ids:
                last = max(self.ids, default=-1)
                self.log.add(
                    "evidence_unresolved",
                    qid,
                    conversation_id=self.cid,
                    value=raw,
                    detail=f"{self.cid} has no message {mid} (ids 0..{last})",
                )
            elif sid in out:
                self.log.add("evidence_duplicate", qid, conversation_id=self.cid, value=mid)
            else:
                out.append(sid)
        return out

    def add_query(self, category: str, i: int, q: dict[str, Any]) -> None:
        qid = f"{self.cid}:{category}:{i}"
        self.out.counts["questions"] += 1
        abstention = category == ABSTENTION
        self.out.counts["abstention_questions"] += abstention
        fields = [ANSWER_FIELDS[category]] if category in ANSWER_FIELDS else []
        field = next((f for f in (*fields, *FALLBACK_ANSWER_FIELDS) if f in q), None)
        answer = q.get(field) if field else None
        if answer is not None and not isinstance(answer, str):
            self.log.add("answer_not_text", qid, conversation_id=self.cid, value=answer)
            answer = json.dumps(answer, ensure_ascii=False)
        given = q.get("source_chat_ids")
        evidence = self.evidence(qid, given) if given is not None else []
        if not evidence:
            if given is None:
                why = "no source_chat_ids" + (" (abstention question)" if abstention else "")
            elif not flatten_ids(given):
                why = "empty source_chat_ids"
            else:
                why = "no source_chat_ids entry names a message"
            self.log.add(
                "query_no_evidence", qid, conversation_id=self.cid, value=given, detail=why
            )
            self.out.excluded_queries.append(qid)
            return
        meta: dict[str, Any] = {"category_index": i, "source_chat_ids": given}
        if field is not None and field != ANSWER_FIELDS.get(category):
            meta["answer_field"] = field
        for key in ("rubric", "difficulty"):
            if key in q:
                meta[key] = q[key]
        self.out.queries.append(
            Query(
                query_id=qid,
                question=q["question"],
                answer=answer or "",
                evidence=evidence,
                category=category,
                conversation_id=self.cid,
                abstention=abstention,
                metadata=meta,
            )
        )


COUNT_KEYS = (
    "conversations",
    "batches",
    "batches_without_time_anchor",
    "groups",
    "messages",
    "user_messages",
    "assistant_messages",
    "other_messages",
    "questions",
    "abstention_questions",
    "evidence_ids",
)


def load_beam(
    directory: str | Path, *, scale: str | None = None, max_chars: int = DEFAULT_MAX_CHARS
) -> DatasetTraces:
    """Read a BEAM scale directory (``N/chat.json``, ``N/probing_questions.json``)."""
    max_chars = check_int("max_chars", max_chars, minimum=0, maximum=MAX_TEXT_CHARS)
    root = Path(directory)
    folders = conversation_folders(root)
    name = scale_of(root, scale)
    out = DatasetTraces(
        dataset=DATASET,
        input_file=root.name,
        input_sha256="",
        sources=[],
        queries=[],
        turns=[],
        options={"scale": name, "max_chars": max_chars},
        description=f"BEAM {name}: messages as sources, probing questions as queries",
    )
    out.counts = dict.fromkeys(COUNT_KEYS, 0)
    digest = hashlib.sha256()
    for folder in folders:
        conv = _Conversation(out, folder, name, max_chars)
        chat_path, q_path = folder / CHAT_FILE, questions_file(folder)
        conv.read_chat(chat_path, _read_json(chat_path, digest, root))
        conv.read_questions(q_path, _read_json(q_path, digest, root))
        out.counts["conversations"] += 1
    out.input_sha256 = digest.hexdigest()
    out.counts["queries"] = len(out.queries)
    out.counts["queries_excluded"] = len(out.excluded_queries)
    out.counts["sources"] = len(out.sources)
    return out

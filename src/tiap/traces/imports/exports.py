"""Read a memory system's exports through a mapping: memories and search results.

Both files may be one JSON document or JSON Lines (one object per line); which
one is decided by parsing, not by the file name. Errors name the file and the
line (JSON Lines) or the position in the document (``results[12]``,
``key 'conv-26:q3'``), and what is wrong.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.errors import InputError
from tiap.io import RepeatedKey, json_decoder, line_at, read_text_input, text_lines
from tiap.traces.imports.mapping import (
    MISSING,
    MemoriesMapping,
    SearchMapping,
    get_path,
)


@dataclass(frozen=True)
class Record:
    """One object of an export and where it was."""

    where: str
    line: int | None
    data: Any


@dataclass(frozen=True)
class Document:
    """A parsed export: a JSON document (``lines is None``) or JSON Lines."""

    path: Path
    value: Any = None
    lines: list[Record] | None = None


@dataclass(frozen=True)
class MemoryRecord:
    where: str
    line: int | None
    memory_id: str
    text: str
    links: list[Any]
    conversation: Any
    raw: bool | None
    canonical: bool | None


@dataclass(frozen=True)
class SearchEntry:
    where: str
    line: int | None
    query_id: str
    ranking: list[str]
    scores: list[float | None]
    answer: str | None = None


def load_document(path: Path, what: str) -> Document:
    """Parse ``path`` as one JSON document, or else as JSON Lines. An object that
    names a key twice is an error naming the key and its line, in either form (a
    keyed search export would otherwise keep one query's last results only)."""
    text = read_text_input(path, what=what)
    if not text.strip():
        raise InputError(path, f"{what} is empty")
    try:
        return Document(path, value=json_decoder().decode(text))
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise InputError(path, f"malformed JSON ({exc.msg})", exc.lineno) from None
    except RecursionError:
        raise InputError(path, "malformed JSON (nested too deeply)") from None
    except RepeatedKey as exc:
        raise InputError(path, exc.problem(), line_at(text, exc)) from None
    lines: list[Record] = []
    for n, raw in text_lines(text):
        if not raw.strip():
            continue
        try:
            lines.append(Record(f"line {n}", n, json_decoder().decode(raw)))
        except json.JSONDecodeError as exc:
            raise InputError(path, f"malformed JSON line ({exc.msg})", n) from None
        except RecursionError:
            raise InputError(path, "malformed JSON line (nested too deeply)", n) from None
        except RepeatedKey as exc:
            raise InputError(path, exc.problem(), n) from None
    return Document(path, lines=lines)


def _fail(doc: Document, rec: Record, problem: str) -> InputError:
    where = "" if rec.line is not None else f"{rec.where}: "
    return InputError(doc.path, where + problem, rec.line)


def _list_at(doc: Document, path: str) -> list[Record] | None:
    """The records of the list at ``path`` in a JSON document (a bare list also counts)."""
    found = get_path(doc.value, path) if path else MISSING
    if isinstance(found, list):
        return [Record(f"{path}[{i}]", None, v) for i, v in enumerate(found)]
    if isinstance(doc.value, list):
        return [Record(f"[{i}]", None, v) for i, v in enumerate(doc.value)]
    return None


def _as_id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int):
        return str(value)
    return None


def _flag(doc: Document, rec: Record, spec: bool | str, name: str) -> bool | None:
    """A fixed flag, or the boolean at its path (None when the memory lacks it)."""
    if isinstance(spec, bool):
        return spec
    value = get_path(rec.data, spec)
    if value is MISSING or value is None:
        return None
    if not isinstance(value, bool):
        raise _fail(doc, rec, f"'{spec}' ({name}) is {json.dumps(value)[:40]}, not true/false")
    return value


def _links(value: Any, split: str) -> list[Any]:
    if value is MISSING or value is None:
        return []
    if isinstance(value, list):
        return [x for v in value for x in _links(v, split)]
    if isinstance(value, str) and split:
        return [p.strip() for p in value.split(split) if p.strip()]
    return [value]


def read_memories(path: Path, mapping: MemoriesMapping) -> list[MemoryRecord]:
    """Every memory of a memories export, in file order."""
    doc = load_document(path, "memories export")
    if doc.lines is not None:
        records = doc.lines
    else:
        found = _list_at(doc, mapping.records)
        if found is None and isinstance(doc.value, dict) and not mapping.records:
            found = [Record("$", 1, doc.value)]
        if found is None:
            at = f"'{mapping.records}'" if mapping.records else "the top level"
            raise InputError(path, f"expected a list of memories at {at}")
        records = found
    out: list[MemoryRecord] = []
    for rec in records:
        if not isinstance(rec.data, dict):
            raise _fail(doc, rec, "expected a JSON object (one memory)")
        mid = _as_id(get_path(rec.data, mapping.id))
        if mid is None:
            raise _fail(doc, rec, f"no memory id at '{mapping.id}' (a non-empty string or integer)")
        text = get_path(rec.data, mapping.text)
        if not isinstance(text, str):
            raise _fail(doc, rec, f"memory '{mid}': no text at '{mapping.text}'")
        out.append(
            MemoryRecord(
                where=rec.where,
                line=rec.line,
                memory_id=mid,
                text=text,
                links=_links(get_path(rec.data, mapping.source_ids), mapping.split),
                conversation=get_path(rec.data, mapping.conversation)
                if mapping.conversation
                else MISSING,
                raw=_flag(doc, rec, mapping.raw, "raw"),
                canonical=_flag(doc, rec, mapping.canonical, "canonical"),
            )
        )
    return out


def _records_layout(doc: Document, mapping: SearchMapping) -> list[Record] | None:
    """The records of a search export, or None when it is keyed by query id."""
    if doc.lines is not None:
        if mapping.layout == "keyed":
            raise InputError(doc.path, "layout 'keyed' needs one JSON object, not JSON Lines")
        return doc.lines
    value = doc.value
    single = isinstance(value, dict) and get_path(value, mapping.query_id) is not MISSING
    if isinstance(value, list) or mapping.layout == "records":
        found = _list_at(doc, mapping.records)
        if found is None and single:
            return [Record("$", 1, value)]
        if found is None:
            raise InputError(doc.path, "expected JSON Lines or a list of search records")
        return found
    if not isinstance(value, dict):
        raise InputError(doc.path, "expected a JSON object keyed by query id, or JSON Lines")
    if mapping.layout == "auto":
        found = _list_at(doc, mapping.records) if mapping.records else None
        if found is not None:
            return found
        if single:
            return [Record("$", 1, value)]
    return None


def _search_records(doc: Document, mapping: SearchMapping) -> list[tuple[Record, Any, Any]]:
    """``(record, query id value, body holding the results)`` per query, in file order."""
    records = _records_layout(doc, mapping)
    if records is None:
        return [(Record(f"key '{k}'", None, v), k, v) for k, v in doc.value.items()]
    out: list[tuple[Record, Any, Any]] = []
    for rec in records:
        if not isinstance(rec.data, dict):
            raise _fail(doc, rec, "expected a JSON object (one query's results)")
        out.append((rec, get_path(rec.data, mapping.query_id), rec.data))
    return out


def _result(doc: Document, rec: Record, item: Any, mapping: SearchMapping) -> tuple[str, Any]:
    if isinstance(item, dict):
        mid = _as_id(get_path(item, mapping.memory_id))
        if mid is None:
            raise _fail(doc, rec, f"a result has no memory id at '{mapping.memory_id}'")
        return mid, get_path(item, mapping.score) if mapping.score else MISSING
    mid = _as_id(item)
    if mid is None:
        raise _fail(doc, rec, f"a result is {json.dumps(item)[:40]}, not a memory id or object")
    return mid, MISSING


def _score(value: Any) -> float | None:
    """A result's score; anything but a finite number (NaN, 1e999, text) is no score."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        score = float(value)
    except OverflowError:  # an integer beyond a float's range
        return None
    return score if math.isfinite(score) else None


def read_search(path: Path, mapping: SearchMapping) -> list[SearchEntry]:
    """Every query's ranked memory ids in a search export, in file order."""
    doc = load_document(path, "search export")
    out: list[SearchEntry] = []
    for rec, qid_value, body in _search_records(doc, mapping):
        qid = _as_id(qid_value)
        if qid is None:
            raise _fail(doc, rec, f"no query id at '{mapping.query_id}'")
        results = get_path(body, mapping.results)
        if results is MISSING and isinstance(body, list):
            results = body
        if not isinstance(results, list):
            raise _fail(doc, rec, f"query '{qid}': no list of results at '{mapping.results}'")
        pairs = [_result(doc, rec, item, mapping) for item in results]
        scores = [_score(s) for _, s in pairs]
        if mapping.scores and isinstance(body, dict):
            given = get_path(body, mapping.scores)
            if given is not MISSING:
                if not isinstance(given, list) or len(given) != len(pairs):
                    raise _fail(
                        doc, rec, f"query '{qid}': '{mapping.scores}' is not one score per result"
                    )
                scores = [_score(s) for s in given]
        answer = _answer(doc, rec, body, qid, mapping)
        out.append(SearchEntry(rec.where, rec.line, qid, [m for m, _ in pairs], scores, answer))
    return out


def _answer(doc: Document, rec: Record, body: Any, qid: str, mapping: SearchMapping) -> str | None:
    """The query's generated answer at ``mapping.answer`` (``None`` when the mapping names
    no answer or the record has none there); text, or a number as text."""
    if not mapping.answer or not isinstance(body, dict):
        return None
    value = get_path(body, mapping.answer)
    if value is MISSING or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(doc, rec, f"query '{qid}': the answer at '{mapping.answer}' is not text")
    return str(value)

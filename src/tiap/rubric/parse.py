"""Parse a judge's reply into a label, or an abstention with its reason.

A reply that cannot be read is never given a guessed label: it becomes
``label=None`` with a :class:`~tiap.rubric.reasons.Reason` code and, where there is
one, its detail in its own field.

Which part of a reply is its answer. The reply's JSON objects are read left to
right: at each ``{`` outside an object already read, the JSON object that starts
there, if one does; from nesting too deep to read (past Python's recursion limit)
on, the reply is text. A *label* is a
``label`` key of any of these objects or of an object inside them (a key repeated
in one object counts each time). Then:

- ``empty``: no text at all;
- ``refusal``: text that declines to judge, with no JSON object;
- ``not_json``: no JSON object in the text;
- ``no_label``: no label, or only one inside another object (``{"x": {"label": ..}}``);
- ``ambiguous_reply``: more than one label — even labels that agree (``detail``:
  how many and which) —, or one whose object is not the reply's end: only
  whitespace and a closing code fence may follow it (``detail``: ``text after its
  JSON answer``). Under a structured response format (``json_schema``,
  ``json_object``: ``structured=True``) the request asked for JSON only, so the
  object must be the whole reply: only whitespace and an opening code fence may
  come before it either (``detail``: ``text around its JSON answer ...``). In free
  text (response format ``none``) prose and objects without a label may come
  before the answer;
- ``label_outside_rubric``: a label that is not one of the rubric's (``detail``:
  the label given, its first 60 characters).

Only the form of a label is normalised (case, surrounding space, ``-`` or a
space for ``_``); its meaning never is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tiap.rubric.models import Rubric
from tiap.rubric.reasons import Reason

#: how much of a label outside the rubric is kept as the detail.
DETAIL_CHARS = 60
#: how many of an ambiguous reply's labels its detail names.
DETAIL_LABELS = 5

_REFUSAL = re.compile(
    r"^\s*(i\s*(?:'m| am)\s+(?:sorry|unable)|i\s+(?:can(?:no|')t|won't|will not)|"
    r"sorry|as an ai|i must decline)",
    re.IGNORECASE,
)
#: what may follow the answer: whitespace and a closing code fence.
_AFTER = re.compile(r"\s*(?:```\s*)?")
#: what may come before the answer under a structured format: an opening code fence.
_BEFORE = re.compile(r"\s*(?:```[^\s`]*\s*)?")

AFTER_ANSWER = "text after its JSON answer"
AROUND_ANSWER = "text around its JSON answer (the request asked for JSON only)"


class ParsedJudgment(BaseModel):
    label: str | None
    rationale: str | None = None
    reason: Reason | None = None
    #: what the reason is about (e.g. the label outside the rubric), if anything.
    detail: str | None = None

    @property
    def valid(self) -> bool:
        return self.label is not None


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers every ``label`` value among its keys,
    a repeated key's too (a plain dict keeps only the last)."""

    labels: list[Any]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    obj.labels = [value for key, value in pairs if key == "label"]
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_object)
#: where a JSON object can start: ``{``, whitespace, then a key or the end.
_START = re.compile(r"\{\s*[\"}]")


class _Doc(str):
    """The reply as the decoder reads it. A failed decode's error computes its line
    and column by counting newlines up to the failure; with one attempt per ``{``
    that is quadratic in a reply made of braces, and those positions are never
    used here, so this text answers the two searches at once."""

    def count(self, *args: Any) -> int:
        return 0

    def rfind(self, *args: Any) -> int:
        return -1


@dataclass(frozen=True)
class _Found:
    obj: _Object
    start: int
    end: int
    #: every label in it, its own and those of the objects inside it.
    labels: list[Any]


def _labels(value: Any) -> Iterator[Any]:
    if isinstance(value, _Object):
        yield from value.labels
        for item in value.values():
            yield from _labels(item)
    elif isinstance(value, list):
        for item in value:
            yield from _labels(item)


def _objects(text: str) -> list[_Found]:
    """The reply's JSON objects, left to right (see the module docstring)."""
    found: list[_Found] = []
    doc = _Doc(text)
    start = _START.search(text)
    while start is not None:
        i = start.start()
        try:
            obj, end = _DECODER.raw_decode(doc, i)
        except RecursionError:
            break  # too deep to read: the rest is text
        except ValueError:
            start = _START.search(text, i + 1)
            continue
        found.append(_Found(obj, i, end, list(_labels(obj))))
        start = _START.search(text, end)
    return found


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text[:DETAIL_CHARS]


def _many(labels: list[Any]) -> str:
    names = ", ".join(_shown(v) for v in labels[:DETAIL_LABELS])
    more = ", …" if len(labels) > DETAIL_LABELS else ""
    return f"{len(labels)} labels in one reply: {names}{more}"


def _rationale(obj: dict[str, Any]) -> str | None:
    rationale = obj.get("rationale")
    return rationale if isinstance(rationale, str) else None


def normalise_label(value: str) -> str:
    return re.sub(r"[\s-]+", "_", value.strip().lower())


def parse_judgment(rubric: Rubric, text: str | None, *, structured: bool = False) -> ParsedJudgment:
    """Read ``{"label": ..., "rationale": ...}`` from a reply; ``structured``: the
    request asked for JSON only (a ``json_schema`` or ``json_object`` response
    format), so nothing but that object is read."""
    if text is None or not text.strip():
        return ParsedJudgment(label=None, reason=Reason.EMPTY)
    found = _objects(text)
    if not found:
        reason = Reason.REFUSAL if _REFUSAL.search(text) else Reason.NOT_JSON
        return ParsedJudgment(label=None, reason=reason)
    labels = [label for f in found for label in f.labels]
    if len(labels) > 1:
        return ParsedJudgment(label=None, reason=Reason.AMBIGUOUS_REPLY, detail=_many(labels))
    answer = next((f for f in found if f.labels), found[-1])
    rationale = _rationale(answer.obj)
    if not answer.obj.labels:
        return ParsedJudgment(label=None, rationale=rationale, reason=Reason.NO_LABEL)
    if structured and not _BEFORE.fullmatch(text, 0, answer.start):
        return ParsedJudgment(label=None, reason=Reason.AMBIGUOUS_REPLY, detail=AROUND_ANSWER)
    if not _AFTER.fullmatch(text, answer.end):
        return ParsedJudgment(label=None, reason=Reason.AMBIGUOUS_REPLY, detail=AFTER_ANSWER)
    raw_label = answer.obj.labels[0]
    if not isinstance(raw_label, str) or not raw_label.strip():
        return ParsedJudgment(label=None, rationale=rationale, reason=Reason.NO_LABEL)
    label = normalise_label(raw_label)
    if label not in rubric.label_names:
        return ParsedJudgment(
            label=None,
            rationale=rationale,
            reason=Reason.LABEL_OUTSIDE_RUBRIC,
            detail=raw_label[:DETAIL_CHARS],
        )
    return ParsedJudgment(label=label, rationale=rationale)

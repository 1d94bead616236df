"""Parse a judge's reply into a label, or an abstention with its reason.

A reply that cannot be read is never given a guessed label: it becomes
``label=None`` with a :class:`~tiap.rubric.reasons.Reason` code and, where there is
one, its detail in its own field:

- ``empty``: no text at all;
- ``refusal``: text that declines to judge, with no JSON;
- ``not_json``: no JSON object in the text;
- ``no_label``: a JSON object without a string ``label``;
- ``label_outside_rubric``: a label that is not one of the rubric's (``detail``:
  the label given, its first 60 characters).

Only the form of a label is normalised (case, surrounding space, ``-`` or a
space for ``_``); its meaning never is.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from tiap.rubric.models import Rubric
from tiap.rubric.reasons import Reason

#: how much of a label outside the rubric is kept as the detail.
DETAIL_CHARS = 60

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_REFUSAL = re.compile(
    r"^\s*(i\s*(?:'m| am)\s+(?:sorry|unable)|i\s+(?:can(?:no|')t|won't|will not)|"
    r"sorry|as an ai|i must decline)",
    re.IGNORECASE,
)


class ParsedJudgment(BaseModel):
    label: str | None
    rationale: str | None = None
    reason: Reason | None = None
    #: what the reason is about (e.g. the label outside the rubric), if anything.
    detail: str | None = None

    @property
    def valid(self) -> bool:
        return self.label is not None


def _first_json_object(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    stripped = _FENCE.sub("", text.strip())
    for candidate in (stripped, text):
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    for i, ch in enumerate(text):
        if ch != "{":
            continue
        try:
            obj, _ = decoder.raw_decode(text, i)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def normalise_label(value: str) -> str:
    return re.sub(r"[\s-]+", "_", value.strip().lower())


def parse_judgment(rubric: Rubric, text: str | None) -> ParsedJudgment:
    """Read ``{"label": ..., "rationale": ...}`` from a reply."""
    if text is None or not text.strip():
        return ParsedJudgment(label=None, reason=Reason.EMPTY)
    obj = _first_json_object(text)
    if obj is None:
        reason = Reason.REFUSAL if _REFUSAL.search(text) else Reason.NOT_JSON
        return ParsedJudgment(label=None, reason=reason)
    rationale = obj.get("rationale")
    rationale = rationale if isinstance(rationale, str) else None
    raw_label = obj.get("label")
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

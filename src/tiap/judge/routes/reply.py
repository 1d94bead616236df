"""A judge's reply, as both routes keep it: one record, text bounded and storable.

The record (``model_calls.response_json``, and what a re-run is answered from) is
``{"id", "model", "content", "finish_reason", "usage": {"prompt_tokens",
"completion_tokens"}}``, with ``"refusal"`` when the provider gave one. A reply
whose text is longer than the panel's ``max_reply_bytes`` (UTF-8 bytes) is cut to
that many bytes (at a character boundary) and the record says so:
``"truncated": true`` and ``"reply_bytes"``, its full size when known (the direct
route stops reading a reply past its cap, so it knows only that it was larger).

Provider text is untrusted: a lone surrogate (JSON allows ``"\\ud800"``) cannot be
stored as UTF-8, so it becomes U+FFFD.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: the longest rationale a label row keeps (characters; a longer one ends in "…").
RATIONALE_CHARS = 2000
#: the longest detail a label row's note keeps (characters).
NOTE_CHARS = 500

#: the most JSON-escaped bytes one byte of text can take (``\\u0001``), and room for
#: the rest of a chat completion: a reply body is read up to ``cap * 6 + slack``.
ESCAPE_FACTOR = 6
ENVELOPE_SLACK = 64 * 1024

#: where the text of the first choice starts in a chat completion's JSON.
_CONTENT_START = re.compile(rb'"message"\s*:\s*\{[^{}]*?"content"\s*:\s*"', re.DOTALL)
#: the characters of a JSON string up to its closing quote (or the end of the data).
_STRING_BODY = re.compile(rb'(?:[^"\\]|\\.)*', re.DOTALL)
#: backslashes (and a ``\\u`` escape's first hex digits) at the end of cut data.
_TRAILING_ESCAPE = re.compile(rb"(\\+)(u[0-9a-fA-F]{0,3})?$")


def body_limit(cap: int) -> int:
    """How many bytes of a reply body are read for a text cap of ``cap`` bytes."""
    return cap * ESCAPE_FACTOR + ENVELOPE_SLACK


def storable(text: str) -> str:
    """``text`` with any lone surrogate replaced (U+FFFD), so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def cut(text: str, cap: int) -> tuple[str, int | None]:
    """``(text, None)`` when it fits in ``cap`` UTF-8 bytes, else ``(its longest
    prefix that does, its full size in bytes)``."""
    if len(text) * 4 <= cap:  # fits whatever its characters
        return text, None
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text, None
    return data[:cap].decode("utf-8", "ignore"), len(data)


def content_from_prefix(prefix: bytes) -> str | None:
    """The text of the first choice from the first bytes of a chat completion's JSON
    (the rest was not read): as much of it as those bytes hold, or None."""
    start = _CONTENT_START.search(prefix)
    if start is None:
        return None
    body = _STRING_BODY.match(prefix, start.end())
    raw = body.group() if body else b""
    trailing = _TRAILING_ESCAPE.search(raw)
    if trailing and len(trailing.group(1)) % 2 == 1:  # an escape the cut broke off
        raw = raw[: trailing.start() + len(trailing.group(1)) - 1]
    try:
        text = json.loads('"' + raw.decode("utf-8", "ignore") + '"', strict=False)
    except ValueError:
        return None
    if text and "\ud800" <= text[-1] <= "\udbff":  # half of a pair that was cut
        text = text[:-1]
    return str(text)


@dataclass
class Reply:
    """What one successful attempt produced, on either route."""

    record: dict[str, Any]
    #: the provider's own figure (OpenRouter's ``usage.cost``), or litellm's.
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def content(self) -> str | None:
        value = self.record.get("content")
        return value if isinstance(value, str) else None


def bounded(record: dict[str, Any], cap: int, *, body_cut: bool = False) -> dict[str, Any]:
    """``record`` with its texts storable and cut to ``cap`` bytes, marked when cut.
    ``body_cut``: the route stopped reading the reply (its size is then unknown)."""
    content = record.get("content")
    size: int | None = None
    if isinstance(content, str):
        record["content"], size = cut(storable(content), cap)
    refusal = record.get("refusal")
    if isinstance(refusal, str):
        record["refusal"], _ = cut(storable(refusal), cap)
    if body_cut or size is not None:
        record["truncated"] = True
        record["reply_bytes"] = None if body_cut else size
    return record

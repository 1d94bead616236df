"""What is sent to a model, and the cache key of it.

The request of one (case, judge) is a plain dict holding everything that can
change the reply: model, api_base, messages, temperature, max_tokens, the
response format (as a JSON-schema dict), seed and any extra litellm parameters
(and ``max_reply_bytes``, the longest reply kept, when it is not the default 64
KiB: so the keys of panels without it are what they were; and, for tiap's in-process
judges, ``offline_version``, the version of what they answer). It never holds the
API key, nor the route the call takes (both routes send the same request). Its
hash is the ``model_calls`` cache key:

    sha256( canonical_json(request without messages) + "\\n" + canonical_json(messages) )

where canonical JSON has sorted keys, no spaces and keeps non-ASCII text as is.
The two halves are serialised separately so a run hashes each case's messages
once, however many judges it has.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from tiap.judge.baselines import OFFLINE_VERSION
from tiap.judge.panel import DEFAULT_REPLY_BYTES, JudgeSpec, Panel
from tiap.rubric import Rubric


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def response_format(rubric: Rubric | None, judge: JudgeSpec) -> dict[str, Any] | None:
    """The ``response_format`` argument for a judge: the rubric's output schema (a
    caller without a rubric, the reader, asks for free text: ``none``)."""
    if judge.response_format == "none":
        return None
    if judge.response_format == "json_object":
        return {"type": "json_object"}
    if rubric is None:
        raise ValueError(f"judge {judge.name}: a json_schema response format needs a rubric")
    return {
        "type": "json_schema",
        "json_schema": {"name": "Judgment", "strict": True, "schema": rubric.output_schema()},
    }


def judge_settings(panel: Panel, judge: JudgeSpec, rubric: Rubric | None) -> dict[str, Any]:
    """The request fields other than the messages (the same for every case)."""
    settings: dict[str, Any] = {
        "model": judge.model,
        "api_base": judge.api_base,
        "temperature": panel.temperature,
        "max_tokens": panel.max_tokens,
        "response_format": response_format(rubric, judge),
        "seed": panel.seed,
        "params": dict(judge.params),
    }
    if panel.max_reply_bytes != DEFAULT_REPLY_BYTES:
        settings["max_reply_bytes"] = panel.max_reply_bytes
    if judge.offline:  # what tiap's own judges answer changes with tiap: in the key
        settings["offline_version"] = OFFLINE_VERSION
    return settings


def settings_hash(settings: dict[str, Any]) -> str:
    """sha256 of a judge's request settings (:func:`judge_settings`): what every
    request of that judge shares apart from the messages. Stored on each judge label
    (``labels.settings_hash``), so a judgment, and the scale gate, are tied to the
    settings that produced them."""
    return hashlib.sha256(canonical_json(settings).encode("utf-8")).hexdigest()


def request_hash(settings_json: str, messages_json: str) -> str:
    """The cache key from the two canonical halves (see the module docstring)."""
    h = hashlib.sha256(settings_json.encode("utf-8"))
    h.update(b"\n")
    h.update(messages_json.encode("utf-8"))
    return h.hexdigest()


def full_request(settings: dict[str, Any], messages: list[dict[str, str]]) -> dict[str, Any]:
    """The stored request (``model_calls.request_json``): settings plus messages."""
    return {**settings, "messages": messages}


def litellm_kwargs(
    settings: dict[str, Any], messages: list[dict[str, str]], timeout_s: float
) -> dict[str, Any]:
    """Keyword arguments for ``litellm.acompletion`` (the key is added by the caller)."""
    kwargs: dict[str, Any] = {
        "model": settings["model"],
        "messages": messages,
        "temperature": settings["temperature"],
        "max_tokens": settings["max_tokens"],
        "timeout": timeout_s,
        "max_retries": 0,
        **settings["params"],
    }
    if settings["api_base"] is not None:
        kwargs["api_base"] = settings["api_base"]
    if settings["response_format"] is not None:
        kwargs["response_format"] = settings["response_format"]
    if settings["seed"] is not None:
        kwargs["seed"] = settings["seed"]
    return kwargs


@dataclass(frozen=True)
class MessagesJson:
    """A call's messages serialised twice from one encoding of their texts: as the
    openai SDK sends them (``wire``: compact JSON, UTF-8) and as the workspace
    stores them (``stored``: :func:`tiap.cases.rows.dumps_field`, sorted keys)."""

    wire: bytes
    stored: str


def messages_json(messages: Any) -> MessagesJson | None:
    """Both texts of ``messages`` (None unless they are a list of objects of strings,
    or when they cannot be encoded as UTF-8: then each is serialised on its own,
    where it is used). Each text is what :func:`json.dumps` gives for the form."""
    if not isinstance(messages, list):
        return None
    wire: list[str] = []
    stored: list[str] = []
    for message in messages:
        if type(message) is not dict:
            return None
        items = []
        for key, value in message.items():
            if type(key) is not str or type(value) is not str:
                return None
            items.append((key, encode_basestring(key), encode_basestring(value)))
        wire.append("{" + ",".join(f"{k}:{v}" for _, k, v in items) + "}")
        items.sort()
        stored.append("{" + ", ".join(f"{k}: {v}" for _, k, v in items) + "}")
    try:
        data = ("[" + ",".join(wire) + "]").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: it fails where it is sent
        return None
    return MessagesJson(data, "[" + ", ".join(stored) + "]")


def estimate_tokens(messages: list[dict[str, str]]) -> tuple[int, int]:
    """(typical, upper) prompt-token estimates without a tokenizer: about four
    characters per token for English text, and three as a safe upper bound."""
    chars = sum(len(m.get("content") or "") for m in messages)
    overhead = 8 * len(messages) + 8
    return chars // 4 + overhead, -(-chars // 3) + overhead

"""What the direct route sends: litellm's request, built without litellm where it can.

The direct route (:mod:`tiap.judge.routes.openai_http`) sends, byte for byte, the
request litellm would send for the same call (only headers differ). For each judge
and request settings it keeps a template, an :class:`Endpoint`: the URL and the
body's bytes before and after its messages; each call only puts its messages in.

- **Plain requests are built here** (:func:`plain_endpoint`): a chat model of
  ``openai/``, ``openrouter/`` or ``hosted_vllm/`` with tiap's own settings only
  (temperature, max_tokens, response format, seed; no ``params``). litellm passes
  these through unchanged, in this order (OpenRouter's also ask for the cost,
  ``"usage": {"include": true}``), serialised as its transport for the provider
  does: the openai SDK's compact UTF-8 JSON for ``openai/``, ``json.dumps`` for the
  others. So a panel of such judges never imports litellm.
- **Anything else is litellm's to build** (:func:`litellm_endpoint`, once per
  judge and settings, nothing sent): ``params``, models litellm maps with rules of
  their own (OpenAI's reasoning series ``o1``-``o4`` and ``gpt-5``/``gpt-6``, audio,
  search and realtime models; ``response_format`` for ``gpt-4`` and
  ``gpt-3.5-turbo-16k``), a ``hosted_vllm/`` model without a base URL, or litellm
  set up with a base URL of its own. When litellm would not send the messages
  unchanged, or cannot build the request, there is no template: the judge's calls
  go through litellm, which then fails or succeeds as it does on its own.

Base URLs are litellm's: the judge's ``api_base``, else the provider's variable
(``OPENAI_BASE_URL`` or ``OPENAI_API_BASE``; ``OPENROUTER_API_BASE``;
``HOSTED_VLLM_API_BASE``), else the provider's own.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: the providers whose calls litellm makes through the openai SDK (its JSON), not
#: through its own HTTP handler (``json.dumps``); and whose base URL is then the SDK's.
SDK_PROVIDERS = frozenset({"openai"})
#: request templates kept (per judge and request settings).
TEMPLATES_KEPT = 64

#: the keyword arguments of a call that a plain request carries, or that do not
#: change what is sent (the deadline, litellm's retries and pricing).
_PLAIN_KEYS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "response_format",
        "seed",
        "api_base",
        "timeout",
        "max_retries",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)
#: the body fields of a plain request after its messages, in litellm's order.
_BODY_FIELDS = ("temperature", "max_tokens", "response_format", "seed")
#: OpenAI model names litellm maps with a configuration of their own.
_SPECIAL_OPENAI = ("gpt-5", "gpt-6", "audio", "search", "realtime")
#: OpenAI models litellm refuses a response format for.
_NO_RESPONSE_FORMAT = frozenset({"gpt-4", "gpt-3.5-turbo-16k"})
_BASE_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "openrouter": ("OPENROUTER_API_BASE",),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",),
}
_DEFAULT_BASES = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
}
_MESSAGES = "\x00tiap-messages\x00"


def sdk_dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def handler_dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()


@dataclass(frozen=True)
class Endpoint:
    """Where and how one judge's requests (with given settings) are sent."""

    provider: str
    url: str
    #: the request body's bytes before and after its messages.
    head: bytes
    tail: bytes
    dumps: Callable[[Any], bytes]

    @property
    def base(self) -> str:
        return self.url.rsplit("/chat/completions", 1)[0]

    def body(self, messages: Any, wire: bytes | None = None) -> bytes:
        """The request body; ``wire``: the messages already serialised as the openai
        SDK does (used when this endpoint serialises that way)."""
        if wire is not None and self.dumps is sdk_dumps:
            return self.head + wire + self.tail
        return self.head + self.dumps(messages) + self.tail


def _template(provider: str, url: str, body: dict[str, Any]) -> Endpoint | None:
    """The endpoint of a body whose messages are the marker (None: not one)."""
    dumps = sdk_dumps if provider in SDK_PROVIDERS else handler_dumps
    try:
        whole = dumps(body)
    except (TypeError, ValueError):
        return None
    marker = dumps(_MESSAGES)
    if whole.count(marker) != 1:
        return None
    head, tail = whole.split(marker)
    return Endpoint(provider, url, head, tail, dumps)


def _url(provider: str, base: str) -> str:
    """The chat-completions URL litellm's transport reaches for a base URL."""
    base = base.rstrip("/")
    if provider in SDK_PROVIDERS or "chat/completions" not in base:
        return base + "/chat/completions"
    return base


def _base(provider: str, api_base: str | None) -> str | None:
    if api_base:
        return api_base
    for name in _BASE_VARIABLES.get(provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return _DEFAULT_BASES.get(provider)


def _litellm_set_up() -> bool:
    """Whether litellm (when loaded) was given a base URL of its own."""
    litellm = sys.modules.get("litellm")
    return litellm is not None and bool(getattr(litellm, "api_base", None))


def _special(provider: str, name: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether litellm maps this OpenAI model's request by rules of its own."""
    if provider != "openai":
        return False
    short = name.rsplit("/", 1)[-1]
    if len(short) > 1 and short[0] == "o" and short[1].isdigit():
        return True
    if any(marker in name for marker in _SPECIAL_OPENAI):
        return True
    return short in _NO_RESPONSE_FORMAT and kwargs.get("response_format") is not None


def plain_endpoint(kwargs: Mapping[str, Any], provider: str) -> Endpoint | None:
    """The template of a plain request, built here (None: litellm's to build)."""
    model = str(kwargs.get("model", ""))
    name = model.split("/", 1)[1] if "/" in model else model
    if set(kwargs) - _PLAIN_KEYS or _special(provider, name, kwargs) or _litellm_set_up():
        return None
    base = _base(provider, kwargs.get("api_base"))
    if base is None:
        return None
    body: dict[str, Any] = {"model": name, "messages": _MESSAGES}
    body.update({k: kwargs[k] for k in _BODY_FIELDS if kwargs.get(k) is not None})
    if provider == "openrouter":
        body["usage"] = {"include": True}
    return _template(provider, _url(provider, base), body)


def litellm_endpoint(kwargs: Mapping[str, Any], provider: str) -> Endpoint | None:
    """The request litellm would send for ``kwargs``, as a template (None:
    litellm's own call is needed; see the module doc). Imports litellm."""
    from tiap.judge.routes.litellm_core import NO_LITELLM_CACHE, litellm_session

    with litellm_session():
        from litellm.types.utils import CallTypes
        from litellm.utils import return_raw_request

        raw = return_raw_request(CallTypes.completion, {**kwargs, **NO_LITELLM_CACHE})
    body = raw.get("raw_request_body")
    base = raw.get("raw_request_api_base")
    if raw.get("error") or not isinstance(body, dict) or not isinstance(base, str):
        return None
    if body.get("messages") != kwargs["messages"]:
        return None
    if provider in SDK_PROVIDERS:
        extra = body.pop("extra_body", None) or {}
        if not isinstance(extra, dict):
            return None
        body.update(extra)
        url = base.rstrip("/") + "/chat/completions"
    else:
        url = base
    body["messages"] = _MESSAGES
    return _template(provider, url, body)


class Templates:
    """The endpoints built so far, by request settings (the last
    :data:`TEMPLATES_KEPT`, most recent first)."""

    def __init__(self) -> None:
        self._kept: list[tuple[dict[str, Any], Endpoint | None]] = []
        self._lock = threading.Lock()

    def endpoint(self, kwargs: Mapping[str, Any], provider: str) -> Endpoint | None:
        """The endpoint for a call's ``kwargs`` (litellm's, as the runner builds
        them), built on the first call with these settings and kept."""
        settings = {k: v for k, v in kwargs.items() if k != "messages"}
        with self._lock:
            for i, (known, found) in enumerate(self._kept):
                if known == settings:
                    if i:
                        self._kept.insert(0, self._kept.pop(i))
                    return found
        found = plain_endpoint(kwargs, provider)
        if found is None:
            found = litellm_endpoint(kwargs, provider)
        with self._lock:
            self._kept.insert(0, (settings, found))
            del self._kept[TEMPLATES_KEPT:]
        return found

"""The direct route: the OpenAI chat-completions protocol over pooled aiohttp clients.

For judges whose provider speaks that protocol (``openai/``, ``openrouter/``,
``hosted_vllm/``: see :mod:`tiap.judge.panel`), a call costs a fraction of a
millisecond of CPU here against several through litellm (its request mapping,
logging and cost bookkeeping run on every call). What is sent is still
litellm's: once per judge (and request settings) litellm builds the request it
would send (:func:`litellm.utils.return_raw_request`, nothing sent), and the
route keeps it as a template: every parameter mapping litellm applies for the
model is in it. Each call then only puts its messages in and serialises the body
as litellm's own transport for that provider does (the openai SDK's compact
UTF-8 JSON for ``openai/``, ``json.dumps`` for the others), so a server sees the
same bytes on both routes; only headers differ. When litellm would not send the
messages unchanged, or cannot build the request (an unsupported parameter), the
judge's calls go through litellm instead, which then fails or succeeds as it
does on its own.

One pooled client (an ``aiohttp.ClientSession``) per base URL and key, for as
long as :func:`http_clients` is open (outside it a call opens and closes its own).
No retries here (tiap's, in :mod:`tiap.judge.call`); ``timeout_s`` is one deadline
for the whole attempt: connecting, sending, the reply's headers and its body. A
reply body is read up to what the text cap needs (:func:`~tiap.judge.routes.reply.
body_limit`); past that the connection is dropped and the text kept is cut from
what was read. The reply is read as litellm reads it: the same record (id, model,
text, finish reason, token counts, refusal), an error status raised as
:class:`~tiap.judge.failures.ProviderStatusError` (with its ``Retry-After``), a
body that is not a chat completion as :class:`~tiap.judge.failures.MalformedReply`.
The key comes from the judge's ``api_key_env``, else from the provider's usual
variable (``OPENAI_API_KEY``, ``OPENROUTER_API_KEY`` or ``OR_API_KEY``,
``HOSTED_VLLM_API_KEY``), as litellm would read it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tiap import __version__
from tiap.judge.failures import MalformedReply, ProviderStatusError
from tiap.judge.panel import JudgeSpec
from tiap.judge.routes.reply import Reply, body_limit, bounded, content_from_prefix

#: the most of an error reply read (its message is all that is kept).
ERROR_BODY_BYTES = 64 * 1024
#: request templates kept (per judge and request settings).
_TEMPLATES_KEPT = 64

_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "hosted_vllm": ("HOSTED_VLLM_API_KEY",),
}
#: the providers whose calls litellm makes through the openai SDK (its JSON), not
#: through its own HTTP handler (``json.dumps``); and whose base URL is then the SDK's.
_SDK_PROVIDERS = frozenset({"openai"})
_MESSAGES = "\x00tiap-messages\x00"


def _sdk_dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _handler_dumps(obj: Any) -> bytes:
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

    def body(self, messages: Any) -> bytes:
        return self.head + self.dumps(messages) + self.tail


_templates: list[tuple[dict[str, Any], Endpoint | None]] = []


def _build(kwargs: dict[str, Any], provider: str) -> Endpoint | None:
    """The request litellm would send for ``kwargs``, as a template (None: litellm's
    own call is needed; see the module doc)."""
    from litellm.types.utils import CallTypes
    from litellm.utils import return_raw_request

    from tiap.judge.routes.litellm_route import NO_LITELLM_CACHE, litellm_session

    with litellm_session():
        raw = return_raw_request(CallTypes.completion, {**kwargs, **NO_LITELLM_CACHE})
    body = raw.get("raw_request_body")
    base = raw.get("raw_request_api_base")
    if raw.get("error") or not isinstance(body, dict) or not isinstance(base, str):
        return None
    if body.get("messages") != kwargs["messages"]:
        return None
    if provider in _SDK_PROVIDERS:
        extra = body.pop("extra_body", None) or {}
        if not isinstance(extra, dict):
            return None
        body.update(extra)
        url, dumps = base.rstrip("/") + "/chat/completions", _sdk_dumps
    else:
        url, dumps = base, _handler_dumps
    body["messages"] = _MESSAGES
    try:
        whole = dumps(body)
    except (TypeError, ValueError):
        return None
    marker = dumps(_MESSAGES)
    if whole.count(marker) != 1:
        return None
    head, tail = whole.split(marker)
    return Endpoint(provider, url, head, tail, dumps)


def endpoint(kwargs: dict[str, Any], judge: JudgeSpec) -> Endpoint | None:
    """The endpoint for a call's ``kwargs`` (litellm's, as the runner builds them),
    built on the first call of a judge with these settings and kept."""
    settings = {k: v for k, v in kwargs.items() if k != "messages"}
    for i, (known, found) in enumerate(_templates):
        if known == settings:
            if i:
                _templates.insert(0, _templates.pop(i))
            return found
    found = _build(kwargs, judge.provider)
    _templates.insert(0, (settings, found))
    del _templates[_TEMPLATES_KEPT:]
    return found


def _key(judge: JudgeSpec, api_key: str | None) -> str | None:
    if api_key is not None:
        return api_key
    for name in _KEY_VARIABLES.get(judge.provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return None


@dataclass(frozen=True)
class _Client:
    session: Any
    #: the proxy the environment names for the base URL (read once), if any.
    proxy: Any = None
    proxy_auth: Any = None


def _env_proxy(base: str) -> tuple[Any, Any]:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...) names for
    ``base``, as litellm's clients honour it: read once per client, not per call."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        return get_env_proxy_for_url(URL(base))
    except LookupError:
        return None, None


class HttpClients:
    """One pooled ``aiohttp.ClientSession`` per base URL and key."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str | None], _Client] = {}

    def client(self, base: str, key: str | None) -> _Client:
        found = self._clients.get((base, key))
        if found is None or found.session.closed:
            import aiohttp

            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": f"tiap/{__version__}",
            }
            if key:
                headers["Authorization"] = f"Bearer {key}"
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
                headers=headers,
                timeout=aiohttp.ClientTimeout(),  # tiap's deadline covers the attempt
                cookie_jar=aiohttp.DummyCookieJar(),  # a provider's cookies are not kept
            )
            found = _Client(session, *_env_proxy(base))
            self._clients[(base, key)] = found
        return found

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.session.close()


_clients: ContextVar[HttpClients | None] = ContextVar("tiap_http_clients", default=None)


@asynccontextmanager
async def http_clients() -> AsyncIterator[HttpClients]:
    """Pooled clients for the direct route's calls made inside the block (and the
    tasks it starts); closed at its end."""
    clients = HttpClients()
    token = _clients.set(clients)
    try:
        yield clients
    finally:
        _clients.reset(token)
        await clients.close()


async def _read(resp: Any, limit: int) -> tuple[bytes, bool]:
    """The body, at most ``limit`` bytes; True when there was more."""
    length = resp.content_length
    if length is not None and length <= limit and not resp.headers.get("Content-Encoding"):
        return await resp.read(), False
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await resp.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit], True


def _error(status: int, body: bytes, headers: Any) -> ProviderStatusError:
    text = body.decode("utf-8", "replace")
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    error = obj.get("error") if isinstance(obj, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    detail = message if isinstance(message, str) else (text or f"HTTP {status}")
    return ProviderStatusError(status, f"HTTP {status}: {detail}", headers)


def _tokens(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return 0


#: finish reasons litellm keeps as they are (the others it maps: ``end_turn`` -> ``stop``).
_OPENAI_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})


def _finish_reason(value: Any) -> str:
    """The finish reason as litellm reports it (none given: ``stop``)."""
    if not isinstance(value, str):
        return "stop"
    if value in _OPENAI_FINISH_REASONS:
        return value
    from litellm.litellm_core_utils.core_helpers import map_finish_reason

    return str(map_finish_reason(value))


def parse_completion(body: bytes, provider: str, headers: Any) -> tuple[dict[str, Any], Any]:
    """``(record, usage)`` of a complete chat-completion body (as litellm reads it)."""
    obj = json.loads(body)
    if not isinstance(obj, dict):
        raise MalformedReply("the reply is not a JSON object")
    choices = obj.get("choices")
    if not isinstance(choices, list):
        error = obj.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            status = code if isinstance(code, int) and 400 <= code <= 599 else 502
            detail = error.get("message")
            raise ProviderStatusError(status, f"HTTP {status}: {detail}", headers)
        raise MalformedReply("the reply has no choices")
    choice = choices[0] if choices else None
    message: Any = None
    if choice is not None:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise MalformedReply("the reply's first choice has no message")
    content = message.get("content") if message else None
    if content is not None and not isinstance(content, str):
        raise MalformedReply("the reply's text is not a string")
    usage = obj.get("usage")
    record: dict[str, Any] = {
        "id": obj.get("id") if isinstance(obj.get("id"), str) else None,
        "model": obj.get("model") if isinstance(obj.get("model"), str) else None,
        "content": content,
        "finish_reason": None if choice is None else _finish_reason(choice.get("finish_reason")),
        "usage": {
            "prompt_tokens": _tokens(usage, "prompt_tokens"),
            "completion_tokens": _tokens(usage, "completion_tokens"),
        },
    }
    refusal = message.get("refusal") if message else None
    if isinstance(refusal, str) and refusal:
        record["refusal"] = refusal
    return record, usage


def _cut_record(prefix: bytes) -> dict[str, Any]:
    return {
        "id": None,
        "model": None,
        "content": content_from_prefix(prefix),
        "finish_reason": None,
        "usage": {"prompt_tokens": None, "completion_tokens": None},
    }


async def attempt(
    kwargs: dict[str, Any],
    point: Endpoint,
    judge: JudgeSpec,
    *,
    api_key: str | None,
    timeout_s: float,
    max_reply_bytes: int,
) -> Reply:
    """One attempt over HTTP; raises the transport's or the route's exceptions, or
    :class:`TimeoutError` past ``timeout_s``."""
    clients = _clients.get()
    own = None
    if clients is None:
        own = clients = HttpClients()
    try:
        client = clients.client(point.base, _key(judge, api_key))
        data = point.body(kwargs["messages"])
        async with asyncio.timeout(timeout_s):
            async with client.session.post(
                point.url, data=data, proxy=client.proxy, proxy_auth=client.proxy_auth
            ) as resp:
                if resp.status >= 400:
                    body, _ = await _read(resp, ERROR_BODY_BYTES)
                    raise _error(resp.status, body, resp.headers)
                body, more = await _read(resp, body_limit(max_reply_bytes))
                if more:
                    resp.close()  # the rest is not wanted: the connection is not reused
                    return Reply(bounded(_cut_record(body), max_reply_bytes, body_cut=True))
        record, usage = parse_completion(body, point.provider, resp.headers)
    finally:
        if own is not None:
            await own.close()
    return Reply(bounded(record, max_reply_bytes), _reported_cost(usage, point.provider))


def _reported_cost(usage: Any, provider: str) -> float | None:
    """The charge the provider states for the call (``usage.cost``: a number, or a
    breakdown with ``total_cost``; OpenRouter's), read as litellm reads it."""
    cost = usage.get("cost") if isinstance(usage, dict) else None
    if isinstance(cost, dict):
        cost = cost.get("total_cost")
    if not isinstance(cost, int | float) or isinstance(cost, bool):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None

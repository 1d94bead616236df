"""The direct route: the OpenAI chat-completions protocol over pooled HTTP/1.1 clients.

For judges whose provider speaks that protocol (``openai/``, ``openrouter/``,
``hosted_vllm/``: see :mod:`tiap.judge.panel`), a call costs a fraction of a
millisecond of CPU here against several through litellm (its request mapping,
logging and cost bookkeeping run on every call). What is sent is still
litellm's request, byte for byte (:mod:`tiap.judge.routes.openai_request`: built
here for plain requests, by litellm for the others); when there is none to copy,
the judge's calls go through the litellm route instead, which then fails or
succeeds as it does on its own.

One pooled client per base URL and key, for as long as :func:`http_clients` is
open (outside it a call opens and closes its own): tiap's own keep-alive HTTP/1.1
client (:mod:`tiap.judge.routes.http_pool`: connections pooled per host, TLS for
``https``, no compression asked for), except for a base URL the environment sends
through a proxy (``HTTP_PROXY``/``HTTPS_PROXY``, not excluded by ``NO_PROXY``, as
litellm's clients read them): that one goes through aiohttp, which speaks the proxy
protocol (:class:`ProxiedClient`). Either way the same bytes are sent and the reply
is read the same way; a reset or closed connection is a connection error.

No retries here (tiap's, in :mod:`tiap.judge.retry`); ``timeout_s`` is one deadline
for the whole attempt: connecting, sending, the reply's headers and its body. A
reply body is read up to what the text cap needs (:func:`~tiap.judge.routes.reply.
body_limit`); past that the connection is dropped and the text kept is cut from
what was read. The reply is read as litellm reads it: the same record (id, model,
text, finish reason as litellm maps it, token counts, refusal), an error status
raised as :class:`~tiap.judge.failures.ProviderStatusError` (with its
``Retry-After``), a body that is not a chat completion as
:class:`~tiap.judge.failures.MalformedReply`. Its cost is litellm's figure too:
the charge the provider states (``usage.cost``) unless tiap sets the judge's
price, else the price (the panel's, else litellm's table, read as a file) times
the tokens. The key comes from the judge's ``api_key_env``, else from the
provider's usual variable (``OPENAI_API_KEY``, ``OPENROUTER_API_KEY`` or
``OR_API_KEY``, ``HOSTED_VLLM_API_KEY``), as litellm would read it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from tiap import __version__
from tiap.judge.failures import MalformedReply, ProviderStatusError
from tiap.judge.panel import JudgeSpec
from tiap.judge.pricing import Price, cost_policy, judge_price
from tiap.judge.routes.base import Attempt, BatchOffer, JudgeRoute
from tiap.judge.routes.http_pool import HttpClient, Response
from tiap.judge.routes.openai_request import Endpoint, Templates
from tiap.judge.routes.reply import Reply, body_limit, bounded, content_from_prefix

#: the most of an error reply read (its message is all that is kept).
ERROR_BODY_BYTES = 64 * 1024
#: the route's name in the registry.
NAME = "openai"

_KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "hosted_vllm": ("HOSTED_VLLM_API_KEY",),
}


def _key(judge: JudgeSpec, api_key: str | None) -> str | None:
    if api_key is not None:
        return api_key
    for name in _KEY_VARIABLES.get(judge.provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return None


def _headers(key: str | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"tiap/{__version__}",
    }
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def env_proxy(base: str) -> bool:
    """Whether the environment (``HTTPS_PROXY``, ``NO_PROXY``, ...) sends requests
    to ``base`` through a proxy, as litellm's clients (and aiohttp) read it."""
    import urllib.request

    parts = urlsplit(base)
    proxies = urllib.request.getproxies()
    if parts.scheme.lower() not in proxies:
        return False
    return not (parts.hostname and urllib.request.proxy_bypass(parts.hostname))


class ProxiedClient:
    """The client for a base URL reached through the environment's proxy: an
    ``aiohttp.ClientSession`` (tiap's own client speaks no proxy protocol)."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        import aiohttp
        from aiohttp.helpers import get_env_proxy_for_url
        from yarl import URL

        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
            headers=headers,
            timeout=aiohttp.ClientTimeout(),  # tiap's deadline covers the attempt
            cookie_jar=aiohttp.DummyCookieJar(),  # a provider's cookies are not kept
        )
        #: the proxy the environment names for the base URL (read once), if any
        self.proxy: Any = None
        self.proxy_auth: Any = None
        with suppress(LookupError):  # none for this URL
            self.proxy, self.proxy_auth = get_env_proxy_for_url(URL(base))

    @property
    def closed(self) -> bool:
        return bool(self.session.closed)

    async def post(self, url: str, body: bytes, limit_for: Callable[[int], int]) -> Response:
        async with self.session.post(
            url, data=body, proxy=self.proxy, proxy_auth=self.proxy_auth
        ) as resp:
            data, more = await _read(resp, limit_for(resp.status))
            if more:
                resp.close()  # the rest is not wanted: the connection is not reused
            headers = {k.lower(): v for k, v in resp.headers.items()}
            return Response(resp.status, headers, data, more)

    async def close(self) -> None:
        await self.session.close()


class HttpClients:
    """One pooled client per base URL and key: tiap's own HTTP client
    (:mod:`tiap.judge.routes.http_pool`), or aiohttp's for a base URL the
    environment sends through a proxy (:class:`ProxiedClient`)."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str | None], HttpClient | ProxiedClient] = {}

    def client(self, base: str, key: str | None) -> HttpClient | ProxiedClient:
        found = self._clients.get((base, key))
        if found is None or found.closed:
            headers = _headers(key)
            found = ProxiedClient(base, headers) if env_proxy(base) else HttpClient(headers)
            self._clients[(base, key)] = found
        return found

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


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


#: finish reasons as litellm maps them (``litellm_core_utils.core_helpers``); any
#: other is ``stop``.
FINISH_REASONS: dict[str, str] = {
    **dict.fromkeys(
        (
            "stop",
            "stop_sequence",
            "end_turn",
            "COMPLETE",
            "STOP_SEQUENCE",
            "ERROR",
            "eos_token",
            "eos",
            "STOP",
            "FINISH_REASON_UNSPECIFIED",
            "MALFORMED_FUNCTION_CALL",
            "TOO_MANY_TOOL_CALLS",
            "MALFORMED_RESPONSE",
            "UNEXPECTED_TOOL_CALL",
            "MISSING_THOUGHT_SIGNATURE",
            "network_error",
            "error",
        ),
        "stop",
    ),
    **dict.fromkeys(
        (
            "length",
            "max_tokens",
            "compaction",
            "pause_turn",
            "model_context_window_exceeded",
            "MAX_TOKENS",
            "CONTINUATION",
        ),
        "length",
    ),
    **dict.fromkeys(("tool_calls", "tool_use", "TOOL_CALL"), "tool_calls"),
    "function_call": "function_call",
    **dict.fromkeys(
        (
            "content_filter",
            "refusal",
            "ERROR_TOXIC",
            "SAFETY",
            "RECITATION",
            "LANGUAGE",
            "OTHER",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT",
            "NO_IMAGE",
            "IMAGE_RECITATION",
            "IMAGE_OTHER",
            "ESCALATION",
            "sensitive",
            "guardrail_intervened",
            "content_filtered",
        ),
        "content_filter",
    ),
}


def _finish_reason(value: Any) -> str:
    """The finish reason as litellm reports it (none given: ``stop``)."""
    if not isinstance(value, str):
        return "stop"
    return FINISH_REASONS.get(value, "stop")


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


async def send(
    kwargs: Mapping[str, Any],
    point: Endpoint,
    judge: JudgeSpec,
    *,
    api_key: str | None,
    timeout_s: float,
    max_reply_bytes: int,
    messages_json: bytes | None = None,
) -> Reply:
    """One attempt over HTTP; raises the transport's or the route's exceptions, or
    :class:`TimeoutError` past ``timeout_s``. ``messages_json``: see
    :class:`~tiap.judge.routes.Attempt`."""
    clients = _clients.get()
    own = None
    if clients is None:
        own = clients = HttpClients()
    limit = body_limit(max_reply_bytes)
    try:
        client = clients.client(point.base, _key(judge, api_key))
        data = point.body(kwargs["messages"], messages_json)
        async with asyncio.timeout(timeout_s):
            resp = await client.post(
                point.url, data, lambda status: ERROR_BODY_BYTES if status >= 400 else limit
            )
    finally:
        if own is not None:
            await own.close()
    if resp.status >= 400:
        raise _error(resp.status, resp.body, resp.headers)
    if resp.more:
        return Reply(bounded(_cut_record(resp.body), max_reply_bytes, body_cut=True))
    record, usage = parse_completion(resp.body, point.provider, resp.headers)
    return Reply(bounded(record, max_reply_bytes), _reported_cost(usage, point.provider))


@lru_cache(maxsize=256)
def _pricing(model: str, cin: float | None, cout: float | None) -> tuple[bool, Price | None]:
    """(whether tiap gives litellm the judge's prices, the judge's price)."""
    judge = JudgeSpec(name="price", model=model, input_cost_per_mtok=cin, output_cost_per_mtok=cout)
    return bool(cost_policy(judge).litellm_kwargs), judge_price(judge)


def direct_cost(judge: JudgeSpec, reply: Reply) -> float | None:
    """The direct route's cost, as litellm would figure it: the provider's stated
    charge unless tiap sets the judge's prices, else the price (the panel's, else
    litellm's table: looked up once per judge) times the tokens."""
    priced, price = _pricing(judge.model, judge.input_cost_per_mtok, judge.output_cost_per_mtok)
    if reply.cost_usd is not None and not priced:
        return reply.cost_usd
    usage = reply.record.get("usage") or {}
    pin, pout = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if price is None or not isinstance(pin, int) or not isinstance(pout, int):
        return None
    return price.cost(pin, pout)


class OpenAIRoute:
    """The direct route (registered as ``openai``; see the module docstring). A
    judge's call with no request to copy goes through ``fallback`` (litellm's)."""

    name = NAME

    def __init__(self, fallback: JudgeRoute) -> None:
        self.fallback = fallback
        self.templates = Templates()

    def prepare(self, judge: JudgeSpec, kwargs: Mapping[str, Any]) -> None:
        if self.templates.endpoint(kwargs, judge.provider) is None:
            self.fallback.prepare(judge, kwargs)

    def session(self) -> Any:
        return http_clients()

    async def call(self, attempt: Attempt) -> Reply:
        point = self.templates.endpoint(attempt.kwargs, attempt.judge.provider)
        if point is None:
            return await self.fallback.call(attempt)
        reply = await send(
            attempt.kwargs,
            point,
            attempt.judge,
            api_key=attempt.api_key,
            timeout_s=attempt.timeout_s,
            max_reply_bytes=attempt.max_reply_bytes,
            messages_json=attempt.messages_json,
        )
        return Reply(reply.record, direct_cost(attempt.judge, reply))

    def batches(self, judge: JudgeSpec, api_key: str | None) -> BatchOffer:
        return self.fallback.batches(judge, api_key)


def _reported_cost(usage: Any, provider: str) -> float | None:
    """The charge the provider states for the call (``usage.cost``: a number, or a
    breakdown with ``total_cost``; OpenRouter's), read as litellm reads it."""
    cost = usage.get("cost") if isinstance(usage, dict) else None
    if isinstance(cost, dict):
        cost = cost.get("total_cost")
    if not isinstance(cost, int | float) or isinstance(cost, bool):
        return None
    return float(cost) if math.isfinite(cost) and cost >= 0 else None


def make_route() -> OpenAIRoute:
    """The built-in `openai` route (named in :mod:`tiap.judge.route_registry`):
    requests only litellm knows how to build fall back to the `litellm` route."""
    from tiap.judge.routes import get_route

    return OpenAIRoute(fallback=get_route("litellm"))

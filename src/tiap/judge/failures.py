"""Which failed calls are retried, what a failure is called, and secret scrubbing.

Retried (with backoff, ``Retry-After`` honoured): rate limits (429), server
errors (5xx, and a reply that is not a chat completion), timeouts and connection
errors. Never retried: 400, 401, 403, 404, 422 and anything else. After the last
attempt a retryable failure becomes an invalid judgment (label NULL, reason e.g.
``timeout``). Authentication and not-found errors are *fatal* for the judge: no
label is stored (the case is not at fault) and the judge stops, so fixing the key
or model and re-running completes the work.

A failure is classified by the *types* of the exception and of the exceptions it
was raised from or while handling (``__cause__``, ``__context__``): litellm's and
the openai SDK's exception classes, httpx's and aiohttp's transport errors,
:class:`TimeoutError`, the direct route's own (:class:`ProviderStatusError`,
:class:`MalformedReply`; its HTTP client's connection errors are the standard
library's :class:`ConnectionError`, an :class:`OSError`), and the HTTP status an exception carries
(``status_code``). Types of a library that is not imported cannot occur, so
classifying never imports one. Messages are never read to classify.
"""

from __future__ import annotations

import email.utils
import json
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tiap.rubric.reasons import Reason

REDACTED = "[redacted]"

#: reasons whose labels ``--retry-failed`` re-attempts (transport, not content).
TRANSPORT_REASONS = frozenset(
    {
        Reason.TIMEOUT,
        Reason.RATE_LIMITED,
        Reason.SERVER_ERROR,
        Reason.CONNECTION_ERROR,
        Reason.BAD_REQUEST,
        Reason.ERROR,
        Reason.DUPLICATE_REPLY,
    }
)

#: the longest failure detail kept (characters).
MESSAGE_CHARS = 500


@dataclass(frozen=True)
class Failure:
    """A classified exception: its reason code and, apart, its detail (``message``)."""

    reason: Reason
    retryable: bool
    fatal: bool
    status: int | None
    message: str

    def record(self) -> dict[str, Any]:
        """The failure as stored with its call (``model_calls.error``, JSON)."""
        return {"reason": self.reason.value, "status": self.status, "detail": self.message}


class ProviderStatusError(Exception):
    """An HTTP error status from the provider (the direct route's)."""

    def __init__(self, status_code: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers


class MalformedReply(ValueError):
    """A reply that is not a chat completion (not JSON, no object): the server's fault."""


_BY_STATUS: dict[int, tuple[Reason, bool, bool]] = {
    400: (Reason.BAD_REQUEST, False, False),
    401: (Reason.AUTH_ERROR, False, True),
    403: (Reason.AUTH_ERROR, False, True),
    404: (Reason.NOT_FOUND, False, True),
    408: (Reason.TIMEOUT, True, False),
    409: (Reason.SERVER_ERROR, True, False),
    413: (Reason.BAD_REQUEST, False, False),
    422: (Reason.BAD_REQUEST, False, False),
    429: (Reason.RATE_LIMITED, True, False),
}


@dataclass(frozen=True)
class _Types:
    """The exception classes that decide a classification, from the libraries loaded."""

    timeout: tuple[type[BaseException], ...]
    content_policy: tuple[type[BaseException], ...]
    connection: tuple[type[BaseException], ...]
    malformed: tuple[type[BaseException], ...]


_types_cache: dict[frozenset[str], _Types] = {}
_LIBRARIES = ("litellm", "openai", "httpx", "aiohttp")


def _types() -> _Types:
    loaded = frozenset(name for name in _LIBRARIES if name in sys.modules)
    cached = _types_cache.get(loaded)
    if cached is not None:
        return cached
    timeout: list[type[BaseException]] = [TimeoutError]
    content_policy: list[type[BaseException]] = []
    connection: list[type[BaseException]] = [OSError]
    malformed: list[type[BaseException]] = [MalformedReply, json.JSONDecodeError]
    if "litellm" in loaded:
        import litellm

        timeout.append(litellm.Timeout)
        content_policy.append(litellm.ContentPolicyViolationError)
        connection.append(litellm.APIConnectionError)
    if "openai" in loaded:
        import openai

        timeout.append(openai.APITimeoutError)
        connection.append(openai.APIConnectionError)
    if "httpx" in loaded:
        import httpx

        timeout.append(httpx.TimeoutException)
        connection.append(httpx.TransportError)
    if "aiohttp" in loaded:
        import aiohttp

        timeout.append(aiohttp.ServerTimeoutError)
        connection += [aiohttp.ClientConnectionError, aiohttp.ClientPayloadError]
    types = _Types(tuple(timeout), tuple(content_policy), tuple(connection), tuple(malformed))
    _types_cache[loaded] = types
    return types


def _chain(exc: BaseException, limit: int = 16) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, nearest first."""
    seen: set[int] = set()
    queue = [exc]
    while queue and len(seen) < limit:
        current = queue.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        queue.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _status(chain: list[BaseException]) -> int | None:
    for exc in chain:
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def classify(exc: BaseException, secrets: Iterable[str] = ()) -> Failure:
    """Classify an exception from a model call (a route's or its transport's)."""
    message = scrub(f"{type(exc).__name__}: {exc}", secrets) or ""
    message = " ".join(message.split())[:MESSAGE_CHARS]
    types = _types()
    chain = list(_chain(exc))
    status = _status(chain)

    def any_of(kinds: tuple[type[BaseException], ...]) -> bool:
        return bool(kinds) and any(isinstance(e, kinds) for e in chain)

    if any_of(types.timeout):
        return Failure(Reason.TIMEOUT, True, False, 408, message)
    if any_of(types.content_policy):
        return Failure(Reason.CONTENT_FILTER, False, False, status, message)
    # no HTTP status came with these (a status litellm gives them is its own)
    if any_of(types.connection):
        return Failure(Reason.CONNECTION_ERROR, True, False, None, message)
    if any_of(types.malformed):
        return Failure(Reason.SERVER_ERROR, True, False, None, message)
    if status in _BY_STATUS:
        reason, retryable, fatal = _BY_STATUS[status]
        return Failure(reason, retryable, fatal, status, message)
    if status is not None and status >= 500:
        return Failure(Reason.SERVER_ERROR, True, False, status, message)
    return Failure(Reason.ERROR, False, False, status, message)


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except AttributeError:
        return None
    if value is None and isinstance(headers, Mapping):
        lowered = {str(k).lower(): v for k, v in headers.items()}
        value = lowered.get(name)
    return None if value is None else str(value)


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``Retry-After`` / ``retry-after-ms``), if any."""
    sources = [
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ]
    for headers in sources:
        ms = _header(headers, "retry-after-ms")
        if ms is not None:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


def scrub(text: str | None, secrets: Iterable[str]) -> str | None:
    """``text`` with every secret (of 4 characters or more) replaced by ``[redacted]``."""
    if text is None:
        return None
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return text

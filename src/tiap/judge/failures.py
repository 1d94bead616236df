"""Which failed calls are retried, what a failure is called, and secret scrubbing.

Retried (with backoff, ``Retry-After`` honoured): rate limits (429), server
errors (5xx), timeouts and connection errors. Never retried: 400, 401, 403,
404, 422 and anything else. After the last attempt a retryable failure becomes
an invalid judgment (label NULL, reason e.g. ``timeout``). Authentication and
not-found errors are *fatal* for the judge: no label is stored (the case is not
at fault) and the judge stops, so fixing the key or model and re-running
completes the work.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"

#: reasons whose labels ``--retry-failed`` re-attempts (transport, not content).
TRANSPORT_REASONS = frozenset(
    {"timeout", "rate_limited", "server_error", "connection_error", "bad_request", "error"}
)


@dataclass(frozen=True)
class Failure:
    """A classified exception."""

    reason: str
    retryable: bool
    fatal: bool
    status: int | None
    message: str


_BY_STATUS: dict[int, tuple[str, bool, bool]] = {
    400: ("bad_request", False, False),
    401: ("auth_error", False, True),
    403: ("auth_error", False, True),
    404: ("not_found", False, True),
    408: ("timeout", True, False),
    409: ("server_error", True, False),
    413: ("bad_request", False, False),
    422: ("bad_request", False, False),
    429: ("rate_limited", True, False),
}


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return True
    return any(c.__name__ in {"Timeout", "APITimeoutError"} for c in type(exc).__mro__)


def _is_connection(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    if "APIConnectionError" in names or isinstance(exc, ConnectionError):
        return True
    return "Connection error" in str(exc)


def classify(exc: BaseException, secrets: Iterable[str] = ()) -> Failure:
    """Classify an exception from a model call (litellm's or the transport's)."""
    message = scrub(f"{type(exc).__name__}: {exc}", secrets) or ""
    message = " ".join(message.split())[:500]
    if _is_timeout(exc):
        return Failure("timeout", True, False, 408, message)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    names = {c.__name__ for c in type(exc).__mro__}
    if "ContentPolicyViolationError" in names:
        return Failure("content_filter", False, False, status, message)
    if status in _BY_STATUS:
        reason, retryable, fatal = _BY_STATUS[status]
        return Failure(reason, retryable, fatal, status, message)
    if _is_connection(exc):
        return Failure("connection_error", True, False, status, message)
    if status is not None and status >= 500:
        return Failure("server_error", True, False, status, message)
    return Failure("error", False, False, status, message)


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

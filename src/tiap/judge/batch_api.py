"""The OpenAI batch protocol's format: limits, input lines' endpoint, result lines.

A batch's output and error files hold one JSON line per request
(``{custom_id, response: {status_code, body}}`` or ``{custom_id, error: {code,
message}}``); :func:`read_lines` reads them into :class:`LineResult` s, and a
failed line is classified like the same failure of a direct call
(:func:`line_failure`). The API itself is a route's
(:class:`~tiap.judge.routes.base.BatchApi`; litellm's:
:mod:`tiap.judge.routes.litellm_batch`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tiap.judge.failures import Failure, classify

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
#: a batch in one of these statuses is over: its files hold every result it has.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: the most pages of a provider's batch list read.
MAX_LIST_PAGES = 100_000
_MIB = 1024 * 1024


@dataclass(frozen=True)
class BatchLimits:
    """What one batch may hold: requests (lines) and bytes of its input file."""

    max_requests: int
    max_bytes: int


#: the providers' documented per-batch limits; others get OpenAI's.
PROVIDER_LIMITS: dict[str, BatchLimits] = {
    "openai": BatchLimits(50_000, 200 * _MIB),
    "azure": BatchLimits(100_000, 200 * _MIB),
}
DEFAULT_LIMITS = PROVIDER_LIMITS["openai"]


def limits_for(provider: str) -> BatchLimits:
    return PROVIDER_LIMITS.get(provider, DEFAULT_LIMITS)


# ------------------------------------------------------------------- results


@dataclass(frozen=True)
class LineResult:
    """One line of a batch's output or error file."""

    custom_id: str
    #: the chat completion (HTTP 200)
    body: dict[str, Any] | None = None
    #: the HTTP status of a failed request
    status: int | None = None
    #: the error code of a request the batch did not run (``batch_expired``, ...)
    code: str | None = None
    message: str = ""


def _line_result(obj: Any) -> LineResult | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        return None
    custom_id = obj["custom_id"]
    response = obj.get("response")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        body = response.get("body")
        if response["status_code"] == 200:
            return LineResult(custom_id, body=body if isinstance(body, dict) else None)
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return LineResult(custom_id, status=response["status_code"], message=str(message or ""))
    error = obj.get("error")
    if isinstance(error, dict):
        return LineResult(
            custom_id,
            code=str(error.get("code") or "error"),
            message=str(error.get("message") or ""),
        )
    return None


def read_lines(data: bytes) -> tuple[list[LineResult], int]:
    """The lines of one of a batch's files, in order, and how many could not be
    read (not JSON, no custom id, no response or error)."""
    results: list[LineResult] = []
    malformed = 0
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            result = _line_result(json.loads(raw))
        except ValueError:
            result = None
        if result is None:
            malformed += 1
        else:
            results.append(result)
    return results, malformed


class LineError(Exception):
    """A failed line of a batch, classified like the same failure of a direct call."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message or f"status {status_code}")
        self.status_code = status_code


def line_failure(result: LineResult, secrets: tuple[str, ...]) -> Failure:
    return classify(LineError(result.status or 500, result.message), secrets)


class BatchListError(Exception):
    """The provider's batch list could not be read to its end."""


#: the metadata key of a batch that carries its submission's key.
KEY_FIELD = "tiap_key"


def made_for(batch: Any, key: str | None, input_file_id: str | None) -> bool:
    """Whether a listed batch is the one made for a submission (its key, or its
    input file: a file id names one upload)."""
    metadata = getattr(batch, "metadata", None)
    if key and isinstance(metadata, Mapping) and metadata.get(KEY_FIELD) == key:
        return True
    return bool(input_file_id) and getattr(batch, "input_file_id", None) == input_file_id

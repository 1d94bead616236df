"""Provider batch APIs through litellm: the OpenAI batch protocol.

A batch is a JSONL file of ``{custom_id, method, url, body}`` lines uploaded with
purpose ``batch`` (``litellm.acreate_file``), a batch created from it for
``/v1/chat/completions`` with a 24 h window (``litellm.acreate_batch``), polled
(``litellm.aretrieve_batch``) until it is ``completed``, ``expired``,
``cancelled`` or ``failed``, and its output and error files downloaded
(``litellm.afile_content``). litellm speaks it for OpenAI (any ``openai/``
model, with or without an ``api_base``: an OpenAI-compatible server), Azure,
Vertex AI, Bedrock, Mistral, vLLM and xAI; every call honours the judge's
``api_base`` and key. OpenRouter (the ``frontier`` panel) is not among them.

A line's ``custom_id`` is the request hash (the cache key) and its body is what
litellm would send for a direct call (``litellm.utils.get_optional_params``
maps the settings for the provider), so a result is parsed and stored exactly
like a direct call's reply: the same record, cut at the panel's ``max_reply_bytes``,
the same reason codes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tiap.judge.call import (
    CallOutcome,
    litellm_module,
    litellm_session,
    response_record,
    take_record,
)
from tiap.judge.failures import Failure, classify
from tiap.judge.panel import JudgeSpec
from tiap.judge.routes.reply import bounded

#: litellm providers whose batch API tiap uses (litellm's batch providers).
BATCH_PROVIDERS = frozenset(
    {"openai", "azure", "vertex_ai", "bedrock", "mistral", "hosted_vllm", "xai"}
)
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
#: a batch in one of these statuses is over: its files hold every result it has.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: seconds for one administrative request (an upload may be large).
ADMIN_TIMEOUT_S = 600.0
#: batches per page of the provider's list (OpenAI's most), and the most pages read.
LIST_PAGE = 100
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


def provider_of(model: str, api_base: str | None) -> str:
    """The litellm provider of a model string (``openai`` for ``openai/NAME``)."""
    litellm = litellm_module()
    try:
        return str(litellm.get_llm_provider(model=model, api_base=api_base)[1])
    except Exception:  # litellm does not know it: it has no batch API for it either
        return model.split("/", 1)[0] if "/" in model else "unknown"


def batch_route(judge: JudgeSpec) -> tuple[str | None, str]:
    """``(provider, why)``: the batch provider of a judge, or ``None`` and why it is
    called directly under ``--batch``."""
    if judge.offline:
        return None, "an in-process judge: called directly"
    if not judge.batch:
        return None, "batch = false in the panel: called directly"
    provider = provider_of(judge.model, judge.api_base)
    if provider not in BATCH_PROVIDERS:
        return None, f"litellm has no batch API for provider '{provider}': called directly"
    return provider, f"through the {provider} batch API"


# --------------------------------------------------------------------- lines


def request_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body of a stored request (``model_calls``
    ``request_json``: settings and messages), as litellm would send it."""
    from litellm.utils import get_optional_params

    litellm = litellm_module()
    model, provider, _, _ = litellm.get_llm_provider(
        model=request["model"], api_base=request.get("api_base")
    )
    optional = get_optional_params(
        model=model,
        custom_llm_provider=provider,
        temperature=request.get("temperature"),
        max_tokens=request.get("max_tokens"),
        response_format=request.get("response_format"),
        seed=request.get("seed"),
        **dict(request.get("params") or {}),
    )
    optional.pop("stream", None)
    extra = optional.pop("extra_body", None) or {}
    return {"model": model, "messages": request["messages"], **optional, **extra}


def batch_line(custom_id: str, request: Mapping[str, Any]) -> bytes:
    """One JSONL line of a batch input file."""
    line = {
        "custom_id": custom_id,
        "method": "POST",
        "url": ENDPOINT,
        "body": request_body(request),
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


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


def _completion_shape(body: Mapping[str, Any]) -> bool:
    choices = body.get("choices")
    return (
        isinstance(choices, list)
        and bool(choices)
        and isinstance(choices[0], dict)
        and isinstance(choices[0].get("message"), dict)
    )


def outcome_from_body(
    body: Mapping[str, Any], custom_id: str, *, max_reply_bytes: int
) -> CallOutcome | None:
    """A direct call's outcome from a batch line's chat completion (None when the
    body is not one): the record litellm's route keeps, bounded the same way (a
    text past ``max_reply_bytes`` cut, and marked so)."""
    if not _completion_shape(body):
        return None
    litellm = litellm_module()
    try:
        resp = litellm.ModelResponse(**{"id": f"batch-{custom_id[:16]}", **body})
    except Exception:
        return None
    record = bounded(response_record(resp), max_reply_bytes)
    return take_record(CallOutcome(attempts=1), record)


class LineError(Exception):
    """A failed line of a batch, classified like the same failure of a direct call."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message or f"status {status_code}")
        self.status_code = status_code


def line_failure(result: LineResult, secrets: tuple[str, ...]) -> Failure:
    return classify(LineError(result.status or 500, result.message), secrets)


# -------------------------------------------------------------------- client


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


@dataclass(frozen=True)
class BatchClient:
    """The files and batches endpoints of one judge's provider (litellm)."""

    provider: str
    model: str
    api_base: str | None
    api_key: str | None
    timeout_s: float = ADMIN_TIMEOUT_S

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"custom_llm_provider": self.provider, "timeout": self.timeout_s}
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        return kwargs

    async def upload(self, name: str, data: bytes) -> str:
        """Upload a batch input file; its file id."""
        with litellm_session() as litellm:
            made = await litellm.acreate_file(file=(name, data), purpose="batch", **self._kwargs())
        return str(made.id)

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> Any:
        """Create the batch (no retry: a lost reply must not create a second one)."""
        with litellm_session() as litellm:
            return await litellm.acreate_batch(
                completion_window=COMPLETION_WINDOW,
                endpoint=ENDPOINT,
                input_file_id=input_file_id,
                metadata=metadata,
                max_retries=0,
                **self._kwargs(),
            )

    async def retrieve(self, batch_id: str) -> Any:
        # litellm prices a finished batch by downloading its output on every
        # retrieve unless told not to: tiap prices it from its own download.
        with litellm_session() as litellm:
            return await litellm.aretrieve_batch(
                batch_id=batch_id,
                litellm_metadata={"batch_ignore_default_logging": True},
                **self._kwargs(),
            )

    async def find(self, key: str | None, input_file_id: str | None) -> Any | None:
        """The batch made for a submission, looked for through every page of the
        provider's list: the one whose metadata carries the submission's key, or that
        was made from its input file; None when no page holds it. Raises when the
        list cannot be read to its end (then nobody knows)."""
        after: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            with litellm_session() as litellm:
                page = await litellm.alist_batches(after=after, limit=LIST_PAGE, **self._kwargs())
            data = list(getattr(page, "data", None) or [])
            for batch in data:
                if made_for(batch, key, input_file_id):
                    return batch
            last = str(getattr(data[-1], "id", "") or "") if data else ""
            if not getattr(page, "has_more", False):
                return None
            if not last or last in seen:
                raise BatchListError(f"the provider's batch list does not go on after {last!r}")
            seen.add(last)
            after = last
        raise BatchListError(f"the provider's batch list has more than {MAX_LIST_PAGES:,} pages")

    async def content(self, file_id: str) -> bytes:
        with litellm_session() as litellm:
            reply = await litellm.afile_content(file_id=file_id, **self._kwargs())
        return bytes(reply.content)

    async def cancel(self, batch_id: str) -> Any:
        with litellm_session() as litellm:
            return await litellm.acancel_batch(batch_id=batch_id, **self._kwargs())

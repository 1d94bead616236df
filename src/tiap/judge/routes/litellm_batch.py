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
litellm would send for a direct call (``litellm.utils.get_optional_params`` maps
the settings for the provider), so a result is parsed and stored exactly like a
direct call's reply: the same record, cut at the panel's ``max_reply_bytes``, the
same reason codes. The lines' format (results, errors, limits) is
:mod:`tiap.judge.batch_api`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiap.judge.batch_api import (
    COMPLETION_WINDOW,
    ENDPOINT,
    MAX_LIST_PAGES,
    BatchListError,
    limits_for,
    made_for,
)
from tiap.judge.routes.base import BatchLimits, BatchOffer, ProviderBatch
from tiap.judge.routes.litellm_core import litellm_module, litellm_session, response_record
from tiap.judge.routes.reply import bounded

if TYPE_CHECKING:
    from tiap.judge.panel import JudgeSpec

#: litellm providers whose batch API tiap uses (litellm's batch providers).
BATCH_PROVIDERS = frozenset(
    {"openai", "azure", "vertex_ai", "bedrock", "mistral", "hosted_vllm", "xai"}
)
#: seconds for one administrative request (an upload may be large).
ADMIN_TIMEOUT_S = 600.0
#: batches per page of the provider's list (OpenAI's most).
LIST_PAGE = 100


def provider_of(model: str, api_base: str | None) -> str:
    """The litellm provider of a model string (``openai`` for ``openai/NAME``)."""
    litellm = litellm_module()
    try:
        return str(litellm.get_llm_provider(model=model, api_base=api_base)[1])
    except Exception:  # litellm does not know it: it has no batch API for it either
        return model.split("/", 1)[0] if "/" in model else "unknown"


def offer(judge: JudgeSpec, api_key: str | None) -> BatchOffer:
    """The judge's provider batch API through litellm, or why it is called directly."""
    if not judge.batch:
        return BatchOffer(None, "batch = false in the panel: called directly")
    provider = provider_of(judge.model, judge.api_base)
    if provider not in BATCH_PROVIDERS:
        return BatchOffer(
            None, f"litellm has no batch API for provider '{provider}': called directly"
        )
    client = BatchClient(provider, judge.model, judge.api_base, api_key)
    return BatchOffer(client, f"through the {provider} batch API")


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


def _completion_shape(body: Mapping[str, Any]) -> bool:
    choices = body.get("choices")
    return (
        isinstance(choices, list)
        and bool(choices)
        and isinstance(choices[0], dict)
        and isinstance(choices[0].get("message"), dict)
    )


def reply_record(
    body: Mapping[str, Any], custom_id: str, *, max_reply_bytes: int
) -> dict[str, Any] | None:
    """The record litellm's route keeps for a batch line's chat completion (None
    when the body is not one), bounded the same way: a text past
    ``max_reply_bytes`` cut, and marked so."""
    if not _completion_shape(body):
        return None
    litellm = litellm_module()
    try:
        resp = litellm.ModelResponse(**{"id": f"batch-{custom_id[:16]}", **body})
    except Exception:
        return None
    return bounded(response_record(resp), max_reply_bytes)


@dataclass(frozen=True)
class BatchClient:
    """The files and batches endpoints of one judge's provider (litellm): a
    :class:`~tiap.judge.routes.base.BatchApi`."""

    provider: str
    model: str
    api_base: str | None
    api_key: str | None
    timeout_s: float = ADMIN_TIMEOUT_S

    @property
    def limits(self) -> BatchLimits:
        return limits_for(self.provider)

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"custom_llm_provider": self.provider, "timeout": self.timeout_s}
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        return kwargs

    def line(self, custom_id: str, request: Mapping[str, Any]) -> bytes:
        return batch_line(custom_id, request)

    def reply(
        self, body: Mapping[str, Any], custom_id: str, max_reply_bytes: int
    ) -> dict[str, Any] | None:
        return reply_record(body, custom_id, max_reply_bytes=max_reply_bytes)

    async def upload(self, name: str, data: bytes) -> str:
        """Upload a batch input file; its file id."""
        with litellm_session() as litellm:
            made = await litellm.acreate_file(file=(name, data), purpose="batch", **self._kwargs())
        return str(made.id)

    async def submit(self, input_file_id: str, metadata: dict[str, str]) -> ProviderBatch:
        """Create the batch (no retry: a lost reply must not create a second one)."""
        with litellm_session() as litellm:
            made: ProviderBatch = await litellm.acreate_batch(
                completion_window=COMPLETION_WINDOW,
                endpoint=ENDPOINT,
                input_file_id=input_file_id,
                metadata=metadata,
                max_retries=0,
                **self._kwargs(),
            )
        return made

    async def poll(self, batch_id: str) -> ProviderBatch:
        # litellm prices a finished batch by downloading its output on every
        # retrieve unless told not to: tiap prices it from its own download.
        with litellm_session() as litellm:
            batch: ProviderBatch = await litellm.aretrieve_batch(
                batch_id=batch_id,
                litellm_metadata={"batch_ignore_default_logging": True},
                **self._kwargs(),
            )
        return batch

    async def find(self, key: str | None, input_file_id: str | None) -> ProviderBatch | None:
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
                    found: ProviderBatch = batch
                    return found
            last = str(getattr(data[-1], "id", "") or "") if data else ""
            if not getattr(page, "has_more", False):
                return None
            if not last or last in seen:
                raise BatchListError(f"the provider's batch list does not go on after {last!r}")
            seen.add(last)
            after = last
        raise BatchListError(f"the provider's batch list has more than {MAX_LIST_PAGES:,} pages")

    async def ingest(self, file_id: str) -> bytes:
        with litellm_session() as litellm:
            reply = await litellm.afile_content(file_id=file_id, **self._kwargs())
        return bytes(reply.content)

    async def cancel(self, batch_id: str) -> ProviderBatch:
        with litellm_session() as litellm:
            cancelled: ProviderBatch = await litellm.acancel_batch(
                batch_id=batch_id, **self._kwargs()
            )
        return cancelled

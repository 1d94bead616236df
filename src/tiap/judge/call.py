"""One model call, on its judge's route, with tiap's retry policy.

:func:`call_model` makes one logical call: up to ``max_attempts`` attempts, each
with one deadline (``timeout_s``: connecting, sending, the reply's headers and
body), on the judge's route (:mod:`tiap.judge.panel`): the direct OpenAI-protocol
route (:mod:`tiap.judge.routes.openai_http`) or litellm
(:mod:`tiap.judge.routes.litellm_route`). Both send the same request, read the
reply into the same record, bound it the same way (``max_reply_bytes``) and fail
with the same exceptions' classification (:mod:`tiap.judge.failures`). Retries
are tiap's on both: only rate limits, server errors, timeouts and connection
errors, after the server's ``Retry-After`` (at most ``retry_after_max_s``) or an
exponential backoff with jitter (``backoff_initial_s * 2**(n-1)`` plus up to
``backoff_initial_s``, at most ``backoff_max_s``); litellm's and the SDK's own
retries are off.

:func:`call_session` is what a run opens around its calls: litellm set up for
tiap (:func:`litellm_session`) and the direct route's pooled HTTP clients.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tiap.judge.failures import Failure, classify, retry_after_s
from tiap.judge.panel import JudgeSpec, Panel, Route, judge_for
from tiap.judge.pricing import Price, cost_policy, judge_price
from tiap.judge.routes import litellm_route, openai_http
from tiap.judge.routes.litellm_route import (
    NO_LITELLM_CACHE,
    litellm_module,
    litellm_session,
    response_record,
)
from tiap.judge.routes.reply import Reply

__all__ = [
    "NO_LITELLM_CACHE",
    "CallOutcome",
    "call_model",
    "call_session",
    "litellm_module",
    "litellm_session",
    "response_record",
    "take_record",
]


@dataclass
class CallOutcome:
    """What one logical call (all its attempts) produced."""

    content: str | None = None
    response: dict[str, Any] | None = None
    failure: Failure | None = None
    attempts: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: the route the call took (``openai``: direct; ``litellm``).
    route: Route = "litellm"
    #: the reply was longer than ``max_reply_bytes``: ``content`` is its first part.
    truncated: bool = False
    #: the reply's full size in bytes when it was cut and the route read it all.
    reply_bytes: int | None = None
    #: a retry was not sent: ``before_retry`` said the call is no longer this
    #: run's (``failure`` is the last attempt's).
    abandoned: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None


def backoff_s(panel: Panel, attempt: int) -> float:
    """The wait after failed attempt ``attempt`` (1-based) without a Retry-After."""
    jitter = random.uniform(0.0, panel.backoff_initial_s)
    exponent = min(attempt - 1, 64)
    return min(panel.backoff_max_s, panel.backoff_initial_s * 2.0**exponent + jitter)


@lru_cache(maxsize=256)
def _pricing(model: str, cin: float | None, cout: float | None) -> tuple[bool, Price | None]:
    """(whether tiap gives litellm the judge's prices, the judge's price)."""
    judge = JudgeSpec(name="price", model=model, input_cost_per_mtok=cin, output_cost_per_mtok=cout)
    return bool(cost_policy(judge).litellm_kwargs), judge_price(judge)


def _direct_cost(judge: JudgeSpec, reply: Reply) -> float | None:
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


def _route(panel: Panel, kwargs: dict[str, Any], judge: JudgeSpec | None) -> Any:
    """The attempt function for this call's route, and the route's name."""
    if judge is None:
        judge = judge_for(panel, kwargs.get("model", ""), kwargs.get("api_base"))
    if judge is not None and judge.resolved_route == "openai":
        point = openai_http.endpoint(kwargs, judge)
        if point is not None:
            return judge, point
    return judge, None


async def call_model(
    panel: Panel,
    kwargs: dict[str, Any],
    *,
    api_key: str | None,
    secrets: Iterable[str],
    on_retry: Callable[[Failure, float], None] | None = None,
    judge: JudgeSpec | None = None,
    before_retry: Callable[[], bool] | None = None,
) -> CallOutcome:
    """Call the model with retries; never raises for a failed call (see ``failure``).

    ``kwargs`` are litellm's (:func:`tiap.judge.request.litellm_kwargs`); the judge
    (for its route) is the panel's judge of that model and api_base unless given.
    ``before_retry`` is asked right before each attempt after the first (after its
    wait): False sends no more (the outcome is ``abandoned``)."""
    secrets = tuple(secrets)
    outcome = CallOutcome()
    start = time.perf_counter()
    judge, point = _route(panel, kwargs, judge)
    timeout_s, cap = panel.timeout_s, panel.max_reply_bytes

    async def once() -> Reply:
        if point is not None and judge is not None:
            return await openai_http.attempt(
                kwargs, point, judge, api_key=api_key, timeout_s=timeout_s, max_reply_bytes=cap
            )
        with litellm_session():
            return await litellm_route.attempt(
                kwargs, api_key=api_key, timeout_s=timeout_s, max_reply_bytes=cap
            )

    reply: Reply | None = None
    while reply is None:
        outcome.attempts += 1
        try:
            reply = await once()
            break
        except Exception as exc:  # classified; CancelledError and KeyboardInterrupt pass
            failure = classify(exc, secrets)
            after = retry_after_s(exc) if failure.retryable else None
        if not failure.retryable or outcome.attempts >= panel.max_attempts:
            outcome.failure = failure
            break
        sleep = min(after, panel.retry_after_max_s) if after is not None else None
        sleep = backoff_s(panel, outcome.attempts) if sleep is None else sleep
        if on_retry is not None:
            on_retry(failure, sleep)
        await asyncio.sleep(sleep)
        if before_retry is not None and not before_retry():
            outcome.failure, outcome.abandoned = failure, True
            break
    outcome.latency_ms = (time.perf_counter() - start) * 1000.0
    outcome.route = "openai" if point is not None else "litellm"
    if reply is None:
        return outcome
    take_record(outcome, reply.record)
    if point is not None and judge is not None:
        outcome.cost_usd = _direct_cost(judge, reply)
    else:
        outcome.cost_usd = reply.cost_usd
    return outcome


def take_record(outcome: CallOutcome, record: dict[str, Any]) -> CallOutcome:
    """``outcome`` with what a reply's record (:mod:`tiap.judge.routes.reply`, already
    bounded) says: the stored response, its text, whether it was cut, its tokens. The
    same for a direct call on either route and a provider batch's line."""
    outcome.response = record
    content = record.get("content")
    outcome.content = content if isinstance(content, str) else None
    outcome.truncated = bool(record.get("truncated"))
    size = record.get("reply_bytes")
    outcome.reply_bytes = size if isinstance(size, int) else None
    usage = record.get("usage") or {}
    outcome.input_tokens = usage.get("prompt_tokens")
    outcome.output_tokens = usage.get("completion_tokens")
    return outcome


@asynccontextmanager
async def call_session() -> AsyncIterator[None]:
    """Around a run's calls: litellm set up for tiap and the direct route's pooled
    HTTP clients (closed at the end)."""
    with litellm_session():
        async with openai_http.http_clients():
            yield

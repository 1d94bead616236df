"""One model call, on its judge's route, with tiap's retry policy.

:func:`call_model` makes one logical call: up to ``max_attempts`` attempts, each
with one deadline (``timeout_s``: connecting, sending, the reply's headers and
body), on the judge's route (:mod:`tiap.judge.routes`: the direct OpenAI-protocol
route, litellm, or the in-process offline judges). Every route sends the same
request, reads the reply into the same record, bounds it the same way
(``max_reply_bytes``) and fails with the same exceptions' classification
(:mod:`tiap.judge.failures`). Retries are tiap's on every route, a tenacity
policy (:mod:`tiap.judge.retry`): only rate limits, server errors, timeouts and
connection errors, after the server's ``Retry-After`` (at most
``retry_after_max_s``) or an exponential backoff with jitter; litellm's and the
SDK's own retries are off.

:func:`call_session` is what a run opens around its calls: each route's session
(the direct route's pooled HTTP clients, litellm set up for tiap).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tiap.judge.failures import Failure, classify
from tiap.judge.panel import JudgeSpec, Panel, judge_for
from tiap.judge.retry import GivenUp, RetryPolicy
from tiap.judge.routes import Attempt, JudgeRoute, get_route, route_for
from tiap.judge.routes.reply import Reply

if TYPE_CHECKING:
    from tiap.judge.pricing import Price

__all__ = ["CallOutcome", "call_model", "call_session", "take_record"]


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
    #: the name of the route the call took (``openai``: direct; ``litellm``; ...).
    route: str = "litellm"
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

    def cost(self, price: Price | None) -> float | None:
        """What the call cost: the route's own figure (``cost_usd``), else ``price``
        times its tokens; None when neither is known."""
        if self.cost_usd is not None:
            return self.cost_usd
        if price is None or self.input_tokens is None or self.output_tokens is None:
            return None
        return price.cost(self.input_tokens, self.output_tokens)


def _judge(panel: Panel, kwargs: dict[str, Any], judge: JudgeSpec | None) -> JudgeSpec:
    """The judge a call is for: given, else the panel's judge of its model and
    api_base, else one made for it (on the route its model takes by default)."""
    if judge is None:
        judge = judge_for(panel, kwargs.get("model", ""), kwargs.get("api_base"))
    if judge is None:
        judge = JudgeSpec(
            name="call", model=str(kwargs.get("model")), api_base=kwargs.get("api_base")
        )
    return judge


async def call_model(
    panel: Panel,
    kwargs: dict[str, Any],
    *,
    api_key: str | None,
    secrets: Iterable[str],
    on_retry: Callable[[Failure, float], None] | None = None,
    judge: JudgeSpec | None = None,
    before_retry: Callable[[], bool] | None = None,
    deadline_s: float | None = None,
    route: JudgeRoute | None = None,
    messages_json: bytes | None = None,
) -> CallOutcome:
    """Call the model with retries; never raises for a failed call (see ``failure``).

    ``kwargs`` are litellm's (:func:`tiap.judge.request.litellm_kwargs`); the judge
    (for its route) is the panel's judge of that model and api_base unless given,
    its route the judge's unless given. ``before_retry`` is asked right before
    each attempt after the first (after its wait): False sends no more (the
    outcome is ``abandoned``). ``deadline_s``: no attempt starts that many seconds
    or more after the first one (none by default). ``messages_json``: the messages
    serialised as the openai SDK sends them, when the caller has them (see
    :class:`~tiap.judge.routes.Attempt`)."""
    secrets = tuple(secrets)
    judge = _judge(panel, kwargs, judge)
    route = route_for(judge) if route is None else route
    attempt = Attempt(judge, kwargs, api_key, panel.timeout_s, panel.max_reply_bytes, messages_json)
    outcome = CallOutcome(route=route.name)
    start = time.perf_counter()
    policy = RetryPolicy.of(
        panel, secrets, on_retry=on_retry, before_retry=before_retry, deadline_s=deadline_s
    )

    async def attempt_once() -> Reply:
        outcome.attempts += 1
        return await route.call(attempt)

    reply: Reply | None = None
    try:
        reply = await policy.call(attempt_once)
    except GivenUp as given:
        outcome.failure, outcome.abandoned = given.failure, True
    except Exception as exc:  # classified by the policy; CancelledError and KeyboardInterrupt pass
        outcome.failure = policy.failure or classify(exc, secrets)
    outcome.latency_ms = (time.perf_counter() - start) * 1000.0
    if reply is not None:
        take_record(outcome, reply.record)
        outcome.cost_usd = reply.cost_usd
    return outcome


def take_record(outcome: CallOutcome, record: dict[str, Any]) -> CallOutcome:
    """``outcome`` with what a reply's record (:mod:`tiap.judge.routes.reply`, already
    bounded) says: the stored response, its text, whether it was cut, its tokens. The
    same for a direct call on any route and a provider batch's line."""
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
async def call_session(routes: Iterable[JudgeRoute] = ()) -> AsyncIterator[None]:
    """Around a run's calls: the session of each route it calls (by default the
    direct route's), closed at the end."""
    chosen = {r.name: r for r in routes} or {"openai": get_route("openai")}
    async with AsyncExitStack() as stack:
        for route in chosen.values():
            await stack.enter_async_context(route.session())
        yield

"""One model call through litellm, with tiap's retry policy.

litellm is imported here, lazily, the first time a model is called (never by
``tiap --help``, ``--dry-run`` or a re-run answered from the cache), with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first unless the user set it. litellm
is called with ``max_retries=0`` and its own cache off; retries are done here
with tenacity: exponential backoff with jitter, ``Retry-After`` honoured, and
only for rate limits, server errors, timeouts and connection errors.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from tiap.judge.failures import Failure, classify, retry_after_s
from tiap.judge.panel import Panel


@cache
def litellm_module() -> Any:
    """litellm, imported and set up once per process."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import logging

    import litellm

    from tiap.judge import offline

    # litellm's own warnings (e.g. its logging worker changing event loop) are noise
    # here: tiap reports every failure itself, with secrets scrubbed.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.cache = None
    offline.register(litellm)
    # litellm's import leaves some 400,000 long-lived objects: frozen, the cyclic
    # GC no longer walks them all on every full collection (these were about 1 ms
    # of CPU per call with 150 calls in flight). Reference counting still frees them.
    gc.freeze()
    return litellm


#: the cyclic GC's first threshold while calls are made (Python's default: 700).
CALLS_GC_THRESHOLD = 20_000


@contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Run the cyclic GC less often while calls are in flight.

    Each litellm call allocates thousands of container objects, many alive for
    the whole call; with a hundred calls in flight the default thresholds make the
    collector walk the same young objects again and again (about a tenth of the
    CPU of a call in ``benchmarks/judge_throughput.py``). Memory is still freed by
    reference counting; the previous thresholds are restored on exit.
    """
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], CALLS_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


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

    @property
    def ok(self) -> bool:
        return self.failure is None


def _message_field(message: Any, name: str) -> Any:
    value = getattr(message, name, None)
    if value is None and isinstance(message, dict):
        value = message.get(name)
    return value


def response_record(resp: Any) -> dict[str, Any]:
    """The part of a litellm response tiap stores (and answers re-runs from)."""
    choice = resp.choices[0] if getattr(resp, "choices", None) else None
    message = getattr(choice, "message", None)
    content = _message_field(message, "content")
    usage = getattr(resp, "usage", None)
    record: dict[str, Any] = {
        "id": getattr(resp, "id", None),
        "model": getattr(resp, "model", None),
        "content": content if isinstance(content, str) else None,
        "finish_reason": getattr(choice, "finish_reason", None),
        "usage": {
            "prompt_tokens": getattr(usage, "prompt_tokens", None),
            "completion_tokens": getattr(usage, "completion_tokens", None),
        },
    }
    refusal = _message_field(message, "refusal")
    if isinstance(refusal, str) and refusal:
        record["refusal"] = refusal
    return record


def _wait(panel: Panel) -> Callable[[Any], float]:
    """Tenacity wait: the server's Retry-After when given, else exponential + jitter."""
    from tenacity import wait_exponential_jitter

    backoff = wait_exponential_jitter(
        multiplier=panel.backoff_initial_s, max=panel.backoff_max_s, jitter=panel.backoff_initial_s
    )

    def wait(retry_state: Any) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        after = retry_after_s(exc) if exc is not None else None
        if after is not None:
            return min(after, panel.retry_after_max_s)
        return float(backoff(retry_state))

    return wait


async def call_model(
    panel: Panel,
    kwargs: dict[str, Any],
    *,
    api_key: str | None,
    secrets: Iterable[str],
    on_retry: Callable[[Failure, float], None] | None = None,
) -> CallOutcome:
    """Call the model with retries; never raises for a failed call (see ``failure``)."""
    from tenacity import AsyncRetrying, RetryError, retry_if_exception, stop_after_attempt

    litellm = litellm_module()
    secrets = tuple(secrets)
    call_kwargs = dict(kwargs)
    if api_key is not None:
        call_kwargs["api_key"] = api_key
    outcome = CallOutcome()

    def retryable(exc: BaseException) -> bool:
        return classify(exc, secrets).retryable

    def before_sleep(retry_state: Any) -> None:
        if on_retry is not None and retry_state.outcome is not None:
            exc = retry_state.outcome.exception()
            sleep = retry_state.next_action.sleep if retry_state.next_action else 0.0
            on_retry(classify(exc, secrets), float(sleep))

    retrying = AsyncRetrying(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(panel.max_attempts),
        wait=_wait(panel),
        before_sleep=before_sleep,
        reraise=True,
    )
    start = time.perf_counter()
    try:
        async for attempt in retrying:
            with attempt:
                outcome.attempts += 1
                resp = await litellm.acompletion(**call_kwargs)
    except RetryError as exc:  # pragma: no cover - reraise=True re-raises the last error
        outcome.failure = classify(exc.last_attempt.exception() or exc, secrets)
    except Exception as exc:
        outcome.failure = classify(exc, secrets)
    outcome.latency_ms = (time.perf_counter() - start) * 1000.0
    if outcome.failure is not None:
        return outcome
    record = response_record(resp)
    outcome.response = record
    outcome.content = record["content"]
    outcome.input_tokens = record["usage"]["prompt_tokens"]
    outcome.output_tokens = record["usage"]["completion_tokens"]
    hidden = getattr(resp, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    outcome.cost_usd = float(cost) if isinstance(cost, int | float) else None
    return outcome

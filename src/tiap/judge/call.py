"""One model call through litellm, with tiap's retry policy.

litellm is imported here, lazily, the first time a model is called (never by
``tiap --help``, ``--dry-run`` or a re-run answered from the cache). Set
``LITELLM_LOCAL_MODEL_COST_MAP=True`` in the environment before that (the
``tiap`` command does) or litellm fetches its model-cost map from the network
at import. litellm is called with ``max_retries=0`` and its own cache off (per
call); retries are done here with tenacity: exponential backoff with jitter,
``Retry-After`` honoured, and only for rate limits, server errors, timeouts and
connection errors.

What litellm needs from its globals for tiap's calls (tiap's offline provider
registered, its debug prints off, its logger quiet) is set only while calls run,
by :func:`litellm_session`, and restored afterwards: a caller's litellm set-up
is as it was once tiap is done.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from tiap import runtime
from tiap.judge.failures import Failure, classify, retry_after_s
from tiap.judge.panel import Panel

#: per-call options that keep litellm's own cache out of every call (tiap has its own).
NO_LITELLM_CACHE: dict[str, Any] = {"caching": False, "cache": {"no-cache": True, "no-store": True}}


#: litellm's tokenizer module: its import sets ``TIKTOKEN_CACHE_DIR`` in the environment.
_TOKENIZER_MODULE = "litellm.litellm_core_utils.default_encoding"
_import_lock = threading.Lock()


def litellm_module() -> Any:
    """litellm, imported on first use. Inside :func:`tiap.runtime.tuned` the
    objects its import leaves are frozen out of the cyclic GC (see there)."""
    import litellm

    _load_tokenizer()
    runtime.long_lived("litellm")
    return litellm


def _load_tokenizer() -> None:
    """Load litellm's default tokenizer now, as it would on its first call, and put
    back the environment variable its import sets (``TIKTOKEN_CACHE_DIR``): litellm
    needs it only while that import reads the tokenizer file it ships."""
    with _import_lock:
        if _TOKENIZER_MODULE in sys.modules:
            return
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        try:
            importlib.import_module(_TOKENIZER_MODULE)
        finally:
            if before is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before


class _Session:
    """How many :func:`litellm_session` blocks are open, and what they replaced."""

    lock = threading.Lock()
    depth = 0
    stack: ExitStack | None = None


@contextmanager
def _quiet(litellm: Any) -> Iterator[None]:
    # litellm's own warnings (e.g. its logging worker changing event loop) are noise
    # here: tiap reports every failure itself, with secrets scrubbed. Its debug
    # prints on every exception go to stdout.
    logger = logging.getLogger("LiteLLM")
    level, suppress = logger.level, litellm.suppress_debug_info
    logger.setLevel(logging.ERROR)
    litellm.suppress_debug_info = True
    try:
        yield
    finally:
        litellm.suppress_debug_info = suppress
        logger.setLevel(level)


@contextmanager
def litellm_session() -> Iterator[Any]:
    """litellm, set up for tiap's calls while the block runs: the offline judges'
    provider registered, debug prints suppressed, its logger at ERROR. Blocks
    nest (also across threads); the outermost one restores what it changed."""
    from tiap.judge import offline

    litellm = litellm_module()
    with _Session.lock:
        if _Session.depth == 0:
            stack = ExitStack()
            stack.enter_context(_quiet(litellm))
            stack.enter_context(offline.registered(litellm))
            _Session.stack = stack
        _Session.depth += 1
    try:
        yield litellm
    finally:
        with _Session.lock:
            _Session.depth -= 1
            if _Session.depth == 0 and _Session.stack is not None:
                stack, _Session.stack = _Session.stack, None
                stack.close()


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

    secrets = tuple(secrets)
    call_kwargs = dict(kwargs)
    call_kwargs.update(NO_LITELLM_CACHE)
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
    with litellm_session() as litellm:
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

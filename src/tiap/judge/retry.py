"""tiap's retry policy for one model call, as a tenacity ``AsyncRetrying``.

- **Stop** after the panel's ``max_attempts`` (the first attempt included), or
  before an attempt that would start past the call's deadline, when it has one
  (``deadline_s`` after the first attempt started).
- **Retry** only the failure classes :func:`tiap.judge.failures.classify` calls
  retryable: rate limits, server errors, timeouts and connection errors. Anything
  else (a 400, an authentication error, ...) ends the call at once.
- **Wait** what the server asked for (``Retry-After`` / ``retry-after-ms``), at
  most ``retry_after_max_s``; without one, an exponential backoff with jitter:
  ``backoff_initial_s * 2**(n-1)`` plus up to ``backoff_initial_s``, at most
  ``backoff_max_s``, after failed attempt ``n``.
- **Before a retry** is sent (after its wait) the caller may give the call up
  (``before_retry`` returns False: the call is no longer this run's): no further
  attempt is made. Each attempt calls :meth:`RetryPolicy.check` first.

Each attempt has its own deadline (``timeout_s``) on its route; litellm's and the
openai SDK's own retries are off, so this policy is the only one.

:meth:`RetryPolicy.call` makes a call under the policy. Tenacity's first step is
always the first attempt (there is nothing to decide before it), so that attempt
is made directly and tenacity takes over from its outcome, only when it failed: a
call answered at once costs nothing of the policy's machinery (its objects, its
per-step callbacks), and one that fails goes through the same decisions as under
``async for attempt in policy.retrying()``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    DoAttempt,
    DoSleep,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from tiap.judge.failures import Failure, classify, retry_after_s
from tiap.judge.panel import Panel

__all__ = ["GivenUp", "RetryAfterOrBackoff", "RetryPolicy", "backoff"]

T = TypeVar("T")


class GivenUp(Exception):
    """A retry was not sent: the caller gave the call up before it (``failure``
    is the last attempt's)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def backoff(panel: Panel) -> wait_exponential_jitter:
    """The wait after a failed attempt without a ``Retry-After``."""
    return wait_exponential_jitter(
        multiplier=panel.backoff_initial_s,
        max=panel.backoff_max_s,
        exp_base=2,
        jitter=panel.backoff_initial_s,
    )


class RetryAfterOrBackoff(wait_base):
    """The server's ``Retry-After`` (at most ``cap`` seconds), else ``fallback``."""

    def __init__(self, cap: float, fallback: wait_base) -> None:
        self.cap = cap
        self.fallback = fallback

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        after = retry_after_s(exc) if exc is not None else None
        if after is not None:
            return min(after, self.cap)
        return float(self.fallback(retry_state))


@dataclass
class RetryPolicy:
    """The retry policy of one logical call (see the module docstring).

    ``on_retry(failure, wait_s)`` is told of each retry before its wait;
    ``before_retry()`` is asked right before each attempt after the first.
    """

    panel: Panel
    secrets: tuple[str, ...] = ()
    on_retry: Callable[[Failure, float], None] | None = None
    before_retry: Callable[[], bool] | None = None
    deadline_s: float | None = None
    #: the last failure classified (the call's, when it ends in one)
    failure: Failure | None = field(default=None, init=False)

    @classmethod
    def of(
        cls,
        panel: Panel,
        secrets: Iterable[str] = (),
        *,
        on_retry: Callable[[Failure, float], None] | None = None,
        before_retry: Callable[[], bool] | None = None,
        deadline_s: float | None = None,
    ) -> RetryPolicy:
        return cls(panel, tuple(secrets), on_retry, before_retry, deadline_s)

    def _retryable(self, exc: BaseException) -> bool:
        if not isinstance(exc, Exception) or isinstance(exc, GivenUp):
            return False  # cancelled, interrupted, given up: never retried
        self.failure = classify(exc, self.secrets)
        return self.failure.retryable

    def _before_sleep(self, retry_state: RetryCallState) -> None:
        if self.on_retry is not None and self.failure is not None:
            self.on_retry(self.failure, retry_state.upcoming_sleep)

    def check(self, attempt_number: int) -> None:
        """Right before attempt ``attempt_number`` is sent (inside it, so the first
        costs nothing): a retry the caller gives up raises :class:`GivenUp`, which
        is never retried."""
        if attempt_number == 1 or self.before_retry is None or self.failure is None:
            return
        if not self.before_retry():
            raise GivenUp(self.failure)

    def _stop(self) -> stop_base:
        stop: stop_base = stop_after_attempt(self.panel.max_attempts)
        if self.deadline_s is not None:
            stop = stop | stop_before_delay(self.deadline_s)
        return stop

    def retrying(self) -> AsyncRetrying:
        """A fresh ``AsyncRetrying`` for one call (it re-raises the last exception)."""
        return AsyncRetrying(
            stop=self._stop(),
            wait=RetryAfterOrBackoff(self.panel.retry_after_max_s, backoff(self.panel)),
            retry=retry_if_exception(self._retryable),
            before_sleep=self._before_sleep,
            sleep=asyncio.sleep,
            reraise=True,
        )

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` under the policy (see the module docstring): its result,
        or the last failure raised (:class:`GivenUp` when a retry was given up)."""
        start = time.monotonic()
        try:
            return await attempt()
        except Exception:  # cancelled, interrupted: never retried (raised as is)
            first = sys.exc_info()
        retrying = self.retrying()
        retrying.begin()
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.start_time = start  # the call's deadline counts from its first attempt
        state.set_exception(first)  # type: ignore[arg-type]
        while True:
            do = await retrying.iter(retry_state=state)
            if isinstance(do, DoSleep):
                state.prepare_for_next_attempt()
                await asyncio.sleep(do)  # the policy's sleep (see retrying())
            elif not isinstance(do, DoAttempt):
                return do
            else:
                try:
                    self.check(state.attempt_number)
                    result = await attempt()
                except BaseException:
                    state.set_exception(sys.exc_info())  # type: ignore[arg-type]
                else:
                    state.set_result(result)

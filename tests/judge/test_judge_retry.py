"""The retry policy (tenacity) on its own: which failures are retried, how long it
waits (Retry-After, capped; else exponential backoff with jitter), when it stops
(attempts, deadline) and how a retry is given up."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from tiap.judge.failures import ProviderStatusError
from tiap.judge.panel import JudgeSpec, Panel
from tiap.judge.retry import GivenUp, RetryPolicy, backoff
from tiap.rubric import Reason


def panel(**settings: float) -> Panel:
    values = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "max_attempts": 4, **settings}
    return Panel(name="p", judges=[JudgeSpec(name="a", model="openai/m")], **values)


class Flaky:
    """Fails with ``errors`` in order, then returns "ok"; records when it ran."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.times: list[float] = []

    async def __call__(self) -> str:
        self.times.append(time.monotonic())
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


async def by_retrying(policy: RetryPolicy, fn: Flaky) -> str:
    async for attempt in policy.retrying():
        with attempt:
            policy.check(attempt.retry_state.attempt_number)
            return await fn()
    raise AssertionError("not reached")


async def by_call(policy: RetryPolicy, fn: Flaky) -> str:
    return await policy.call(fn)


Run = Callable[[RetryPolicy, Flaky], Awaitable[str]]


@pytest.fixture(params=[by_retrying, by_call], ids=["retrying", "call"])
def run(request: pytest.FixtureRequest) -> Run:
    """The policy driven as tenacity's loop, and through :meth:`RetryPolicy.call`
    (its first attempt made directly): the same decisions either way."""
    return request.param  # type: ignore[no-any-return]


def status(code: int, retry_after: str | None = None) -> ProviderStatusError:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    return ProviderStatusError(code, f"HTTP {code}", headers)


def test_retryable_failures_are_retried_with_the_server_s_wait_then_succeed(run: Run) -> None:
    waits: list[tuple[str, float]] = []
    policy = RetryPolicy.of(panel(), on_retry=lambda f, s: waits.append((f.reason.value, s)))
    fn = Flaky(status(429, "0.2"), status(503), TimeoutError())
    assert asyncio.run(run(policy, fn)) == "ok"
    assert [r for r, _ in waits] == ["rate_limited", "server_error", "timeout"]
    assert waits[0][1] == pytest.approx(0.2)  # the server's Retry-After
    assert fn.times[1] - fn.times[0] >= 0.19
    # without one: multiplier 0.01 * 2**(n-1) plus up to 0.01 of jitter, at most 0.05
    assert 0.02 <= waits[1][1] <= 0.03
    assert 0.04 <= waits[2][1] <= 0.05


def test_a_retry_after_past_the_cap_is_cut_to_it(run: Run) -> None:
    waits: list[float] = []
    policy = RetryPolicy.of(panel(retry_after_max_s=0.1), on_retry=lambda f, s: waits.append(s))
    asyncio.run(run(policy, Flaky(status(429, "3600"))))
    assert waits == [0.1]


def test_other_failures_end_the_call_at_once(run: Run) -> None:
    for error, reason in ((status(400), Reason.BAD_REQUEST), (status(401), Reason.AUTH_ERROR)):
        policy = RetryPolicy.of(panel())
        fn = Flaky(error)
        with pytest.raises(ProviderStatusError):
            asyncio.run(run(policy, fn))
        assert len(fn.times) == 1
        assert policy.failure is not None
        assert policy.failure.reason is reason


def test_it_stops_after_max_attempts_with_the_last_failure(run: Run) -> None:
    policy = RetryPolicy.of(panel(max_attempts=3))
    fn = Flaky(*[status(500)] * 5)
    with pytest.raises(ProviderStatusError):
        asyncio.run(run(policy, fn))
    assert len(fn.times) == 3
    assert policy.failure is not None
    assert policy.failure.reason is Reason.SERVER_ERROR


def test_no_attempt_starts_past_the_deadline(run: Run) -> None:
    policy = RetryPolicy.of(panel(max_attempts=10, retry_after_max_s=1.0), deadline_s=0.5)
    fn = Flaky(*[status(429, "0.2")] * 10)
    with pytest.raises(ProviderStatusError):
        asyncio.run(run(policy, fn))
    assert len(fn.times) == 3  # at 0, 0.2 and 0.4 s; the next would start at 0.6 s
    assert fn.times[-1] - fn.times[0] < 0.5


def test_a_retry_the_caller_gives_up_is_not_sent(run: Run) -> None:
    asked: list[int] = []

    def still_ours() -> bool:
        asked.append(1)
        return len(asked) < 2

    policy = RetryPolicy.of(panel(), before_retry=still_ours)
    fn = Flaky(status(500), status(500), status(500))
    with pytest.raises(GivenUp) as given:
        asyncio.run(run(policy, fn))
    assert len(fn.times) == 2  # the first attempt, and one retry: the second was given up
    assert asked == [1, 1]
    assert given.value.failure.reason is Reason.SERVER_ERROR


def test_cancellation_is_never_retried(run: Run) -> None:
    policy = RetryPolicy.of(panel())
    fn = Flaky(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run(policy, fn))
    assert len(fn.times) == 1


def test_the_backoff_is_tenacity_s_exponential_jitter_without_deprecated_arguments() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wait = backoff(panel(backoff_initial_s=1.0, backoff_max_s=60.0))
    assert (wait.multiplier, wait.jitter, wait.max, wait.exp_base) == (1.0, 1.0, 60.0, 2)

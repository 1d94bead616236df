"""Concurrency that adapts: a judge's calls in flight halve on a rate limit and grow
back after a run of successes, against a server that refuses what is over its limit."""

from __future__ import annotations

import asyncio
from typing import Any

from judge_support import rows

from support.loopback import Behaviour, LoopbackServer, SeenRequest, status
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.judge.limiter import AdaptiveLimit
from tiap.rubric import load_rubric


class RateLimitedServer(LoopbackServer):
    """Answers 429 (Retry-After) to any request over ``limit`` at once."""

    def __init__(self, limit: int, retry_after: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.limit = limit
        self.retry_after = retry_after
        self.refused = 0
        self.served_at_once = 0

    async def _respond(self, request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
        with self._lock:
            over = self.in_flight > self.limit
            if over:
                self.refused += 1
            else:
                self.served_at_once = max(self.served_at_once, self.in_flight)
        if over:
            return await super()._respond(request, seen, status(429, retry_after=self.retry_after))
        return await super()._respond(request, seen, behaviour)


def test_limit_halves_once_per_push_and_grows_after_a_window_of_successes() -> None:
    async def scenario() -> None:
        limit = AdaptiveLimit(8)
        epochs = [await limit.acquire() for _ in range(8)]
        assert limit.in_flight == 8
        assert set(epochs) == {0}
        # every call in flight sees the same push: the limit halves once
        assert limit.rate_limited(epochs[0]) is True
        assert [limit.rate_limited(e) for e in epochs[1:]] == [False] * 7
        assert (limit.limit, limit.epoch) == (4, 1)
        # a push seen by a call under the new limit halves it again, never below 1
        assert limit.rate_limited(1)
        assert limit.limit == 2
        assert limit.rate_limited(2)
        assert limit.limit == 1
        assert not limit.rate_limited(3)
        assert limit.limit == 1
        for _ in range(8):
            await limit.release()
        # a window of successes (as many as the limit) grows it by one, to the ceiling
        grown = []
        for _ in range(40):
            await limit.succeeded()
            grown.append(limit.limit)
        assert grown[:6] == [2, 2, 3, 3, 3, 4]
        assert max(grown) == 8
        assert grown[-1] == 8
        assert limit.lowest == 1
        # at the limit, the next call waits for a free slot
        for _ in range(8):
            await limit.acquire()
        waiting = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await limit.release()
        await asyncio.wait_for(waiting, 1)

    asyncio.run(scenario())


def test_a_rate_limited_judge_backs_off_and_completes(make_workspace, write_panel, key_env) -> None:
    n = 40
    db = make_workspace(n)
    with RateLimitedServer(limit=2, retry_after=0.05, delay_s=0.1) as server:
        panel = load_panel(write_panel(server.url, concurrency=8, max_attempts=30))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val")
        refused = server.refused
    (tally,) = summary.judges
    assert tally.valid == n
    assert rows(db, "SELECT COUNT(*) FROM labels WHERE label IS NOT NULL") == [(n,)]
    # the summary reports the 429s the provider sent, the concurrency the judge
    # ended at, and the time its calls waited before being retried
    assert tally.rate_limited == refused > 0
    assert tally.concurrency is not None
    # below the judge's ceiling of 8; how far it grew back after the last 429 depends
    # on how the calls were scheduled (a loaded machine leaves fewer in flight)
    assert 1 <= tally.concurrency < 8
    assert tally.retry_wait_s >= 0.05 * refused * 0.9
    # adapting keeps the 429s few: at 8 in flight all the time, 6 of every 8
    # requests would be refused again and again (many times n)
    assert refused < n

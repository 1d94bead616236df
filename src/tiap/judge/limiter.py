"""How many calls of one judge are in flight: adapted to what the provider takes.

The limit starts at the panel's ``concurrency`` for the judge. A rate limit
(HTTP 429) halves it, never below 1; after as many successes in a row as the
limit (a window's worth), it grows by one, up to the panel's ``concurrency``
again (additive increase, multiplicative decrease). A 429 of a call that
started before the last decrease does not halve it again: the calls in flight
when the provider pushed back all see the same push, and it is answered once
(a retried call's next attempt starts in the epoch current at its retry).
"""

from __future__ import annotations

import asyncio


class AdaptiveLimit:
    """An asyncio concurrency limit that follows the provider's rate limits."""

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError("a concurrency limit is at least 1")
        self.ceiling = ceiling
        self.limit = ceiling
        #: the smallest limit reached
        self.lowest = ceiling
        self.in_flight = 0
        #: bumped at every decrease; a call remembers the epoch it started in
        self.epoch = 0
        self._streak = 0
        self._changed = asyncio.Condition()

    async def acquire(self) -> int:
        """Wait for a free slot under the current limit; the epoch the call starts in."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self.epoch

    async def release(self) -> None:
        async with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def rate_limited(self, epoch: int) -> bool:
        """A call started in ``epoch`` was rate limited: halve the limit unless that
        was answered already. Returns whether the limit changed."""
        self._streak = 0
        if epoch != self.epoch or self.limit == 1:
            return False
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self.epoch += 1
        return True

    async def succeeded(self) -> None:
        """A call went through without a rate limit: after a window of them, grow by one."""
        self._streak += 1
        if self._streak >= self.limit and self.limit < self.ceiling:
            self._streak = 0
            async with self._changed:
                self.limit += 1
                self._changed.notify_all()

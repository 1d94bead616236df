"""One judge's direct calls: claimed in batches, checked again right before each
send, called with adaptive concurrency, each stored through the run's writer.

A judge works through its groups (pairs that send one request; one call each) on
the one path of :mod:`tiap.judge.work`: it claims (leases) the next batch of them
(:class:`~tiap.judge.claims.Claimer`), and calls the claimed ones at most
:class:`~tiap.judge.limiter.AdaptiveLimit` at a time; **right before each request
is sent** (each attempt) the group is checked again: a group whose lease ran out
and was taken over, or whose pairs another run labelled or answered meanwhile, is
not sent (see :mod:`tiap.judge.claims`). Without a budget the check only reads
(its leases held for at least one more attempt's deadline, no label since the
plan); otherwise, or when that read fails, the group is claimed again, alone, and
the first attempt's claim reserves the call's worst case in the budget. Each call
takes its judge's route (:mod:`tiap.judge.routes`) and is stored through the run's
writer (:mod:`tiap.cases.group_commit`): it counts as done, and its concurrency
slot is free again, once its group has committed.
Groups another run holds are tried once more after the judge's own work is done
(that run may have finished, or released them); what is still held then is left
to it. The judge stops when the budget takes no more and none of its calls is in
flight, or after a fatal (authentication, not-found) error.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any

from tiap.judge.call import CallOutcome
from tiap.judge.claims import CLAIM_MIN, LEASE_MARGIN_S, Claim
from tiap.judge.failures import Failure
from tiap.judge.plan import Group
from tiap.judge.work import JudgeWork, pairs_in

#: failures that mean the provider pushes back: the judge's concurrency halves.
PUSHBACK_STATUSES = frozenset({429, 503, 529})


class TaskSet:
    """Tasks in flight; the first failure is raised in the caller, once."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[None]] = set()

    def __bool__(self) -> bool:
        return bool(self.tasks)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self.tasks.add(asyncio.create_task(coro))

    def _collect(self, done: set[asyncio.Task[None]]) -> None:
        self.tasks -= done
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    def check(self) -> None:
        self._collect({t for t in self.tasks if t.done()})

    async def wait_one(self) -> None:
        if self.tasks:
            done, _ = await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
            self._collect(done)

    async def drain(self) -> None:
        while self.tasks:
            await self.wait_one()

    async def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks.clear()


def pushed_back(failure: Failure) -> bool:
    return failure.status in PUSHBACK_STATUSES or failure.reason == "rate_limited"


class DirectJudge:
    """Calls one judge's groups directly (see the module docstring)."""

    def __init__(self, work: JudgeWork, groups: Sequence[Group]) -> None:
        self.work = work
        self.ctx = work.ctx
        self.tally = work.tally
        self.claimer = work.claimer
        self.limiter = work.ctx.limit(work.jp)
        self.claim_size = max(CLAIM_MIN, 2 * work.jp.judge.concurrency)
        #: a send needs its leases for one more attempt's deadline, and a margin
        self.lease_needed_s = self.ctx.plan.panel.timeout_s + LEASE_MARGIN_S
        self.remaining: deque[Group] = deque(groups)
        self.queue: deque[Group] = deque()
        self.deferred: list[Group] = []
        self.reserved: dict[str, float] = {}
        self.unfunded = False
        self.retried = False
        self.stopped_by_budget = False

    # ----------------------------------------------------------------- claims

    async def _claim(self) -> None:
        """Lease the next batch of groups (the budget is checked at each send), in
        the run's writer (its thread waits for the workspace's lock, not the event
        loop), at once."""
        batch = [self.remaining.popleft() for _ in range(min(self.claim_size, len(self.remaining)))]
        if not batch:
            return
        claimer, worst = self.claimer, self.work.worst
        claim = await self.ctx.writer.write(
            lambda ws: claimer.claim(batch, worst, fund=False, ws=ws), calls=0, urgent=True
        )
        self.queue.extend(claim.claimed)
        self.deferred.extend(await self.work.take(claim))

    async def _confirm(self, group: Group) -> Group | None:
        """Check ``group`` again right before its request is sent: the group to send
        now (its lease held long enough, or renewed, and its worst case reserved
        when there is a budget), or None: another run took it over, labelled or
        answered it meanwhile, or it is in a provider batch (each sorted like a
        claim's), or the budget does not take it now (it goes back to the head of
        the queue)."""
        if self.ctx.ledger.max_cost is None and self.claimer.still_ours(group, self.lease_needed_s):
            return group
        claim = self.claimer.claim([group], self.work.worst)
        if claim.unfunded:
            self.queue.appendleft(claim.unfunded[0])
            self.unfunded = True
        self.reserved.update(claim.reserved)
        self.deferred.extend(await self.work.take(claim))
        return claim.claimed[0] if claim.claimed else None

    def _still_ours(self, group: Group, lost: list[Claim]) -> bool:
        """Before a retried attempt: whether ``group`` is still this run's (claimed
        again, its reservation kept); if not, the claim goes to ``lost``."""
        claim = self.claimer.claim([group], self.work.worst, fund=False)
        if claim.claimed:
            return True
        lost.append(claim)
        return False

    # ------------------------------------------------------------------ calls

    def _pushback(self, failure: Failure, epoch: int) -> None:
        if failure.status == 429 or failure.reason == "rate_limited":
            self.tally.rate_limited += 1
        if pushed_back(failure):
            self.limiter.rate_limited(epoch)

    async def _request(self, group: Group, epoch: int, lost: list[Claim]) -> CallOutcome:
        tally = self.tally
        pushed = False
        attempt_epoch = epoch

        def on_retry(failure: Failure, sleep: float) -> None:
            nonlocal pushed, attempt_epoch
            tally.retries += 1
            tally.retry_wait_s += sleep
            pushed = pushed or pushed_back(failure)
            self._pushback(failure, attempt_epoch)
            attempt_epoch = self.limiter.epoch  # the next attempt starts under the new limit

        outcome = await self.work.call(
            group, on_retry=on_retry, before_retry=lambda: self._still_ours(group, lost)
        )
        if outcome.failure is not None:
            self._pushback(outcome.failure, attempt_epoch)
        elif not pushed:
            await self.limiter.succeeded()
        return outcome

    async def _call(self, group: Group, epoch: int) -> None:
        """Call, store the result through the writer, and count it once its group
        has committed: only then is its slot free again, so the calls a crash can
        lose (in flight, or answered and not yet committed) are never more than the
        judge's concurrency."""
        lost: list[Claim] = []
        try:
            outcome = await self._request(group, epoch, lost)
            cost = self.work.cost(outcome)
            reserved = self.reserved.pop(group.request_hash, 0.0)
            done = await (await self.work.record(group, outcome, cost, reserved))
        finally:
            await self.limiter.release()
        for claim in lost:
            self.deferred.extend(await self.work.take(claim))
        # (a lost claim's pairs moved on as it was sorted)
        self.work.count_call(outcome, cost, done, 0 if outcome.abandoned else len(group.pairs))

    # -------------------------------------------------------------------- run

    async def _next(self, tasks: TaskSet) -> bool:
        """Start the next call, or wait; False when the judge's work is over."""
        if self.unfunded:  # the budget took no more just now
            if not tasks:
                self.stopped_by_budget = True
                return False
            await tasks.wait_one()  # a settled call may free some
            self.unfunded = False
            return True
        if not self.queue:
            await self._claim()
        if self.queue:
            await self._send_next(tasks)
            return True
        return bool(self.remaining) or await self._last_round(tasks)

    async def _send_next(self, tasks: TaskSet) -> None:
        epoch = await self.limiter.acquire()
        group = None
        if self.tally.error is None and self.queue:  # (a call may have failed fatally)
            group = await self._confirm(self.queue.popleft())
        if group is None:
            await self.limiter.release()
            return
        tasks.spawn(self._call(group, epoch))

    async def _last_round(self, tasks: TaskSet) -> bool:
        """Once everything is sent: wait for it; then try the held groups once more."""
        await tasks.drain()
        if self.deferred and not self.retried and self.tally.error is None:
            self.retried = True
            self.remaining.extend(self.deferred)
            self.deferred = []
            return True
        return False

    async def run(self) -> None:
        tasks = TaskSet()
        try:
            while self.tally.error is None:
                tasks.check()
                if not await self._next(tasks):
                    break
            await tasks.drain()
        finally:
            await tasks.cancel()
            self._finish()

    def _finish(self) -> None:
        tally = self.tally
        tally.held_elsewhere += pairs_in(self.deferred)
        tally.not_started += pairs_in(self.remaining) + pairs_in(self.queue)
        tally.concurrency = self.limiter.limit
        for group in self.queue:  # claimed, never called
            self.ctx.ledger.release(self.reserved.pop(group.request_hash, 0.0))

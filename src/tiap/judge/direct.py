"""One judge's direct calls: claimed in batches, checked again right before each
send, called with adaptive concurrency, each stored as soon as it returns.

A judge works through its groups (pairs that send one request; one call each):
it claims (leases) the next batch of them (:class:`~tiap.judge.claims.Claimer`),
and calls the claimed ones at most :class:`~tiap.judge.limiter.AdaptiveLimit` at
a time; right before each request is sent (each attempt) the group is claimed
again, alone: a group whose lease ran out and was taken over, or whose pairs
another run labelled or answered meanwhile, is not sent (see
:mod:`tiap.judge.claims`), and the first attempt's claim reserves the call's
worst case in the budget. Each call takes its judge's route
(:func:`tiap.judge.call.call_model`: direct OpenAI-protocol HTTP or litellm).
Groups another run holds are tried once more after the judge's own work is done
(that run may have finished, or released them); what is still held then is left
to it. The judge stops when the budget takes no more and none of its calls is in
flight, or after a fatal (authentication, not-found) error.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import LabelRecord, Workspace
from tiap.judge.call import CallOutcome, call_model
from tiap.judge.claims import CLAIM_MIN, Claim, Claimer, Ledger
from tiap.judge.failures import Failure
from tiap.judge.limiter import AdaptiveLimit
from tiap.judge.outcomes import Rater, Recorder, asks_json_only
from tiap.judge.plan import Group, JudgePlan, RunPlan
from tiap.judge.reporting import Reporter
from tiap.judge.request import full_request, litellm_kwargs
from tiap.judge.summary import BatchReport, JudgeTally

#: failures that mean the provider pushes back: the judge's concurrency halves.
PUSHBACK_STATUSES = frozenset({429, 503, 529})


@dataclass
class RunContext:
    """What every judge of one run shares."""

    ws: Workspace
    plan: RunPlan
    owner: str
    ledger: Ledger
    recorder: Recorder
    reporter: Reporter
    keys: dict[str, str | None]
    tallies: dict[str, JudgeTally]
    lease_s: float
    secrets: tuple[str, ...] = field(default=())
    #: the provider batches the run submitted or polled (``--batch``)
    batches: list[BatchReport] = field(default_factory=list)

    def rater(self, jp: JudgePlan) -> Rater:
        j = jp.judge
        return Rater(
            j.name,
            j.model,
            j.api_base,
            self.plan.panel.name,
            jp.settings_hash,
            structured=asks_json_only(jp.settings),
        )

    def claimer(self, jp: JudgePlan) -> Claimer:
        return Claimer(
            self.ws,
            self.owner,
            jp.judge.name,
            self.plan.rubric.content_hash,
            self.plan.label_epoch,
            self.ledger,
            self.lease_s,
        )

    def count(self, tally: JudgeTally, records: Sequence[LabelRecord]) -> None:
        for record in records:
            if record.label is None:
                tally.add_invalid(record.reason or "invalid")
            else:
                tally.valid += 1


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


def pairs_in(groups: Sequence[Group]) -> int:
    return sum(len(g.pairs) for g in groups)


class DirectJudge:
    """Calls one judge's groups directly (see the module docstring)."""

    def __init__(self, ctx: RunContext, jp: JudgePlan, groups: Sequence[Group]) -> None:
        self.ctx = ctx
        self.jp = jp
        self.tally = ctx.tallies[jp.judge.name]
        self.rater = ctx.rater(jp)
        self.claimer = ctx.claimer(jp)
        self.limiter = AdaptiveLimit(jp.judge.concurrency)
        self.claim_size = max(CLAIM_MIN, 2 * jp.judge.concurrency)
        self.remaining: deque[Group] = deque(groups)
        self.queue: deque[Group] = deque()
        self.deferred: list[Group] = []
        self.reserved: dict[str, float] = {}
        self.unfunded = False
        self.stopped_by_budget = False

    # ----------------------------------------------------------------- claims

    def _worst(self, group: Group) -> float:
        if self.jp.price is None:
            return 0.0
        return self.jp.price.cost(group.pairs[0].est_input_upper, self.ctx.plan.panel.max_tokens)

    def _claim(self) -> None:
        """Lease the next batch of groups (the budget is checked at each send)."""
        batch = [self.remaining.popleft() for _ in range(min(self.claim_size, len(self.remaining)))]
        if not batch:
            return
        claim = self.claimer.claim(batch, self._worst, fund=False)
        self.queue.extend(claim.claimed)
        self._sort(claim)

    def _confirm(self, group: Group) -> Group | None:
        """Claim ``group`` again right before its request is sent: the group to send
        now (its lease renewed, its worst case reserved), or None: another run took
        it over, labelled or answered it meanwhile, or it is in a provider batch
        (each sorted like a claim's), or the budget does not take it now (it goes
        back to the head of the queue)."""
        claim = self.claimer.claim([group], self._worst)
        if claim.unfunded:
            self.queue.appendleft(claim.unfunded[0])
            self.unfunded = True
        self.reserved.update(claim.reserved)
        self._sort(claim)
        return claim.claimed[0] if claim.claimed else None

    def _still_ours(self, group: Group, lost: list[Claim]) -> bool:
        """Before a retried attempt: whether ``group`` is still this run's (claimed
        again, its reservation kept); if not, the claim goes to ``lost``."""
        claim = self.claimer.claim([group], self._worst, fund=False)
        if claim.claimed:
            return True
        lost.append(claim)
        return False

    def _sort(self, claim: Claim) -> None:
        """What a claim found that is not this run's to call: held by another run
        (tried once more at the end), done or answered meanwhile, in a batch."""
        name = self.jp.judge.name
        self.deferred.extend(claim.held)
        self.tally.done_elsewhere += claim.done  # (batched pairs: counted at the end of the run)
        if claim.cached:
            stored = self.ctx.recorder.record_cached(
                self.rater,
                [(g.request_hash, g.case_ids, resp) for g, resp in claim.cached],
                self.ctx.plan.label_epoch,
            )
            self.tally.cache_hits += len(stored.labels)
            self.tally.done_elsewhere += stored.skipped
            self.ctx.count(self.tally, stored.labels)
        moved = claim.done + pairs_in(claim.batched) + pairs_in([g for g, _ in claim.cached])
        self.ctx.reporter.advance(name, moved)

    # ------------------------------------------------------------------ calls

    def _cost(self, outcome: CallOutcome) -> float | None:
        jp = self.jp
        if not jp.costs.known:
            return None
        if outcome.cost_usd is not None:
            return outcome.cost_usd
        if jp.price is None or outcome.input_tokens is None or outcome.output_tokens is None:
            return None
        return jp.price.cost(outcome.input_tokens, outcome.output_tokens)

    def _pushback(self, failure: Failure, epoch: int) -> None:
        if failure.status == 429 or failure.reason == "rate_limited":
            self.tally.rate_limited += 1
        if failure.status in PUSHBACK_STATUSES or failure.reason == "rate_limited":
            self.limiter.rate_limited(epoch)

    async def _request(self, group: Group, epoch: int, lost: list[Claim]) -> CallOutcome:
        jp, tally = self.jp, self.tally
        kwargs = litellm_kwargs(jp.settings, group.messages, self.ctx.plan.panel.timeout_s)
        kwargs.update(jp.costs.litellm_kwargs)
        pushed = False
        attempt_epoch = epoch

        def on_retry(failure: Failure, sleep: float) -> None:
            nonlocal pushed, attempt_epoch
            tally.retries += 1
            tally.retry_wait_s += sleep
            if failure.status in PUSHBACK_STATUSES or failure.reason == "rate_limited":
                pushed = True
            self._pushback(failure, attempt_epoch)
            attempt_epoch = self.limiter.epoch  # the next attempt starts under the new limit

        outcome = await call_model(
            self.ctx.plan.panel,
            kwargs,
            api_key=self.ctx.keys.get(jp.judge.name),
            secrets=self.ctx.secrets,
            on_retry=on_retry,
            judge=jp.judge,
            before_retry=lambda: self._still_ours(group, lost),
        )
        if outcome.failure is not None:
            self._pushback(outcome.failure, attempt_epoch)
        elif not pushed:
            await self.limiter.succeeded()
        return outcome

    async def _call(self, group: Group, epoch: int) -> None:
        try:
            await self._call_and_store(group, epoch)
        finally:
            await self.limiter.release()

    async def _call_and_store(self, group: Group, epoch: int) -> None:
        lost: list[Claim] = []
        outcome = await self._request(group, epoch, lost)
        tally = self.tally
        failure = outcome.failure
        if failure is not None and failure.fatal and tally.error is None:
            tally.error = f"{failure.reason}: {failure.message}"
        cost = self._cost(outcome)
        # a call given up before a retry (no longer this run's) is recorded, with
        # no label: its pairs are another run's now, or done
        stored = self.ctx.recorder.record(
            self.rater,
            request_hash=group.request_hash,
            request=full_request(self.jp.settings, group.messages),
            case_ids=[] if outcome.abandoned else group.case_ids,
            outcome=outcome,
            cost=cost,
            epoch=self.ctx.plan.label_epoch,
            reserved=self.reserved.pop(group.request_hash, 0.0),
        )
        for claim in lost:
            self._sort(claim)
        tally.calls += 1
        tally.input_tokens += outcome.input_tokens or 0
        tally.output_tokens += outcome.output_tokens or 0
        if cost is None:
            tally.cost_unknown += 1
        else:
            tally.cost_usd += cost
        tally.deduplicated += max(0, len(stored.labels) - 1)
        tally.done_elsewhere += stored.skipped
        self.ctx.count(tally, stored.labels)
        if not outcome.abandoned:  # (the lost claim's pairs moved on as it sorted them)
            self.ctx.reporter.advance(self.jp.judge.name, len(group.pairs))

    # -------------------------------------------------------------------- run

    async def run(self) -> None:
        tasks = TaskSet()
        retried = False
        try:
            while self.tally.error is None:
                tasks.check()
                if self.unfunded:  # the budget took no more just now
                    if tasks:
                        await tasks.wait_one()  # a settled call may free some
                        self.unfunded = False
                        continue
                    self.stopped_by_budget = True
                    break
                if not self.queue:
                    self._claim()
                if self.queue:
                    epoch = await self.limiter.acquire()
                    group = None
                    if self.tally.error is None:  # (a call in flight may have failed fatally)
                        group = self._confirm(self.queue.popleft())
                    if group is None:
                        await self.limiter.release()
                        continue
                    tasks.spawn(self._call(group, epoch))
                    continue
                if self.remaining:
                    continue
                await tasks.drain()
                if self.deferred and not retried and self.tally.error is None:
                    retried = True
                    self.remaining.extend(self.deferred)
                    self.deferred = []
                    continue
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

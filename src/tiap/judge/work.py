"""One claim -> call -> record path for every judge, on every route, in either mode.

Whatever a judge's route and mode (one call at a time, :mod:`tiap.judge.direct`, or
through its provider's batch API, :mod:`tiap.judge.batch_run`), its work goes
through one :class:`JudgeWork`:

1. **claim**: its groups are claimed (:class:`~tiap.judge.claims.Claimer`); what a
   claim finds that is not this run's to call is taken care of here
   (:meth:`JudgeWork.take`: done elsewhere, answered from the cache, held by
   another run, waiting in a batch);
2. **call**: on the judge's route (:meth:`JudgeWork.call`, with tiap's retries),
   or as a line of a provider batch;
3. **record**: through the run's one writer (:mod:`tiap.cases.group_commit`): the
   call's ``model_calls`` row and labels, its budget settlement and leases, in a
   group committed with others (:meth:`JudgeWork.record`); and counted, once its
   group has committed, in the judge's one tally (:meth:`JudgeWork.count_call`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.cases import LabelRecord, Workspace
from tiap.cases.group_commit import Batch, GroupWriter
from tiap.cases.rows import JsonTemplate
from tiap.judge.call import CallOutcome, call_model
from tiap.judge.claims import Claim, Claimer, Ledger
from tiap.judge.failures import Failure
from tiap.judge.limiter import AdaptiveLimit
from tiap.judge.outcomes import CallResult, Rater, Recorder, Stored, asks_json_only
from tiap.judge.plan import Group, JudgePlan, RunPlan
from tiap.judge.request import full_request, litellm_kwargs, messages_json
from tiap.judge.routes import JudgeRoute, route_for
from tiap.judge.summary import BatchReport, JudgeTally
from tiap.progress import Reporter

__all__ = ["JudgeWork", "RunContext", "pairs_in"]


def pairs_in(groups: Sequence[Group]) -> int:
    return sum(len(g.pairs) for g in groups)


@dataclass
class RunContext:
    """What every judge of one run shares."""

    ws: Workspace
    plan: RunPlan
    owner: str
    ledger: Ledger
    recorder: Recorder
    writer: GroupWriter
    reporter: Reporter
    keys: dict[str, str | None]
    tallies: dict[str, JudgeTally]
    lease_s: float
    secrets: tuple[str, ...] = field(default=())
    #: the provider batches the run submitted or polled (``--batch``)
    batches: list[BatchReport] = field(default_factory=list)
    #: each judge's adaptive concurrency, shared by its plans (a probe run has one
    #: per probe variant: together they keep to the judge's concurrency)
    limits: dict[str, AdaptiveLimit] = field(default_factory=dict)

    def limit(self, jp: JudgePlan) -> AdaptiveLimit:
        """The judge's one concurrency limit in this run."""
        name = jp.judge.name
        if name not in self.limits:
            self.limits[name] = AdaptiveLimit(jp.judge.concurrency)
        return self.limits[name]

    def rater(self, jp: JudgePlan) -> Rater:
        j = jp.judge
        return Rater(
            j.name,
            j.model,
            j.api_base,
            self.plan.panel.name,
            jp.settings_hash,
            structured=asks_json_only(jp.settings),
            probe=jp.probe,
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
            probe=jp.probe,
        )


class JudgeWork:
    """One judge's claim -> call -> record path (see the module docstring)."""

    def __init__(self, ctx: RunContext, jp: JudgePlan) -> None:
        self.ctx = ctx
        self.jp = jp
        self.name = jp.key
        self.tally = ctx.tallies[jp.key]
        self.rater = ctx.rater(jp)
        self.claimer = ctx.claimer(jp)
        self.route: JudgeRoute = route_for(jp.judge)
        #: the stored request's JSON around its messages, serialised once
        self.request_json = JsonTemplate(jp.settings, "messages")
        #: the stored JSON of the messages of calls made and not yet recorded
        self._stored_messages: dict[str, str] = {}

    # ----------------------------------------------------------------- claim

    def worst(self, group: Group) -> float:
        """A call's worst case at the judge's direct price (0 when unpriced)."""
        if self.jp.price is None:
            return 0.0
        return self.jp.price.cost(group.pairs[0].est_input_upper, self.ctx.plan.panel.max_tokens)

    async def take(self, claim: Claim) -> list[Group]:
        """What a claim found that is not this run's to call: pairs done elsewhere
        counted, groups answered meanwhile labelled from the cache, progress moved
        for them and for pairs in provider batches (counted when the run ends).
        Returns the groups another run holds."""
        self.tally.done_elsewhere += claim.done
        if claim.cached:
            await self.store_cached([(g.request_hash, g.case_ids, r) for g, r in claim.cached])
        moved = claim.done + pairs_in(claim.batched) + pairs_in([g for g, _ in claim.cached])
        self.ctx.reporter.advance(self.name, moved)
        return claim.held

    async def store_cached(self, answers: Sequence[tuple[str, list[str], dict[str, Any]]]) -> None:
        """Label pairs from stored responses (no call, nothing paid)."""
        recorder, rater, epoch = self.ctx.recorder, self.rater, self.ctx.plan.label_epoch
        stored = await self.ctx.writer.write(
            lambda ws: recorder.record_cached(ws, rater, answers, epoch), calls=0
        )
        self.tally.cache_hits += len(stored.labels)
        self.tally.done_elsewhere += stored.skipped
        self.count_labels(stored.labels)

    # ------------------------------------------------------------------ call

    async def call(
        self,
        group: Group,
        *,
        on_retry: Callable[[Failure, float], None] | None = None,
        before_retry: Callable[[], bool] | None = None,
    ) -> CallOutcome:
        """One logical call of ``group``'s request on the judge's route."""
        jp = self.jp
        kwargs = litellm_kwargs(jp.settings, group.messages, self.ctx.plan.panel.timeout_s)
        kwargs.update(jp.costs.litellm_kwargs)
        # the messages' texts encoded once, for the request sent and the one stored
        encoded = messages_json(group.messages)
        if encoded is not None:
            self._stored_messages[group.request_hash] = encoded.stored
        outcome = await call_model(
            self.ctx.plan.panel,
            kwargs,
            api_key=self.ctx.keys.get(jp.judge.name),
            secrets=self.ctx.secrets,
            on_retry=on_retry,
            judge=jp.judge,
            route=self.route,
            before_retry=before_retry,
            messages_json=None if encoded is None else encoded.wire,
        )
        self.note_failure(outcome)
        return outcome

    def note_failure(self, outcome: CallOutcome) -> None:
        """A fatal failure (authentication, not found) stops the judge: at once."""
        failure = outcome.failure
        if failure is not None and failure.fatal and self.tally.error is None:
            self.tally.error = f"{failure.reason}: {failure.message}"

    def cost(self, outcome: CallOutcome) -> float | None:
        """The route's figure, else the judge's price times the tokens (unknown: None)."""
        return outcome.cost(self.jp.price)

    # ---------------------------------------------------------------- record

    async def record(
        self, group: Group, outcome: CallOutcome, cost: float | None, reserved: float
    ) -> asyncio.Future[Stored]:
        """Queue a direct call's results with the run's writer (waiting for room
        there); the future is done when they are committed. A call given up before
        a retry (no longer this run's) is recorded with no label: its pairs are
        another run's now, or done."""
        result = CallResult(
            rater=self.rater,
            request_hash=group.request_hash,
            request=full_request(self.jp.settings, group.messages),
            case_ids=[] if outcome.abandoned else group.case_ids,
            outcome=outcome,
            cost=cost,
            epoch=self.ctx.plan.label_epoch,
            reserved=reserved,
            request_json=self.request_json.text(
                group.messages, self._stored_messages.pop(group.request_hash, None)
            ),
        )
        return await self.ctx.writer.enqueue(Batch(self.ctx.recorder.record_calls, result))

    def count_call(
        self, outcome: CallOutcome, cost: float | None, stored: Stored, pairs: int
    ) -> None:
        """THE tally of a recorded call, a direct one or a batch line (``pairs``:
        the pairs it moves on the progress display)."""
        tally = self.tally
        self.note_failure(outcome)
        tally.calls += 1
        tally.input_tokens += outcome.input_tokens or 0
        tally.output_tokens += outcome.output_tokens or 0
        if cost is None:
            tally.cost_unknown += 1
        else:
            tally.cost_usd += cost
        tally.deduplicated += max(0, len(stored.labels) - 1)
        tally.done_elsewhere += stored.skipped
        self.count_labels(stored.labels)
        if pairs:
            self.ctx.reporter.advance(self.name, pairs)

    def count_labels(self, records: Sequence[LabelRecord]) -> None:
        for record in records:
            if record.label is None:
                self.tally.add_invalid(record.reason or "invalid")
            else:
                self.tally.valid += 1

"""Answers written by a reader model (``tiap answers extract --reader MODEL``), through
the judges' call path: cached, resumable and budgeted like a judge run.

The prompt and settings are :mod:`tiap.judge.reader_prompt`'s. For each query of the
run, one request (its one user message, the reader's settings); requests are hashed
as judges' are (:func:`tiap.judge.request.request_hash`) and every call is stored in
the workspace's ``model_calls`` table, its request without the API key:

- **cached**: a request with a stored successful reply is answered from it, with no
  call and no cost; queries that send the same request share one call. A re-run of
  the same command (after Ctrl-C, a kill, a budget stop or a failure) calls only what
  has no stored reply; a call that failed in transport (after the retry policy's
  attempts) is stored as failed and asked again by the next run. Right before each
  request is sent, the store is looked at again: a run beside this one may have
  answered it meanwhile (runs beside each other take no leases: they may both ask a
  request neither had when it started, and both pay for it).
- **budgeted**: with ``max_cost``, right before each call its worst case (the prompt's
  upper token estimate plus ``max_tokens`` at the reader's price) is reserved in the
  workspace's budget ledger (:class:`tiap.judge.claims.Ledger`), shared with the
  reader runs of the same model whose times overlap; a stored call settles it with its
  cost. A call the budget does not take is not sent: the run stops once its calls in
  flight are stored, and the answers it has not got are left for the next run.
- **calls**: on the reader's route (:mod:`tiap.judge.routes`: the direct OpenAI-protocol
  route, or litellm, imported only when that route is taken), with the retry policy of
  :mod:`tiap.judge.retry` (rate limits, server errors, malformed replies, timeouts and
  connection errors; ``Retry-After`` honoured), at most ``concurrency`` at a time. An
  authentication or not-found failure stops the run (:attr:`ReaderRun.error`).

A reply is the query's answer after the routes' bounding, stripped of surrounding white
space. A reply cut at the reply limit (``reply_too_large``), a refusal (``refusal``),
an empty reply (``empty``) and a failed call (its reason: ``rate_limited``,
``server_error``, ...) give no answer: the run is then incomplete
(:attr:`ReaderRun.failures`). A refusal or empty reply is the model's reply to that
request: it is stored, and a re-run gets it again from the store.

:func:`plan_reader` finds what the store answers; :func:`read_answers` (a coroutine)
and :func:`run_reader` (from synchronous code) make the calls.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tiap import runtime
from tiap.cases import Workspace
from tiap.cases.store import now_iso
from tiap.errors import TiapError
from tiap.judge.call import CallOutcome, call_model, call_session
from tiap.judge.claims import Keeper, Ledger, lease_for, new_owner, reap_gone
from tiap.judge.failures import Failure
from tiap.judge.outcomes import model_call_row, scrub_response
from tiap.judge.panel import Panel
from tiap.judge.pricing import CostPolicy, Price, cost_policy, judge_price
from tiap.judge.reader_prompt import (
    READER_NAME,
    ReaderSettings,
    memory_line,
    reader_messages,
    reader_panel,
    reader_request_settings,
)
from tiap.judge.request import (
    canonical_json,
    estimate_tokens,
    full_request,
    litellm_kwargs,
    messages_json,
    request_hash,
)
from tiap.judge.routes import JudgeRoute, OnRouteLoad, announcing, route_for
from tiap.limits import check_cost, check_int
from tiap.progress import NoReporter, Reporter
from tiap.traces.bundle import Bundle
from tiap.traces.extractive import MAX_TOP, answerable_entries, top_memories
from tiap.traces.models import RunEntry

__all__ = ["ReaderPlan", "ReaderRun", "answer_of", "plan_reader", "read_answers", "run_reader"]

#: what a display calls a reader run
RUN_NAME = "reading"


@dataclass(frozen=True)
class Question:
    """One query's request to the reader."""

    query_id: str
    messages: list[dict[str, str]]
    request_hash: str
    est_input_upper: int


@dataclass
class ReaderPlan:
    """A reader run's requests, one per query of the run, and the stored replies that
    answer some of them."""

    bundle_run: str
    top: int
    settings: ReaderSettings
    panel: Panel
    request: dict[str, Any]
    entries: list[RunEntry]
    questions: list[Question]
    cached: dict[str, dict[str, Any]]
    price: Price | None
    costs: CostPolicy

    @property
    def to_call(self) -> list[Question]:
        """The requests without a stored reply, one per distinct request."""
        seen: set[str] = set()
        out: list[Question] = []
        for q in self.questions:
            if q.request_hash in self.cached or q.request_hash in seen:
                continue
            seen.add(q.request_hash)
            out.append(q)
        return out

    @property
    def method(self) -> str:
        return self.settings.method(self.top)

    @cached_property
    def asking(self) -> dict[str, list[str]]:
        """Request hash -> the queries that send it, in run order."""
        out: dict[str, list[str]] = {}
        for q in self.questions:
            out.setdefault(q.request_hash, []).append(q.query_id)
        return out


def plan_reader(
    ws: Workspace,
    bundle: Bundle,
    run: str,
    settings: ReaderSettings,
    *,
    top: int,
    replace: bool = False,
) -> ReaderPlan:
    """Each query's request, and which of them the workspace's store answers."""
    top = check_int("--top", top, minimum=1, maximum=MAX_TOP)
    panel = reader_panel(settings)
    entries = answerable_entries(bundle, run, replace=replace)
    memories = bundle.memories(bundle.run_store(run))
    request = reader_request_settings(panel)
    settings_json = canonical_json(request)
    questions: list[Question] = []
    for e in entries:
        context = [memory_line(m, bundle.sources) for m in top_memories(e.ranking, memories, top)]
        messages = reader_messages(bundle.query_by_id[e.query_id].question, context)
        _, upper = estimate_tokens(messages)
        h = request_hash(settings_json, canonical_json(messages))
        questions.append(Question(e.query_id, messages, h, upper))
    judge = panel.judges[0]
    return ReaderPlan(
        bundle_run=run,
        top=top,
        settings=settings,
        panel=panel,
        request=request,
        entries=entries,
        questions=questions,
        cached=ws.cached_responses([q.request_hash for q in questions]),
        price=judge_price(judge),
        costs=cost_policy(judge),
    )


def answer_of(response: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(answer, None)`` from a stored reply record, or ``(None, reason)`` when it gives
    no answer (``reply_too_large``, ``refusal``, ``empty``)."""
    if response.get("truncated"):
        return None, "reply_too_large"
    content = response.get("content")
    answer = content.strip() if isinstance(content, str) else ""
    if answer:
        return answer, None
    refusal = response.get("refusal")
    return None, "refusal" if isinstance(refusal, str) and refusal.strip() else "empty"


@dataclass
class ReaderRun:
    """What a reader run did and got."""

    plan: ReaderPlan
    #: query id -> its answer
    answers: dict[str, str] = field(default_factory=dict)
    #: query id -> why it has no answer (a reply without one, or a failed call)
    failures: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0
    stopped_by_budget: bool = False
    #: a failure that stopped the run (authentication, model not found)
    error: str | None = None

    @property
    def n_queries(self) -> int:
        return len(self.plan.questions)

    @property
    def missing(self) -> int:
        """Queries without an answer: failed, or not asked (budget, stop)."""
        return self.n_queries - len(self.answers)

    @property
    def not_asked(self) -> int:
        return self.missing - len(self.failures)

    @property
    def complete(self) -> bool:
        return self.missing == 0

    @property
    def failure_counts(self) -> dict[str, int]:
        """Failed queries by reason, most first (ties by name)."""
        counts = Counter(self.failures.values())
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def entries(self) -> list[RunEntry]:
        """The run's entries, each with its answer (``None`` where it has none)."""
        answers = self.answers
        return [e.model_copy(update={"answer": answers.get(e.query_id)}) for e in self.plan.entries]

    def take(self, request_hash: str, response: dict[str, Any] | None, reason: str | None) -> int:
        """Give every query of a request its answer (or failure); how many."""
        answer, why = (None, reason) if response is None else answer_of(response)
        queries = self.plan.asking.get(request_hash, [])
        for query_id in queries:
            if answer is not None:
                self.answers[query_id] = answer
                self.failures.pop(query_id, None)
            else:
                self.failures[query_id] = why or "error"
        return len(queries)


class _Caller:
    """The calls of one reader run (see the module docstring)."""

    def __init__(
        self,
        ws: Workspace,
        result: ReaderRun,
        ledger: Ledger,
        api_key: str | None,
        route: JudgeRoute,
        reporter: Reporter,
    ) -> None:
        self.ws, self.result, self.ledger = ws, result, ledger
        self.plan = result.plan
        self.api_key = api_key
        self.secrets = (api_key,) if api_key else ()
        self.route = route
        self.reporter = reporter
        self.in_flight = 0
        self.stop = False
        self.settled = asyncio.Event()

    def worst(self, q: Question) -> float:
        price = self.plan.price
        return 0.0 if price is None else price.cost(q.est_input_upper, self.plan.panel.max_tokens)

    def _claim(self, q: Question) -> float | None:
        """Right before a send: ``None`` when the store answers the request now (another
        run's reply, taken), else the reservation made (``-1``: the budget takes no more)."""
        with self.ws.transaction():
            answered = self.ws.cached_responses([q.request_hash])
            if not answered:
                amount = self.worst(q)
                return amount if self.ledger.fund([amount]) else -1.0
        self._advance(self.result.take(q.request_hash, answered[q.request_hash], None))
        self.result.cache_hits += 1
        return None

    def _advance(self, n: int) -> None:
        self.reporter.advance(READER_NAME, n)

    async def _call(self, q: Question) -> CallOutcome:
        kwargs = litellm_kwargs(self.plan.request, q.messages, self.plan.panel.timeout_s)
        kwargs.update(self.plan.costs.litellm_kwargs)
        encoded = messages_json(q.messages)

        def on_retry(failure: Failure, sleep: float) -> None:
            self.result.retries += 1

        return await call_model(
            self.plan.panel,
            kwargs,
            api_key=self.api_key,
            secrets=self.secrets,
            on_retry=on_retry,
            judge=self.plan.panel.judges[0],
            route=self.route,
            messages_json=None if encoded is None else encoded.wire,
        )

    def _store(self, q: Question, outcome: CallOutcome, reserved: float) -> None:
        """The call's ``model_calls`` row and its budget settlement, in one transaction;
        then its queries' answers."""
        failure = outcome.failure
        cost = outcome.cost(self.plan.price)
        judge = self.plan.panel.judges[0]
        response = scrub_response(outcome.response, self.secrets)
        call = model_call_row(
            q.request_hash, judge.model, judge.api_base,
            full_request(self.plan.request, q.messages), outcome,
            response=response, cost=cost, now=now_iso(),
        )  # fmt: skip
        with self.ws.transaction():
            self.ws.store_calls([call])
            self.ledger.settle(reserved, cost)
        result = self.result
        result.calls += 1
        if cost is None:
            result.cost_unknown += 1
        else:
            result.cost_usd += cost
        if failure is not None and failure.fatal:
            result.error = f"{failure.reason.value}: {failure.message}"
            self.stop = True
            return
        reason = None if failure is None else failure.reason.value
        self._advance(result.take(q.request_hash, response if failure is None else None, reason))

    async def _one(self, queue: deque[Question]) -> bool:
        """Send the next request; False when this worker is done."""
        q = queue.popleft()
        reserved = self._claim(q)
        if reserved is None:
            return True
        if reserved < 0:  # the budget takes no more now
            queue.appendleft(q)
            if not self.in_flight:
                self.result.stopped_by_budget = self.stop = True
                return False
            self.settled.clear()
            await self.settled.wait()  # a stored call may free some
            return True
        self.in_flight += 1
        try:
            outcome = await self._call(q)
        except BaseException:
            self.ledger.release(reserved)
            raise
        finally:
            self.in_flight -= 1
        self._store(q, outcome, reserved)
        self.settled.set()
        return True

    async def _worker(self, queue: deque[Question]) -> None:
        while queue and not self.stop:
            if not await self._one(queue):
                break
        self.settled.set()  # a worker waiting on the budget looks again

    async def run(self, questions: Sequence[Question]) -> None:
        queue = deque(questions)
        n = min(self.plan.panel.judges[0].concurrency, len(queue))
        tasks = [asyncio.ensure_future(self._worker(queue)) for _ in range(n)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def read_answers(
    ws: Workspace,
    plan: ReaderPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> ReaderRun:
    """Answer the plan's queries: from the store first, then by calls (see the module
    docstring). ``max_cost`` needs a price (the reader's options, else litellm's
    table)."""
    if max_cost is not None:
        check_cost("--max-cost", max_cost)
    shown = reporter or NoReporter()
    result = ReaderRun(plan)
    for h, response in plan.cached.items():
        result.cache_hits += 1
        result.take(h, response, None)
    to_call = plan.to_call
    judge = plan.panel.judges[0]
    if max_cost is not None and to_call and plan.price is None:
        raise TiapError(
            f"--max-cost needs a price for the reader; no known price for '{judge.model}': "
            "give --input-cost-per-mtok and --output-cost-per-mtok"
        )
    with shown.parts(RUN_NAME):
        shown.start(READER_NAME, len(plan.questions))
        shown.advance(READER_NAME, len(result.answers) + len(result.failures))
        if to_call:
            await _call_all(ws, result, to_call, max_cost, shown, lease_s, on_route_load)
    return result


async def _call_all(
    ws: Workspace,
    result: ReaderRun,
    to_call: Sequence[Question],
    max_cost: float | None,
    reporter: Reporter,
    lease_s: float | None,
    on_route_load: OnRouteLoad | None,
) -> None:
    plan = result.plan
    judge = plan.panel.judges[0]
    api_key = judge.api_key()
    lease = lease_for(plan.panel, lease_s)
    with announcing(on_route_load):
        route = route_for(judge)
        first = litellm_kwargs(plan.request, to_call[0].messages, plan.panel.timeout_s)
        route.prepare(judge, {**first, **plan.costs.litellm_kwargs})
    owner = new_owner()
    ledger = Ledger(ws, owner, f"reader|{judge.model}", max_cost, lease)
    keeper = Keeper(ws, owner, lease)
    reap_gone(ws)
    caller = _Caller(ws, result, ledger, api_key, route, reporter)
    try:
        with runtime.calls_in_flight(), keeper.running():
            async with call_session([route]):
                await caller.run(to_call)
    finally:
        ledger.close()
        keeper.release()


def run_reader(
    ws: Workspace,
    plan: ReaderPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> ReaderRun:
    """:func:`read_answers` from synchronous code, also inside a running event loop
    (:func:`tiap.judge.runner.run_on_workspace`)."""
    from tiap.judge.runner import run_on_workspace

    return run_on_workspace(
        ws,
        lambda w: read_answers(
            w,
            plan,
            max_cost=max_cost,
            reporter=reporter,
            lease_s=lease_s,
            on_route_load=on_route_load,
        ),
    )

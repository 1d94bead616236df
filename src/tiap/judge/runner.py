"""Run a panel over cases: answer from the cache, call, store, resume.

The unit of work is a (case, judge) pair for one rubric (see
:mod:`tiap.judge.plan`). A run stopped by Ctrl-C, ``kill -9`` or a budget is
completed by the next run without repeating a call: each call's
``model_calls`` row and label row are committed together, in one transaction,
as soon as the call returns.

Pairs the cache answers are labelled first, without a request (and without
importing litellm). Other pairs are called through
:func:`tiap.judge.call.call_model`, ``concurrency`` at a time per judge.

:func:`execute` is the API (a coroutine); :func:`run_panel` plans and executes
from synchronous code, also inside a running event loop (a notebook): see
:func:`run_on_workspace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from tiap import runtime
from tiap.aio import run_sync
from tiap.cases import LabelRecord, Workspace
from tiap.errors import TiapError
from tiap.judge.call import CallOutcome, call_model, call_session
from tiap.judge.failures import Failure, scrub
from tiap.judge.panel import Panel
from tiap.judge.plan import JudgePlan, Pair, RunPlan, dry_run, plan_run
from tiap.judge.request import full_request, litellm_kwargs
from tiap.judge.routes.reply import NOTE_CHARS, RATIONALE_CHARS
from tiap.judge.summary import JudgeTally, RunSummary
from tiap.rubric import Reason, Rubric, parse_judgment

__all__ = ["Budget", "Reporter", "dry_run", "execute", "plan_run", "run_on_workspace", "run_panel"]

T = TypeVar("T")


class Reporter(Protocol):
    """Progress callbacks (see :mod:`tiap.judge.progress`)."""

    def start(self, judge: str, total: int) -> None: ...

    def advance(self, judge: str, n: int = 1) -> None: ...


class _NoReporter:
    def start(self, judge: str, total: int) -> None:
        pass

    def advance(self, judge: str, n: int = 1) -> None:
        pass


class Budget:
    """``--max-cost``: a call starts only if the spend so far, the worst case of the
    calls in flight and its own worst case stay within the budget."""

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self.spent = 0.0
        self.reserved = 0.0
        self.exhausted = False

    def reserve(self, worst: float) -> bool:
        if self.max_cost is None:
            return True
        if self.exhausted or self.spent + self.reserved + worst > self.max_cost + 1e-12:
            self.exhausted = True
            return False
        self.reserved += worst
        return True

    def settle(self, worst: float, actual: float | None) -> None:
        if self.max_cost is None:
            return
        self.reserved -= worst
        self.spent += worst if actual is None else actual


class _Run:
    """The state of one execution of a plan."""

    def __init__(
        self,
        ws: Workspace,
        plan: RunPlan,
        budget: Budget,
        reporter: Reporter,
        keys: dict[str, str | None],
    ) -> None:
        self.ws = ws
        self.plan = plan
        self.panel = plan.panel
        self.rubric = plan.rubric
        self.budget = budget
        self.reporter = reporter
        self.keys = keys
        self.secrets = tuple(k for k in keys.values() if k)
        self.tallies = {
            jp.judge.name: JudgeTally(
                judge=jp.judge.name,
                kind=jp.judge.kind,
                model=jp.judge.model,
                cases=jp.cases,
                already_labelled=jp.already_labelled,
            )
            for jp in plan.judges
        }

    # ------------------------------------------------------------------ labels

    def _label(
        self,
        jp: JudgePlan,
        pair: Pair,
        content: str | None,
        refusal: str | None = None,
        *,
        truncated: bool | None = None,
        reply_bytes: int | None = None,
    ) -> LabelRecord:
        """The label row of a reply. A reply cut at ``max_reply_bytes`` (``truncated``;
        for a cache answer, as its stored record says) keeps its one bounded copy with
        its call: the row gets the label parsed from that part, or reason
        ``reply_too_large``, and the size in its note."""
        if truncated is None:
            cached = pair.cached or {}
            truncated = bool(cached.get("truncated"))
            size = cached.get("reply_bytes")
            reply_bytes = size if isinstance(size, int) else None
        parsed = parse_judgment(self.rubric, content)
        reason, note = parsed.reason, parsed.detail
        if parsed.label is None and reason is Reason.EMPTY and refusal:
            reason, note = Reason.REFUSAL, refusal[:NOTE_CHARS]
        if truncated:
            size_text = f"{reply_bytes:,} bytes" if reply_bytes else "more than it read"
            cut_note = (
                f"reply of {size_text} cut to its first {self.panel.max_reply_bytes:,} bytes "
                "(max_reply_bytes), kept with its call"
            )
            if parsed.label is None:
                reason = Reason.REPLY_TOO_LARGE
            note = cut_note
        rationale = parsed.rationale
        if rationale is not None and len(rationale) > RATIONALE_CHARS:
            rationale = rationale[:RATIONALE_CHARS] + "…"
        return LabelRecord(
            case_id=pair.case.case_id,
            rater=jp.judge.name,
            rater_kind="judge",
            label=parsed.label,
            reason=None if reason is None else reason.value,
            rationale=scrub(rationale, self.secrets),
            note=scrub(note, self.secrets),
            raw=None if truncated else scrub(content, self.secrets),
            rubric_id=self.rubric.id,
            rubric_hash=self.rubric.content_hash,
            panel=self.panel.name,
            model=jp.judge.model,
            request_hash=pair.request_hash,
            settings_hash=jp.settings_hash,
            origin="judge",
        )

    def _count(self, tally: JudgeTally, record: LabelRecord) -> None:
        if record.label is None:
            tally.add_invalid(record.reason or "invalid")
        else:
            tally.valid += 1

    def answer_from_cache(self) -> None:
        """Label every pair the cache answers, in batched transactions."""
        batch: list[LabelRecord] = []
        for jp in self.plan.judges:
            tally = self.tallies[jp.judge.name]
            for pair in jp.cache_hits:
                cached = pair.cached or {}
                record = self._label(jp, pair, cached.get("content"), cached.get("refusal"))
                record.cost_usd = 0.0
                batch.append(record)
                tally.cache_hits += 1
                self._count(tally, record)
                if len(batch) >= 1000:
                    self.ws.add_labels(batch)
                    batch = []
            self.reporter.advance(jp.judge.name, len(jp.cache_hits))
        if batch:
            self.ws.add_labels(batch)

    # ------------------------------------------------------------------- calls

    def _cost(self, jp: JudgePlan, outcome: CallOutcome) -> float | None:
        if not jp.costs.known:
            return None
        if outcome.cost_usd is not None:
            return outcome.cost_usd
        if jp.price is None or outcome.input_tokens is None or outcome.output_tokens is None:
            return None
        return jp.price.cost(outcome.input_tokens, outcome.output_tokens)

    def _store(self, jp: JudgePlan, pair: Pair, outcome: CallOutcome) -> float | None:
        """Commit the call and its label together; returns the call's cost."""
        tally = self.tallies[jp.judge.name]
        cost = self._cost(jp, outcome)
        failure: Failure | None = outcome.failure
        response = outcome.response
        if response is not None and self.secrets:
            response = {
                k: scrub(v, self.secrets) if isinstance(v, str) else v for k, v in response.items()
            }
        record: LabelRecord | None = None
        if failure is None:
            record = self._label(
                jp,
                pair,
                outcome.content,
                (response or {}).get("refusal"),
                truncated=outcome.truncated,
                reply_bytes=outcome.reply_bytes,
            )
        elif not failure.fatal:
            record = LabelRecord(
                case_id=pair.case.case_id,
                rater=jp.judge.name,
                rater_kind="judge",
                label=None,
                reason=failure.reason.value,
                note=failure.message,
                rubric_id=self.rubric.id,
                rubric_hash=self.rubric.content_hash,
                panel=self.panel.name,
                model=jp.judge.model,
                request_hash=pair.request_hash,
                settings_hash=jp.settings_hash,
                origin="judge",
            )
        if record is not None:
            record.cost_usd = cost
            record.input_tokens = outcome.input_tokens
            record.output_tokens = outcome.output_tokens
        with self.ws.transaction():
            self.ws.store_call(
                request_hash=pair.request_hash,
                model=jp.judge.model,
                api_base=jp.judge.api_base,
                request=full_request(jp.settings, pair.messages),
                response=response,
                status="ok" if failure is None else "error",
                error=None if failure is None else json.dumps(failure.record()),
                latency_ms=round(outcome.latency_ms, 3),
                cost_usd=cost,
                input_tokens=outcome.input_tokens,
                output_tokens=outcome.output_tokens,
            )
            if record is not None:
                self.ws.add_label(record)
        tally.calls += 1
        tally.input_tokens += outcome.input_tokens or 0
        tally.output_tokens += outcome.output_tokens or 0
        if cost is None:
            tally.cost_unknown += 1
        else:
            tally.cost_usd += cost
        if record is not None:
            self._count(tally, record)
        return cost

    def _worst(self, jp: JudgePlan, pair: Pair) -> float:
        if jp.price is None:
            return 0.0
        return jp.price.cost(pair.est_input_upper, self.panel.max_tokens)

    async def run_judge(self, jp: JudgePlan) -> None:
        tally = self.tallies[jp.judge.name]
        queue = list(reversed(jp.to_call))
        api_key = self.keys.get(jp.judge.name)
        timeout = self.panel.timeout_s

        def on_retry(failure: Failure, sleep: float) -> None:
            tally.retries += 1

        async def call(kwargs: dict[str, Any]) -> CallOutcome:
            return await call_model(
                self.panel,
                kwargs,
                api_key=api_key,
                secrets=self.secrets,
                on_retry=on_retry,
                judge=jp.judge,
            )

        async def worker() -> None:
            while queue and tally.error is None:
                pair = queue[-1]
                worst = self._worst(jp, pair)
                if not self.budget.reserve(worst):
                    return
                queue.pop()
                kwargs = litellm_kwargs(jp.settings, pair.messages, timeout)
                kwargs.update(jp.costs.litellm_kwargs)
                try:
                    outcome = await call(kwargs)
                except BaseException:
                    self.budget.settle(worst, 0.0)
                    raise
                if outcome.failure is not None and outcome.failure.fatal and tally.error is None:
                    tally.error = f"{outcome.failure.reason}: {outcome.failure.message}"
                cost = self._store(jp, pair, outcome)
                self.budget.settle(worst, cost)
                self.reporter.advance(jp.judge.name)

        workers = [worker() for _ in range(min(jp.judge.concurrency, len(queue)))]
        await asyncio.gather(*workers)
        tally.not_started = len(queue)

    async def run_calls(self) -> None:
        await asyncio.gather(*(self.run_judge(jp) for jp in self.plan.judges if jp.to_call))


def resolve_keys(plan: RunPlan) -> dict[str, str | None]:
    """Each judge's API key, read now; one error before any call if one is missing."""
    keys: dict[str, str | None] = {}
    for jp in plan.judges:
        if not jp.to_call:
            keys[jp.judge.name] = None
            continue
        keys[jp.judge.name] = jp.judge.api_key()
        if jp.judge.kind == "local_llm":
            from tiap.judge.local_llm import check_available

            check_available()
    return keys


def check_budget_prices(plan: RunPlan, max_cost: float | None) -> None:
    """A budget must be non-negative and every judge that will be called priced."""
    if max_cost is None:
        return
    if max_cost < 0:
        raise TiapError("--max-cost must not be negative")
    unpriced = [jp.judge for jp in plan.judges if jp.to_call and jp.price is None]
    if unpriced:
        names = ", ".join(f"'{j.name}' ({j.model})" for j in unpriced)
        raise TiapError(
            f"--max-cost needs a price for every judge; no known price for {names}: add "
            "input_cost_per_mtok and output_cost_per_mtok to the panel"
        )


async def execute(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
) -> RunSummary:
    """Carry out a plan: cache answers first, then the calls."""
    check_budget_prices(plan, max_cost)
    keys = resolve_keys(plan)
    reporter = reporter or _NoReporter()
    for jp in plan.judges:
        reporter.start(jp.judge.name, len(jp.pairs))
    run = _Run(ws, plan, Budget(max_cost), reporter, keys)
    run.answer_from_cache()
    with runtime.calls_in_flight():
        async with contextlib.AsyncExitStack() as stack:
            if any(jp.to_call for jp in plan.judges):
                await stack.enter_async_context(call_session())
            await run.run_calls()
    summary = RunSummary(
        panel=plan.panel.name,
        rubric_id=plan.rubric.id,
        rubric_hash=plan.rubric.content_hash,
        subset=plan.subset,
        cases=plan.cases,
        judges=[run.tallies[jp.judge.name] for jp in plan.judges],
        max_cost_usd=max_cost,
        stopped_by_budget=run.budget.exhausted,
    )
    return summary.finish()


def run_panel(
    ws: Workspace,
    panel: Panel,
    rubric: Rubric,
    *,
    subset: str | None = None,
    max_cost: float | None = None,
    retry_failed: bool = False,
    reporter: Reporter | None = None,
    force: bool = False,
) -> RunSummary:
    """Plan and execute (the Python API of ``tiap judge run``), from synchronous
    code: also inside a running event loop (see :func:`run_on_workspace`). Beyond a
    validation subset the scale gate must have passed, or ``force`` (recorded): see
    :func:`tiap.judge.plan.plan_run`."""
    plan = plan_run(ws, panel, rubric, subset=subset, retry_failed=retry_failed, force=force)
    return run_on_workspace(ws, lambda w: execute(w, plan, max_cost=max_cost, reporter=reporter))


def run_on_workspace(ws: Workspace, main: Callable[[Workspace], Coroutine[Any, Any, T]]) -> T:
    """Run ``main(ws)`` to completion from synchronous code (:func:`tiap.aio.run_sync`).

    Inside a running event loop the coroutine runs on a private loop in a worker
    thread, and there on a connection of its own to the same workspace file (a
    SQLite connection belongs to the thread that opened it); what it stores is
    committed before this returns, so ``ws`` sees it.
    """
    caller = threading.get_ident()

    async def bound() -> T:
        if threading.get_ident() == caller:
            return await main(ws)
        with Workspace(ws.path, create=False) as own:
            return await main(own)

    return run_sync(bound)

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
import os
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from tiap import runtime
from tiap.aio import run_sync
from tiap.cases import LabelRecord, Workspace
from tiap.errors import TiapError
from tiap.judge.call import CallOutcome, call_model, litellm_session
from tiap.judge.failures import Failure, scrub
from tiap.judge.panel import Panel
from tiap.judge.plan import JudgePlan, Pair, RunPlan, dry_run, plan_run
from tiap.judge.request import full_request, litellm_kwargs
from tiap.judge.summary import JudgeTally, RunSummary
from tiap.rubric import Rubric, parse_judgment

if TYPE_CHECKING:  # imported when used: ``python -m tiap.judge.workers`` runs it as __main__
    from tiap.judge.workers import CallPool

__all__ = ["Budget", "Reporter", "dry_run", "execute", "plan_run", "run_on_workspace", "run_panel"]

T = TypeVar("T")

#: a run uses worker processes by default from this many provider calls ...
AUTO_WORKERS_MIN_CALLS = 2000
#: ... when at least this many may be in flight at once (see :func:`pool_size`).
AUTO_WORKERS_MIN_IN_FLIGHT = 64


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
        pool: CallPool | None = None,
    ) -> None:
        self.ws = ws
        self.pool = pool
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
        self, jp: JudgePlan, pair: Pair, content: str | None, refusal: str | None = None
    ) -> LabelRecord:
        parsed = parse_judgment(self.rubric, content)
        reason = parsed.reason
        if parsed.label is None and reason == "empty" and refusal:
            reason = "refusal"
        return LabelRecord(
            case_id=pair.case.case_id,
            rater=jp.judge.name,
            rater_kind="judge",
            label=parsed.label,
            reason=reason,
            rationale=scrub(parsed.rationale, self.secrets),
            raw=scrub(content, self.secrets),
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
            record = self._label(jp, pair, outcome.content, (response or {}).get("refusal"))
        elif not failure.fatal:
            record = LabelRecord(
                case_id=pair.case.case_id,
                rater=jp.judge.name,
                rater_kind="judge",
                label=None,
                reason=failure.reason,
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
                error=None if failure is None else f"{failure.reason}: {failure.message}",
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
        pool = self.pool if self.pool is not None and not jp.judge.offline else None

        def on_retry(failure: Failure, sleep: float) -> None:
            tally.retries += 1

        async def call(kwargs: dict[str, Any]) -> CallOutcome:
            if pool is None:
                return await call_model(
                    self.panel, kwargs, api_key=api_key, secrets=self.secrets, on_retry=on_retry
                )
            outcome = await pool.call(jp.judge.name, kwargs)
            tally.retries += max(0, outcome.attempts - 1)
            return outcome

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


def pool_size(plan: RunPlan, workers: int | None) -> int:
    """Worker processes for the plan's provider calls: ``workers`` if given (0: in
    this process), else automatic: one per core (at most 4) for a run of at least
    :data:`AUTO_WORKERS_MIN_CALLS` provider calls with at least
    :data:`AUTO_WORKERS_MIN_IN_FLIGHT` of them in flight at once (summed per-judge
    concurrency). Only then can litellm's CPU per call (several ms), not the
    provider, set the pace; each worker starts litellm anew (a few seconds)."""
    if workers is not None:
        if workers < 0:
            raise TiapError("--workers must not be negative")
        return workers
    remote = [jp for jp in plan.judges if jp.to_call and not jp.judge.offline]
    calls = sum(len(jp.to_call) for jp in remote)
    in_flight = sum(min(jp.judge.concurrency, len(jp.to_call)) for jp in remote)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if calls < AUTO_WORKERS_MIN_CALLS or in_flight < AUTO_WORKERS_MIN_IN_FLIGHT:
        return 0
    return min(cores, 4) if cores and cores >= 2 else 0


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
    workers: int | None = None,
    pool: CallPool | None = None,
) -> RunSummary:
    """Carry out a plan: cache answers first, then the calls: in ``workers``
    processes when there are many (see :func:`pool_size`), or in a pool the caller
    started (with the same panel and keys; it stays open)."""
    check_budget_prices(plan, max_cost)
    keys = resolve_keys(plan)
    size = pool_size(plan, workers)
    reporter = reporter or _NoReporter()
    for jp in plan.judges:
        reporter.start(jp.judge.name, len(jp.pairs))
    run = _Run(ws, plan, Budget(max_cost), reporter, keys, pool)
    run.answer_from_cache()
    needs_pool = any(jp.to_call and not jp.judge.offline for jp in plan.judges)
    use_pool = pool is not None or bool(size and needs_pool)
    in_process = any(jp.to_call and (jp.judge.offline or not use_pool) for jp in plan.judges)
    with runtime.calls_in_flight(), contextlib.ExitStack() as stack:
        if in_process:
            stack.enter_context(litellm_session())
        if pool is None and size and needs_pool:
            from tiap.judge.workers import CallPool

            async with CallPool(size, plan.panel, keys) as run.pool:
                await run.run_calls()
        else:
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
    workers: int | None = None,
    force: bool = False,
) -> RunSummary:
    """Plan and execute (the Python API of ``tiap judge run``), from synchronous
    code: also inside a running event loop (see :func:`run_on_workspace`). Beyond a
    validation subset the scale gate must have passed, or ``force`` (recorded): see
    :func:`tiap.judge.plan.plan_run`."""
    plan = plan_run(ws, panel, rubric, subset=subset, retry_failed=retry_failed, force=force)
    return run_on_workspace(
        ws, lambda w: execute(w, plan, max_cost=max_cost, reporter=reporter, workers=workers)
    )


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

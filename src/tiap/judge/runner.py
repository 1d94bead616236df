"""Run a panel over cases: answer from the cache, claim, call, store, resume.

The unit of work is a (case, judge) pair for one rubric (see
:mod:`tiap.judge.plan`); pairs that send the same request are one group, called
once. Every judge's work takes one path, claim -> call -> record
(:mod:`tiap.judge.work`), on its route (:mod:`tiap.judge.routes`), one call at a
time (:mod:`tiap.judge.direct`: adaptive concurrency per judge) or, with
``batch``, through the provider's batch API where it has one
(:mod:`tiap.judge.batch_run`).

What a run stores goes through its one writer (:mod:`tiap.cases.group_commit`):
a call's ``model_calls`` row and labels commit together, in a group with other
calls' (at most 64 calls, at most 1 ms after the first of them was answered). A
run stopped by Ctrl-C stores what it was answered before it ends; one killed
(``kill -9``) loses at most that open group, whose calls the next run makes
again; nothing a committed group stored is asked again.

Several runs may work on one workspace at once: a group is claimed (leased) in
the workspace before it is called and the budget is one ledger there (see
:mod:`tiap.judge.claims`), so they split the work instead of repeating it.

Pairs the cache answers are labelled first, without a request (and without
importing litellm).

:func:`execute` is the API (a coroutine); :func:`run_panel` plans and executes
from synchronous code, also inside a running event loop (a notebook): see
:func:`run_on_workspace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tiap import runtime
from tiap.aio import run_sync
from tiap.cases import Workspace
from tiap.cases.group_commit import GroupWriter
from tiap.errors import TiapError
from tiap.judge.call import call_session
from tiap.judge.claims import (
    Keeper,
    Ledger,
    budget_scope,
    lease_for,
    new_owner,
    owner_gone,
    reap_gone,
)
from tiap.judge.direct import DirectJudge
from tiap.judge.outcomes import Recorder
from tiap.judge.panel import Panel
from tiap.judge.plan import JudgePlan, RunPlan, dry_run, group_pairs, plan_run
from tiap.judge.request import litellm_kwargs
from tiap.judge.routes import BatchApi, JudgeRoute, OnRouteLoad, announcing, route_for
from tiap.judge.summary import JudgeTally, RunSummary
from tiap.judge.work import JudgeWork, RunContext
from tiap.progress import NoReporter, Reporter
from tiap.rubric import Rubric

if TYPE_CHECKING:
    from tiap.judge.batch_run import BatchOptions

__all__ = [
    "Reporter",
    "dry_run",
    "execute",
    "plan_run",
    "run_on_workspace",
    "run_panel",
]

T = TypeVar("T")

#: cache answers stored per transaction.
CACHE_BATCH = 1000


def _tallies(plan: RunPlan) -> dict[str, JudgeTally]:
    return {
        jp.key: JudgeTally(
            judge=jp.key,
            kind=jp.judge.kind,
            model=jp.judge.model,
            cases=jp.cases,
            already_labelled=jp.already_labelled,
        )
        for jp in plan.judges
    }


async def answer_from_cache(ctx: RunContext) -> None:
    """Label every pair the plan found in the cache, in batched transactions (a
    pair another run labelled meanwhile is skipped)."""
    for jp in ctx.plan.judges:
        work = JudgeWork(ctx, jp)
        hits = group_pairs(jp.cache_hits)
        for i in range(0, len(hits), CACHE_BATCH):
            chunk = hits[i : i + CACHE_BATCH]
            await work.store_cached(
                [(g.request_hash, g.case_ids, g.pairs[0].cached or {}) for g in chunk]
            )
        ctx.reporter.advance(jp.key, len(jp.cache_hits))


def _batch_state(ctx: RunContext, sub: Any, now: float) -> str:
    """Where a submission's waiting pairs count: ``missing`` (held until recalled
    or abandoned), ``held`` (another live run polls it), else ``waiting``."""
    if sub is not None and sub.state == "missing":
        return "missing"
    poller = None if sub is None else sub.poller
    expires = 0.0 if sub is None else sub.poll_expires_at or 0.0
    if poller not in (None, ctx.owner) and expires > now and not owner_gone(str(poller)):
        return "held"
    return "waiting"


def count_batched(ctx: RunContext) -> None:
    """Each judge's pairs that wait in open provider batches when the run ends: held
    by another live run when it polls them (it stores them), held by a batch whose
    results are missing, else waiting (a ``--batch`` run collects them)."""
    now = time.time()
    for jp in ctx.plan.judges:
        if jp.probe is not None:  # probes are called directly: no provider batch
            continue
        tally = ctx.tallies[jp.judge.name]
        waiting = ctx.ws.open_batch_pairs(jp.judge.name, ctx.plan.rubric.content_hash)
        if not waiting:
            continue
        subs = {
            s.id: s
            for s in ctx.ws.submissions(
                rater=jp.judge.name, rubric_hash=ctx.plan.rubric.content_hash, open_only=True
            )
        }
        for sub_id, n in waiting.items():
            state = _batch_state(ctx, subs.get(sub_id), now)
            if state == "missing":
                tally.missing_in_batches += n
            elif state == "held":
                tally.held_elsewhere += n
            else:
                tally.in_batches += n


def resolve_keys(plan: RunPlan, also: Sequence[str] = ()) -> dict[str, str | None]:
    """Each judge's API key, read now; one error before any call if one is missing.
    Judges with nothing to call need none, unless named in ``also`` (they poll
    provider batches)."""
    keys: dict[str, str | None] = {}
    for jp in plan.judges:
        needed = jp.to_call or jp.judge.name in also
        keys[jp.judge.name] = jp.judge.api_key() if needed else None
    return keys


def prepare_routes(plan: RunPlan, judges: Sequence[JudgePlan]) -> list[JudgeRoute]:
    """The routes of the judges that will make calls, each made ready for its
    judges (a library a route needs is loaded now, announced first); in order."""
    routes: dict[str, JudgeRoute] = {}
    for jp in judges:
        route = route_for(jp.judge)
        first = jp.groups[0].messages if jp.groups else []
        kwargs = litellm_kwargs(jp.settings, first, plan.panel.timeout_s)
        route.prepare(jp.judge, {**kwargs, **jp.costs.litellm_kwargs})
        routes.setdefault(route.name, route)
    return list(routes.values())


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


def batch_apis(
    plan: RunPlan, ws: Workspace, batch: BatchOptions | None
) -> dict[str, tuple[BatchApi | None, str]]:
    """``judge -> (its batch API or None, why)`` under ``--batch``, for the judges
    that have something to submit or to collect (their routes are asked: litellm is
    imported only then); no key yet (read once it is known who needs one)."""
    if batch is None:
        return {}
    offers: dict[str, tuple[BatchApi | None, str]] = {}
    for jp in plan.judges:
        open_subs = ws.submissions(
            rater=jp.judge.name, rubric_hash=plan.rubric.content_hash, open_only=True
        )
        if jp.to_call or open_subs:
            offer = route_for(jp.judge).batches(jp.judge, None)
            offers[jp.judge.name] = (offer.api, offer.why)
    return offers


class _Run:
    """One execution of a plan: its judges, their routes and the run's context."""

    def __init__(
        self,
        ws: Workspace,
        plan: RunPlan,
        max_cost: float | None,
        reporter: Reporter,
        batch: BatchOptions | None,
        lease_s: float,
    ) -> None:
        self.plan, self.batch = plan, batch
        offers = batch_apis(plan, ws, batch)
        self.batched = [jp for jp in plan.judges if (offers.get(jp.judge.name) or (None,))[0]]
        self.direct = [jp for jp in plan.judges if jp not in self.batched and jp.to_call]
        keys = resolve_keys(plan, also=[jp.judge.name for jp in self.batched])
        self.routes = prepare_routes(plan, [jp for jp in plan.judges if jp.to_call])
        owner = new_owner()
        scope = budget_scope(plan.panel.name, plan.rubric.content_hash, plan.subset)
        ledger = Ledger(ws, owner, scope, max_cost, lease_s)
        secrets = tuple(k for k in keys.values() if k)
        self.ctx = RunContext(
            ws=ws,
            plan=plan,
            owner=owner,
            ledger=ledger,
            recorder=Recorder(
                plan.rubric,
                owner=owner,
                ledger=ledger,
                secrets=secrets,
                max_reply_bytes=plan.panel.max_reply_bytes,
            ),
            writer=GroupWriter(ws.path),
            reporter=reporter,
            keys=keys,
            tallies=_tallies(plan),
            lease_s=lease_s,
            secrets=secrets,
        )
        for name, (api, why) in offers.items():
            self.ctx.tallies[name].route_note = why
            self.ctx.tallies[name].route = "batch" if api is not None else "direct"
        self.keeper = Keeper(ws, owner, lease_s)

    def start_bars(self) -> None:
        """A bar per judge with work: its pairs waiting in batches only when this
        run collects them."""
        for jp in self.plan.judges:
            work = len(jp.pairs) - (0 if jp in self.batched else len(jp.in_batches))
            if work:
                self.ctx.reporter.start(jp.key, work)

    def runners(self) -> list[Any]:
        ctx = self.ctx
        runners: list[Any] = [DirectJudge(JudgeWork(ctx, jp), jp.groups) for jp in self.direct]
        if self.batched and self.batch is not None:
            from tiap.judge.batch_run import BatchJudge

            for jp in self.batched:
                offer = route_for(jp.judge).batches(jp.judge, ctx.keys.get(jp.judge.name))
                if offer.api is not None:
                    runners.append(BatchJudge(JudgeWork(ctx, jp), offer.api, self.batch))
        return runners

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """The writer, the routes' sessions and the heartbeat while the judges work;
        afterwards (Ctrl-C too) what was answered is committed and every claim let
        go."""
        ctx = self.ctx
        try:
            await ctx.writer.start()
            with runtime.calls_in_flight():
                async with contextlib.AsyncExitStack() as stack:
                    if self.batched or self.direct:
                        await stack.enter_async_context(call_session(self.routes))
                    with self.keeper.running():
                        yield
        finally:
            await ctx.writer.close()
            self.keeper.release()

    def summary(self, stopped: bool) -> RunSummary:
        ctx, plan = self.ctx, self.plan
        used = ctx.ledger.used()
        ctx.ledger.close()
        return RunSummary(
            panel=plan.panel.name,
            rubric_id=plan.rubric.id,
            rubric_hash=plan.rubric.content_hash,
            subset=plan.subset,
            cases=plan.cases,
            judges=[ctx.tallies[jp.key] for jp in plan.judges],
            max_cost_usd=ctx.ledger.max_cost,
            stopped_by_budget=stopped,
            owner=ctx.owner,
            budget=ctx.ledger.budget if ctx.ledger.opened else None,
            budget_used_usd=None if used is None else round(used, 10),
            batches=sorted(ctx.batches, key=lambda b: b.submission),
        ).finish()


async def execute(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> RunSummary:
    """Carry out a plan: cache answers first, then the calls, in this process (each
    on its judge's route: :mod:`tiap.judge.routes`). With ``batch``, judges whose
    provider has a batch API go through it (:mod:`tiap.judge.batch_run`).

    Groups are claimed before they are called and checked again right before each
    request is sent (leases of ``lease_s`` seconds, at least the panel's
    ``timeout_s`` plus a second: :func:`~tiap.judge.claims.lease_for`; renewed by
    a heartbeat while the run works, released when it ends, also on Ctrl-C), and
    the budget ``max_cost`` is shared with overlapping runs
    (:mod:`tiap.judge.claims`). ``on_route_load`` is called with a route's name
    before the library it needs is imported (``litellm``: a few seconds), e.g. to
    show "loading the litellm route…"; a panel whose judges all take the direct or
    the offline route never imports litellm.
    """
    check_budget_prices(plan, max_cost)
    lease_s = lease_for(plan.panel, lease_s)
    with announcing(on_route_load):
        run = _Run(ws, plan, max_cost, reporter or NoReporter(), batch, lease_s)
        run.start_bars()
        reap_gone(ws)  # runs of this host that were killed hold nothing any more
        stopped = False
        try:
            async with run.working():
                await answer_from_cache(run.ctx)
                stopped = await _run_judges(run.runners())
            count_batched(run.ctx)
        except BaseException:
            run.ctx.ledger.close()
            raise
        return run.summary(stopped)


async def _run_judges(runners: Sequence[Any]) -> bool:
    """Every judge at once; whether the budget stopped one with work left."""
    tasks = [asyncio.ensure_future(r.run()) for r in runners]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return any(r.stopped_by_budget for r in runners)


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
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> RunSummary:
    """Plan and execute (the Python API of ``tiap judge run``), from synchronous
    code: also inside a running event loop (see :func:`run_on_workspace`). Beyond a
    validation subset the scale gate must have passed, or ``force`` (recorded): see
    :func:`tiap.judge.plan.plan_run`. ``batch``: through the providers' batch APIs
    (:class:`tiap.judge.batch_run.BatchOptions`)."""
    plan = plan_run(ws, panel, rubric, subset=subset, retry_failed=retry_failed, force=force)
    return run_on_workspace(
        ws,
        lambda w: execute(
            w,
            plan,
            max_cost=max_cost,
            reporter=reporter,
            batch=batch,
            lease_s=lease_s,
            on_route_load=on_route_load,
        ),
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

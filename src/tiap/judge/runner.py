"""Run a panel over cases: answer from the cache, claim, call, store, resume.

The unit of work is a (case, judge) pair for one rubric (see
:mod:`tiap.judge.plan`); pairs that send the same request are one group, called
once. A run stopped by Ctrl-C, ``kill -9`` or a budget is completed by the next
run without repeating a call: each call's ``model_calls`` row and label rows are
committed together, in one transaction, as soon as the call returns.

Several runs may work on one workspace at once: a group is claimed (leased) in
the workspace before it is called and the budget is one ledger there (see
:mod:`tiap.judge.claims`), so they split the work instead of repeating it.

Pairs the cache answers are labelled first, without a request (and without
importing litellm). Other groups are called through
:func:`tiap.judge.call.call_model` (:mod:`tiap.judge.direct`: adaptive
concurrency per judge), or, with ``batch=True``, submitted through the
provider's batch API where it has one (:mod:`tiap.judge.batch_run`).

:func:`execute` is the API (a coroutine); :func:`run_panel` plans and executes
from synchronous code, also inside a running event loop (a notebook): see
:func:`run_on_workspace`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tiap import runtime
from tiap.aio import run_sync
from tiap.cases import Workspace
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
from tiap.judge.direct import DirectJudge, RunContext
from tiap.judge.outcomes import Recorder
from tiap.judge.panel import Panel
from tiap.judge.plan import JudgePlan, RunPlan, dry_run, group_pairs, plan_run
from tiap.judge.reporting import NoReporter, Reporter
from tiap.judge.summary import JudgeTally, RunSummary
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
        jp.judge.name: JudgeTally(
            judge=jp.judge.name,
            kind=jp.judge.kind,
            model=jp.judge.model,
            cases=jp.cases,
            already_labelled=jp.already_labelled,
        )
        for jp in plan.judges
    }


def answer_from_cache(ctx: RunContext) -> None:
    """Label every pair the plan found in the cache, in batched transactions (a
    pair another run labelled meanwhile is skipped)."""
    for jp in ctx.plan.judges:
        tally = ctx.tallies[jp.judge.name]
        rater = ctx.rater(jp)
        hits = group_pairs(jp.cache_hits)
        for i in range(0, len(hits), CACHE_BATCH):
            chunk = hits[i : i + CACHE_BATCH]
            stored = ctx.recorder.record_cached(
                rater,
                [(g.request_hash, g.case_ids, g.pairs[0].cached or {}) for g in chunk],
                ctx.plan.label_epoch,
            )
            tally.cache_hits += len(stored.labels)
            tally.done_elsewhere += stored.skipped
            ctx.count(tally, stored.labels)
        ctx.reporter.advance(jp.judge.name, len(jp.cache_hits))


def count_batched(ctx: RunContext) -> None:
    """Each judge's pairs that wait in open provider batches when the run ends: held
    by another live run when it polls them (it stores them), held by a batch whose
    results are missing, else waiting (a ``--batch`` run collects them)."""
    import time

    now = time.time()
    for jp in ctx.plan.judges:
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
            sub = subs.get(sub_id)
            if sub is not None and sub.state == "missing":  # held until recalled or abandoned
                tally.missing_in_batches += n
                continue
            poller = None if sub is None else sub.poller
            expires = 0.0 if sub is None else sub.poll_expires_at or 0.0
            if poller not in (None, ctx.owner) and expires > now and not owner_gone(str(poller)):
                tally.held_elsewhere += n
            else:
                tally.in_batches += n


def resolve_keys(plan: RunPlan, also: Sequence[str] = ()) -> dict[str, str | None]:
    """Each judge's API key, read now; one error before any call if one is missing.
    Judges with nothing to call need none, unless named in ``also`` (they poll
    provider batches)."""
    keys: dict[str, str | None] = {}
    for jp in plan.judges:
        if not jp.to_call and jp.judge.name not in also:
            keys[jp.judge.name] = None
            continue
        keys[jp.judge.name] = jp.judge.api_key()
        if jp.judge.kind == "local_llm" and jp.to_call:
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


def _batch_routes(plan: RunPlan, ws: Workspace) -> dict[str, tuple[str | None, str]]:
    """``judge -> (batch provider or None, why)`` for ``--batch`` (imports litellm
    only when some judge has something to submit or to collect)."""
    from tiap.judge.batch_api import batch_route

    routes: dict[str, tuple[str | None, str]] = {}
    for jp in plan.judges:
        open_subs = ws.submissions(
            rater=jp.judge.name, rubric_hash=plan.rubric.content_hash, open_only=True
        )
        if not jp.to_call and not open_subs:
            continue
        routes[jp.judge.name] = batch_route(jp.judge)
    return routes


async def execute(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    reporter: Reporter | None = None,
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
) -> RunSummary:
    """Carry out a plan: cache answers first, then the calls, in this process (each
    on its judge's route: :mod:`tiap.judge.call`). With ``batch``, judges whose
    provider has a batch API go through it (:mod:`tiap.judge.batch_run`).

    Groups are claimed before they are called and again right before each
    request is sent (leases of ``lease_s`` seconds, at least the panel's
    ``timeout_s`` plus a second: :func:`~tiap.judge.claims.lease_for`; renewed by
    a heartbeat while the run works, released when it ends, also on Ctrl-C), and
    the budget ``max_cost`` is shared with overlapping runs
    (:mod:`tiap.judge.claims`).
    """
    check_budget_prices(plan, max_cost)
    lease_s = lease_for(plan.panel, lease_s)
    routes = _batch_routes(plan, ws) if batch is not None else {}
    batched = [jp for jp in plan.judges if (routes.get(jp.judge.name) or (None,))[0]]
    direct = [jp for jp in plan.judges if jp not in batched and jp.to_call]
    keys = resolve_keys(plan, also=[jp.judge.name for jp in batched])
    reporter = reporter or NoReporter()
    for jp in plan.judges:
        # this run's work: pairs waiting in batches only when it collects them
        work = len(jp.pairs) - (0 if jp in batched else len(jp.in_batches))
        if work:  # a judge with nothing to do draws no bar
            reporter.start(jp.judge.name, work)
    reap_gone(ws)  # runs of this host that were killed hold nothing any more
    owner = new_owner()
    scope = budget_scope(plan.panel.name, plan.rubric.content_hash, plan.subset)
    ledger = Ledger(ws, owner, scope, max_cost, lease_s)
    keeper = Keeper(ws, owner, lease_s)
    ctx = RunContext(
        ws=ws,
        plan=plan,
        owner=owner,
        ledger=ledger,
        recorder=Recorder(
            ws,
            plan.rubric,
            owner=owner,
            ledger=ledger,
            secrets=[k for k in keys.values() if k],
            max_reply_bytes=plan.panel.max_reply_bytes,
        ),
        reporter=reporter,
        keys=keys,
        tallies=_tallies(plan),
        lease_s=lease_s,
        secrets=tuple(k for k in keys.values() if k),
    )
    for name, (provider, why) in routes.items():
        ctx.tallies[name].route_note = why
        ctx.tallies[name].route = "batch" if provider else "direct"
    stopped = False
    try:
        answer_from_cache(ctx)
        with runtime.calls_in_flight():
            async with contextlib.AsyncExitStack() as stack:
                if batched or direct:
                    await stack.enter_async_context(call_session())
                with keeper.running():
                    stopped = await _run_judges(ctx, direct, batched, routes, batch)
        count_batched(ctx)
    finally:
        keeper.release()
        used = ledger.used()
        ledger.close()
    summary = RunSummary(
        panel=plan.panel.name,
        rubric_id=plan.rubric.id,
        rubric_hash=plan.rubric.content_hash,
        subset=plan.subset,
        cases=plan.cases,
        judges=[ctx.tallies[jp.judge.name] for jp in plan.judges],
        max_cost_usd=max_cost,
        stopped_by_budget=stopped,
        owner=owner,
        budget=ledger.budget if ledger.opened else None,
        budget_used_usd=None if used is None else round(used, 10),
        batches=sorted(ctx.batches, key=lambda b: b.submission),
    )
    return summary.finish()


async def _run_judges(
    ctx: RunContext,
    direct: Sequence[JudgePlan],
    batched: Sequence[JudgePlan],
    routes: dict[str, tuple[str | None, str]],
    options: BatchOptions | None,
) -> bool:
    """Every judge at once; whether the budget stopped one with work left."""
    import asyncio

    runners: list[Any] = [DirectJudge(ctx, jp, jp.groups) for jp in direct]
    if batched and options is not None:
        from tiap.judge.batch_run import BatchJudge

        for jp in batched:
            provider = routes[jp.judge.name][0] or ""
            runners.append(BatchJudge(ctx, jp, provider, options))
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

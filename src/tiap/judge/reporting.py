"""A judge run that reports its progress (:class:`tiap.progress.Reporter`: a part
per judge with work to do, and each provider batch while it runs), from async or
synchronous code. What shows the progress is the caller's: the command line
hands in its display (:mod:`tiap.cli.progress_display`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tiap.progress import NoReporter

if TYPE_CHECKING:
    from tiap.cases import Workspace
    from tiap.judge.batch_run import BatchOptions
    from tiap.judge.plan import RunPlan
    from tiap.judge.routes import OnRouteLoad
    from tiap.judge.summary import RunSummary
    from tiap.progress import Reporter


#: the warning Python gives for a coroutine that was never awaited.
UNAWAITED = "coroutine .* was never awaited"
#: what a display calls a judge run (its parts: the judges with work to do)
RUN_NAME = "judging"


async def execute_with_progress(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    progress: bool = True,
    reporter: Reporter | None = None,
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> RunSummary:
    """Carry out a plan (:func:`tiap.judge.runner.execute`), its progress told to
    ``reporter`` as the parts of one run, ``judging`` (none when ``progress`` is
    false, or no reporter is given); ``on_route_load`` is told before a route loads
    its library (e.g. litellm: a few seconds)."""
    from tiap.judge.runner import execute

    shown = reporter if progress and reporter is not None else NoReporter()
    with shown.parts(RUN_NAME), _no_unawaited_warnings():
        return await execute(
            ws,
            plan,
            max_cost=max_cost,
            reporter=shown,
            batch=batch,
            lease_s=lease_s,
            on_route_load=on_route_load,
        )


def run_with_progress(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    progress: bool = True,
    reporter: Reporter | None = None,
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
    on_route_load: OnRouteLoad | None = None,
) -> RunSummary:
    """:func:`execute_with_progress` from synchronous code, also inside a running
    event loop (see :func:`tiap.judge.runner.run_on_workspace`)."""
    from tiap.judge.runner import run_on_workspace

    # also around the loop's shutdown, where cancelled calls are cleaned up
    with _no_unawaited_warnings():
        return run_on_workspace(
            ws,
            lambda w: execute_with_progress(
                w,
                plan,
                max_cost=max_cost,
                progress=progress,
                reporter=reporter,
                batch=batch,
                lease_s=lease_s,
                on_route_load=on_route_load,
            ),
        )


@contextmanager
def _no_unawaited_warnings() -> Iterator[None]:
    """On Ctrl-C, asyncio cancels the calls in flight; litellm has by then made some
    coroutines it never awaits, and Python warns about each one: not while this runs
    (the warning filters are restored afterwards)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", UNAWAITED, RuntimeWarning)
        yield

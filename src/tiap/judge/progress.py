"""A progress bar per judge with work to do (rich), on stderr, and one per
provider batch while it runs."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tiap.text import inert, inert_console

if TYPE_CHECKING:
    from tiap.cases import Workspace
    from tiap.judge.batch_run import BatchOptions
    from tiap.judge.plan import RunPlan
    from tiap.judge.reporting import Reporter
    from tiap.judge.summary import RunSummary


#: the warning Python gives for a coroutine that was never awaited.
UNAWAITED = "coroutine .* was never awaited"


class RichProgress:
    """Use as a context manager around a run; implements the runner's reporter."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}", style="bold", justify="left", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=inert_console(stderr=True),  # judge names, batch notes: data
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def start(self, judge: str, total: int) -> None:
        """A bar for a judge with ``total`` pairs to do (none for nothing to do)."""
        if self._progress is not None and total > 0:
            self._tasks[judge] = self._progress.add_task(inert(judge), total=total)

    def advance(self, judge: str, n: int = 1) -> None:
        task = self._tasks.get(judge)
        if self._progress is not None and n and task is not None:
            self._progress.advance(task, n)

    def batch(self, key: str, text: str, completed: int, total: int) -> None:
        """A provider batch's status and its answered lines (shown while it runs)."""
        if self._progress is None:
            return
        task = self._tasks.get(key)
        if task is None:
            self._tasks[key] = self._progress.add_task(inert(text), total=max(total, 1))
        else:
            self._progress.update(
                task, description=inert(text), completed=completed, total=max(total, 1)
            )


async def execute_with_progress(
    ws: Workspace,
    plan: RunPlan,
    *,
    max_cost: float | None = None,
    progress: bool = True,
    reporter: Reporter | None = None,
    batch: BatchOptions | None = None,
    lease_s: float | None = None,
) -> RunSummary:
    """Carry out a plan (:func:`tiap.judge.runner.execute`) with a progress bar per
    judge on stderr, or none when ``progress`` is false; ``reporter`` (e.g. plain
    lines outside a terminal) replaces the bars."""
    from tiap.judge.runner import execute

    with RichProgress(enabled=progress and reporter is None) as bars, _no_unawaited_warnings():
        return await execute(
            ws,
            plan,
            max_cost=max_cost,
            reporter=reporter if reporter is not None else bars,
            batch=batch,
            lease_s=lease_s,
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

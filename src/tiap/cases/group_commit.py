"""One writer for a run's results: a thread of its own, on a connection of its own,
committing results in groups.

A judge run stores each answered call (its ``model_calls`` row, its labels, its
budget settlement and the release of its leases) through a :class:`GroupWriter`
rather than in a transaction of its own on the event loop: the writer's thread
takes the results queued so far and commits them in **one transaction**, so the
pages a call touches (the labels' indexes, the leases, the ledger row) are
written once per group instead of once per call, and the waits for the
workspace's lock and the WAL's checkpoints happen off the event loop.

A result counts as stored when its group has committed: that is when its
awaitable (:meth:`GroupWriter.write`) returns. The bound on what a crash loses is
set by two constants:

- :data:`GROUP_CALLS` (64): at most this many calls' results are queued or being
  written at any time; a call that returns while they are is held (it sends no
  further request) until a group commits;
- :data:`GROUP_WAIT_S` (1 ms): a group is written as soon as it holds
  :data:`GROUP_CALLS` calls, and at the latest this long after its first result
  was queued (or at once when the run asks, :meth:`GroupWriter.flush`); while the
  writer writes one group the next one fills. The wait is short because a judge's
  call keeps its concurrency slot until its group has committed: every call's time
  includes it (at 10 ms, groups were larger but the judge throughput benchmark's
  calls took about a tenth longer than at 1-2 ms; the writer's CPU was the same).

So a ``kill -9`` loses at most 64 answered calls, each answered less than 1 ms
before its group's transaction began (plus the time SQLite takes to write the
group before it and its own, longer only while another process holds the
workspace's lock), besides the calls in flight. A judge run holds a call's
concurrency slot until its group has committed, so what a crash can lose of one
judge (in flight, or answered and not yet committed) is also never more than
that judge's concurrency. Their pairs are still leased to the killed run: another run takes them
over when the leases expire (at once on this host, whose processes can be looked
at) and calls them again; the killed run's ledger row keeps their reservations,
which count as spent once the run is known to be gone (see
:meth:`~tiap.cases.leases.LeaseStore.reap_owner`). Nothing a committed group
stored is asked again. Results that are no paid call (answers from the cache,
provider batch lines: the batch's files are read again) are written the same way
but do not count against :data:`GROUP_CALLS`.

Within a group, results of one kind queued one after another (:class:`Batch`
jobs with the same ``store``: the calls of a judge run) are stored together,
``store(ws, items)``, with a statement per kind of row for all of them rather
than per result; each statement lets the event loop's thread run while SQLite
works, and waits for it to give the interpreter back, so the fewer a group
takes, the sooner it commits.

A group is one transaction: when one of its results cannot be stored (the
workspace refuses it, the disk is full), none of the group is, and the error is
raised wherever one of its results is awaited (the run stops; its calls are made
again by the next run, like those of a killed run). The jobs are functions of the
writer's :class:`~tiap.cases.workspace.Workspace`, so the SQL stays in this
package.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, Generic, TypeVar

from tiap.cases.workspace import Workspace
from tiap.errors import TiapError

__all__ = ["GROUP_CALLS", "GROUP_WAIT_S", "Batch", "GroupWriter", "Job"]

#: the most calls whose results are queued or being written at any time.
GROUP_CALLS = 64
#: the longest a queued result waits before its group is written (seconds).
GROUP_WAIT_S = 0.001

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741
#: what the writer runs for one result: a function of its workspace handle.
Job = Callable[[Workspace], T]


@dataclass(frozen=True)
class Batch(Generic[I, T]):
    """A job stored together with the jobs of the same ``store`` queued right
    before or after it: ``store(ws, items)`` stores the items of such a run, in
    order, and returns one result per item."""

    store: Callable[[Workspace, Sequence[I]], Sequence[T]]
    item: I


@dataclass
class _Queued(Generic[T]):
    job: Job[T] | Batch[Any, T]
    calls: int
    future: asyncio.Future[T]
    queued_at: float
    urgent: bool = False
    result: Any = None
    error: BaseException | None = None


@dataclass
class _Queue:
    """What the event loop hands the writer thread (under ``cond``)."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    jobs: deque[_Queued[Any]] = field(default_factory=deque)
    closing: bool = False
    #: the calls and the urgent jobs in ``jobs``
    calls: int = 0
    urgent: int = 0


class GroupWriter:
    """The run's one writer (see the module docstring). Made and used on one event
    loop: :meth:`start`, then :meth:`write` (or :meth:`enqueue`) from its tasks,
    :meth:`flush` to have everything queued committed now, :meth:`close` at the end
    (it commits what is queued first)."""

    def __init__(
        self,
        path: str | Path,
        *,
        group_calls: int = GROUP_CALLS,
        group_wait_s: float = GROUP_WAIT_S,
    ) -> None:
        if group_calls < 1 or group_wait_s < 0:
            raise ValueError("a group holds at least one call and waits no negative time")
        self.path = Path(path)
        self.group_calls = group_calls
        self.group_wait_s = group_wait_s
        self.groups = 0  # groups committed (for tests and figures)
        self._queue = _Queue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uncommitted = 0  # calls queued or being written (event loop side)
        self._room: asyncio.Event | None = None
        self._failed: BaseException | None = None
        self._opened = threading.Event()

    # --------------------------------------------------------------- event loop

    async def start(self) -> GroupWriter:
        """Start the writer's thread (from the event loop that will use it), once
        its connection is open."""
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Event()
        self._thread = threading.Thread(target=self._main, name="tiap-group-writer", daemon=True)
        self._thread.start()
        await asyncio.to_thread(self._opened.wait)
        if self._failed is not None:
            self._thread = None
            raise self._failed
        return self

    async def enqueue(
        self, job: Job[T] | Batch[Any, T], *, calls: int = 1, urgent: bool = False
    ) -> asyncio.Future[T]:
        """Queue ``job`` (``calls``: the paid calls it stores) once there is room for
        it; its future is done when its group has committed."""
        if self._loop is None or self._room is None:
            raise RuntimeError("the writer is not started")
        while calls and self._uncommitted and self._uncommitted + calls > self.group_calls:
            self._room.clear()
            await self._room.wait()
        if self._failed is not None:
            raise TiapError(f"{self.path}: results can no longer be stored ({self._failed})")
        self._uncommitted += calls
        future: asyncio.Future[T] = self._loop.create_future()
        queued = _Queued(job, calls, future, time.monotonic(), urgent)
        q = self._queue
        with q.cond:
            idle = not q.jobs
            q.jobs.append(queued)
            q.calls += calls
            q.urgent += urgent
            # the writer is woken when it has something to do now: a first job (it
            # then waits for the group's deadline by itself), a full group, a flush
            if idle or urgent or q.calls >= self.group_calls:
                q.cond.notify()
        return future

    async def write(
        self, job: Job[T] | Batch[Any, T], *, calls: int = 1, urgent: bool = False
    ) -> T:
        """Queue ``job`` and wait until its group has committed; its result.
        ``urgent``: its group is written at once (with what is queued before it)."""
        return await (await self.enqueue(job, calls=calls, urgent=urgent))

    async def flush(self) -> None:
        """Commit what is queued now, and wait for it."""
        await (await self.enqueue(_nothing, calls=0, urgent=True))

    async def close(self) -> None:
        """Commit what is queued and stop the thread (waiting without blocking the
        loop)."""
        thread = self._thread
        if thread is None:
            return
        with self._queue.cond:
            self._queue.closing = True
            self._queue.cond.notify()
        await asyncio.to_thread(thread.join)
        self._thread = None
        await asyncio.sleep(0)  # the last group's results are handed over

    def _settle(self, group: list[_Queued[Any]]) -> None:
        """On the loop: the group's results, and room for more."""
        for queued in group:
            self._uncommitted -= queued.calls
            if queued.future.done():  # its waiter was cancelled: the result is stored all the same
                continue
            if queued.error is not None:
                queued.future.set_exception(queued.error)
            else:
                queued.future.set_result(queued.result)
        if self._room is not None:
            self._room.set()

    # ------------------------------------------------------------ writer thread

    def _main(self) -> None:
        try:
            ws = Workspace(self.path, create=False)
        except BaseException as exc:
            self._failed = exc
            self._opened.set()
            return
        self._opened.set()
        with ws:
            while True:
                group = self._next_group()
                if not group:
                    break
                self._commit(ws, group)

    def _next_group(self) -> list[_Queued[Any]]:
        """The next group to write: waits for a first result, then until the group
        is full, :data:`GROUP_WAIT_S` after that result, or a flush (empty: closed
        and nothing left)."""
        q = self._queue
        with q.cond:
            while not q.jobs and not q.closing:
                q.cond.wait()
            if not q.jobs:
                return []
            deadline = q.jobs[0].queued_at + self.group_wait_s
            while not q.closing and q.calls < self.group_calls and not q.urgent:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                q.cond.wait(left)
            group: list[_Queued[Any]] = []
            calls = 0
            while q.jobs and (calls + q.jobs[0].calls <= self.group_calls or not group):
                job = q.jobs.popleft()
                calls += job.calls
                q.urgent -= job.urgent
                group.append(job)
            q.calls -= calls
            return group

    def _commit(self, ws: Workspace, group: list[_Queued[Any]]) -> None:
        try:
            with ws.transaction():
                for store, run in groupby(group, key=_store_of):
                    _run(ws, store, list(run))
        except BaseException as exc:  # the group did not commit: none of it is stored
            for queued in group:
                queued.error = exc
        self.groups += 1
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._settle, group)


def _nothing(ws: Workspace) -> None:
    return None


def _store_of(queued: _Queued[Any]) -> Any:
    """What runs a queued job: a batch's ``store``, else the job itself."""
    job = queued.job
    return job.store if isinstance(job, Batch) else job


def _run(ws: Workspace, store: Any, run: list[_Queued[Any]]) -> None:
    """Run consecutive jobs of one ``store`` (batches, together) or one function."""
    items = [queued.job.item for queued in run if isinstance(queued.job, Batch)]
    if not items:
        for queued in run:
            queued.result = store(ws)
        return
    results = store(ws, items)
    if len(results) != len(run):
        raise TiapError(f"a batch store returned {len(results)} results for {len(run)} items")
    for queued, result in zip(run, results, strict=True):
        queued.result = result

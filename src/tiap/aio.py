"""Running tiap's coroutines from synchronous code, with or without a running loop.

tiap's long-running APIs are coroutines (``await execute(...)``,
``await run_audit_async(...)``); each has a synchronous wrapper built on
:func:`run_sync`. Without an event loop running in the calling thread (a
script, the command line), the coroutine runs with :func:`asyncio.run`, here.
With one (a Jupyter notebook, an ``async def`` caller), ``asyncio.run`` is not
allowed, so the coroutine runs to completion on a private loop in a worker
thread while the caller waits; its result is returned and its exception
re-raised in the caller. Ctrl-C while waiting cancels the coroutine, waits for
it to finish cancelling (so what it stored is committed and its files are
closed) and raises :class:`KeyboardInterrupt` in the caller.

``make`` is called in the thread that runs the coroutine: objects that belong
to one thread (a SQLite connection) can be opened there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["loop_running", "run_sync"]

T = TypeVar("T")

#: how often a caller waiting for the private loop checks for Ctrl-C (seconds).
_POLL_S = 0.05


def loop_running() -> bool:
    """True when an event loop is running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class _Private(Generic[T]):
    started: threading.Event
    finished: threading.Event
    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None
    result: T | None = None
    error: BaseException | None = None
    done: bool = False


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` to completion and return its result (see the
    module doc for where it runs)."""
    if not loop_running():
        return asyncio.run(make())
    state: _Private[T] = _Private(started=threading.Event(), finished=threading.Event())

    async def main() -> T:
        state.loop = asyncio.get_running_loop()
        state.task = asyncio.current_task()
        state.started.set()
        return await make()

    def target() -> None:
        try:
            state.result = asyncio.run(main())
            state.done = True
        except BaseException as exc:  # re-raised in the caller's thread
            state.error = exc
        finally:
            state.started.set()
            state.finished.set()

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(target,), name="tiap-private-loop", daemon=True
    )
    thread.start()
    # Waits are on an event, in short steps: a Ctrl-C delivered to another thread is
    # seen between them (an interrupted Thread.join can wrongly mark the thread done).
    try:
        while not state.finished.wait(_POLL_S):
            pass
    except KeyboardInterrupt:
        state.started.wait()
        loop, task = state.loop, state.task
        if loop is not None and task is not None and not loop.is_closed():
            # the loop may close between the check and the call: then it is done
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        while not state.finished.wait(_POLL_S):  # a second Ctrl-C stops waiting
            pass
        thread.join()
        raise
    thread.join()
    if state.error is not None:
        raise state.error
    if not state.done:  # pragma: no cover - the thread always sets one of them
        raise RuntimeError("the coroutine did not finish")
    return state.result  # type: ignore[return-value]

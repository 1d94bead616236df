"""run_sync: coroutines from synchronous code, with and without a running event loop."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time

import pytest

from tiap.aio import loop_running, run_sync


async def _where() -> tuple[int, int]:
    """(thread id, id of the running loop)."""
    await asyncio.sleep(0)
    return threading.get_ident(), id(asyncio.get_running_loop())


def test_without_a_loop_it_runs_here() -> None:
    assert not loop_running()
    thread, _ = run_sync(_where)
    assert thread == threading.get_ident()


async def test_inside_a_running_loop_it_runs_on_a_private_loop_and_returns() -> None:
    assert loop_running()
    outer = id(asyncio.get_running_loop())
    thread, loop = run_sync(_where)
    assert thread != threading.get_ident()
    assert loop != outer
    # the caller's loop is still the running one, and usable
    assert id(asyncio.get_running_loop()) == outer
    await asyncio.sleep(0)


async def test_inside_a_running_loop_exceptions_reach_the_caller() -> None:
    async def fail() -> None:
        await asyncio.sleep(0)
        raise ValueError("from the coroutine")

    with pytest.raises(ValueError, match="from the coroutine"):
        run_sync(fail)


def test_ctrl_c_while_waiting_cancels_the_coroutine_and_raises() -> None:
    """A KeyboardInterrupt in the waiting caller (as Ctrl-C in a notebook) cancels the
    coroutine on the private loop, waits until it has cleaned up, and re-raises."""
    started = threading.Event()
    cleaned: list[str] = []

    async def long_job() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.append("finally ran")

    def interrupt_when_started() -> None:
        started.wait(10)
        time.sleep(0.1)
        _thread.interrupt_main()

    async def caller() -> None:
        run_sync(long_job)

    # a plain loop (asyncio.run would install its own Ctrl-C handler)
    loop = asyncio.new_event_loop()
    helper = threading.Thread(target=interrupt_when_started)
    helper.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(caller())
    finally:
        helper.join()
        loop.close()
    assert time.perf_counter() - t0 < 10
    assert cleaned == ["finally ran"]
    assert not [t for t in threading.enumerate() if t.name == "tiap-private-loop"]

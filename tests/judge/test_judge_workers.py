"""Worker processes for provider calls: how many a run uses, calls answered by a
separate process, and a worker that dies mid-call ending the run with one line."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from judge_support import SECRET

from support.loopback import LoopbackServer, Script, label_reply
from tiap.cases import Workspace
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run
from tiap.judge import runner as runner_module
from tiap.judge.runner import pool_size
from tiap.judge.workers import CallPool
from tiap.rubric import load_rubric


def test_pool_size_explicit_automatic_and_invalid(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, monkeypatch
) -> None:
    db = make_workspace(5)
    panel = load_panel(write_panel(loopback.url, judges=("a", "b"), concurrency=3))
    with Workspace(db) as ws:
        plan = plan_run(ws, panel, load_rubric(), subset="val")
    assert sum(len(jp.to_call) for jp in plan.judges) == 10
    assert pool_size(plan, 0) == 0
    assert pool_size(plan, 3) == 3
    with pytest.raises(TiapError, match="--workers"):
        pool_size(plan, -1)
    # automatic: in process for a small run ...
    assert pool_size(plan, None) == 0
    # ... one worker per core (at most 4, none on one core) for 10+ calls with 6+ in
    # flight (2 judges x concurrency 3) ...
    monkeypatch.setattr(runner_module, "AUTO_WORKERS_MIN_CALLS", 10)
    monkeypatch.setattr(runner_module, "AUTO_WORKERS_MIN_IN_FLIGHT", 6)
    cores = len(os.sched_getaffinity(0))
    assert pool_size(plan, None) == (min(cores, 4) if cores >= 2 else 0)
    # ... and in process when fewer calls, or fewer in flight, than that
    monkeypatch.setattr(runner_module, "AUTO_WORKERS_MIN_CALLS", 11)
    assert pool_size(plan, None) == 0
    monkeypatch.setattr(runner_module, "AUTO_WORKERS_MIN_CALLS", 10)
    monkeypatch.setattr(runner_module, "AUTO_WORKERS_MIN_IN_FLIGHT", 7)
    assert pool_size(plan, None) == 0


def test_pool_answers_from_another_process_and_a_dead_worker_is_one_error(
    write_panel, key_env
) -> None:
    script = Script(default=label_reply("partial", delay_s=0.0))
    with LoopbackServer(script) as server:
        panel = load_panel(write_panel(server.url))
        kwargs = {
            "model": "openai/gpt-4o-mini",
            "api_base": server.url,
            "messages": [{"role": "user", "content": "<question>\nq1\n</question>"}],
            "temperature": 0,
            "max_tokens": 50,
            "timeout": 5.0,
            "max_retries": 0,
        }

        async def scenario() -> tuple[object, list[int], BaseException | None, bytes]:
            async with CallPool(1, panel, {"judge-a": SECRET}) as pool:
                pids = pool.pids
                cmdline = Path(f"/proc/{pids[0]}/cmdline").read_bytes()
                first = await pool.call("judge-a", kwargs)
                # a request the worker cannot even start is one error, not a hang
                with pytest.raises(TiapError, match="a judge worker failed: ValueError"):
                    await asyncio.wait_for(pool.call("judge-a", "not kwargs"), timeout=20)  # type: ignore[arg-type]
                server.delay_s = 3.0
                slow = asyncio.create_task(pool.call("judge-a", kwargs))
                await asyncio.sleep(0.5)
                os.kill(pids[0], signal.SIGKILL)
                try:
                    await asyncio.wait_for(slow, timeout=20)
                    error: BaseException | None = None
                except TiapError as exc:
                    error = exc
                return first, pids, error, cmdline

        first, pids, error, cmdline = asyncio.run(scenario())
    assert len(pids) == 1
    assert pids[0] != os.getpid()
    assert first.ok
    assert '"partial"' in (first.content or "")
    assert first.attempts == 1
    assert (first.input_tokens or 0) > 0
    assert (first.output_tokens or 0) > 0
    # the call in flight when its worker died fails with one line, not a hang
    assert isinstance(error, TiapError)
    assert "exited unexpectedly" in str(error)
    assert SECRET not in str(error)
    # the key reached the provider through the pipe, never the command line
    assert b"tiap.judge.workers" in cmdline
    assert SECRET.encode() not in cmdline
    assert len(server.requests) == 2
    assert all(r.authorization == f"Bearer {SECRET}" for r in server.requests)

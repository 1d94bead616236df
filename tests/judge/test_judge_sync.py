"""The judge's synchronous wrappers work inside a running event loop (a notebook):
the calls are made and the labels stored, visible on the caller's connection."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tiap.cases import Workspace
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.reporting import run_with_progress
from tiap.rubric import load_rubric


async def test_run_panel_inside_a_running_loop_stores_the_labels(make_workspace) -> None:
    asyncio.get_running_loop()  # this test runs inside an event loop
    db = make_workspace(4)
    panel = load_panel("offline")
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
        assert summary.calls == 4 * len(panel.judges)
        assert summary.valid == summary.calls
        stored = ws.latest_labels(rater_kind="judge")
        assert len(stored) == 4 * len(panel.judges)
        assert {r.rater for r in stored} == {j.name for j in panel.judges}
        hashes = {r.request_hash for r in stored if r.request_hash}
        assert len(ws.cached_responses(sorted(hashes))) == summary.calls
        # the caller's loop is still usable
        await asyncio.sleep(0)
        # run again: every pair already labelled, nothing called
        again = run_panel(ws, panel, load_rubric(), subset="val")
        assert (again.calls, again.cache_hits) == (0, 0)


async def test_run_with_progress_inside_a_running_loop(make_workspace) -> None:
    db = make_workspace(3)
    panel = load_panel("offline")
    with Workspace(db) as ws:
        plan = plan_run(ws, panel, load_rubric(), subset="val")
        summary = run_with_progress(ws, plan, progress=False)
        assert summary.valid == 3 * len(panel.judges)
        assert len(ws.latest_labels(rater_kind="judge")) == 3 * len(panel.judges)


async def test_errors_inside_a_running_loop_reach_the_caller(make_workspace) -> None:
    db = make_workspace(2)
    with Workspace(db) as ws, pytest.raises(TiapError, match="must not be negative"):
        run_panel(ws, load_panel("offline"), load_rubric(), subset="val", max_cost=-1.0)


def test_run_panel_without_a_loop_runs_in_this_thread(make_workspace, monkeypatch) -> None:
    import tiap.judge.runner as runner

    seen: list[int] = []
    real = runner.execute

    async def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(threading.get_ident())
        return await real(*args, **kwargs)

    monkeypatch.setattr(runner, "execute", spy)
    db = make_workspace(2)
    with Workspace(db) as ws:
        summary = run_panel(ws, load_panel("offline"), load_rubric(), subset="val")
    assert summary.valid == 10
    assert seen == [threading.get_ident()]

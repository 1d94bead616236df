"""Library calls leave the process as they found it; tiap.runtime.tuned() applies the
process tuning only inside its block and restores everything on exit.

Checked after reading a bundle, judging through litellm (a panel on the litellm
route against a loopback server) and a terminal-app session: the garbage collector
(enabled, frozen objects, thresholds), the environment, and litellm's globals that
tiap's calls need.
"""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from support.loopback import LoopbackServer, Script
from tiap import runtime
from tiap.cases import Workspace
from tiap.cases.extract import extract_cases
from tiap.cases.sample import sample_subset
from tiap.judge import execute, load_panel, plan_run
from tiap.rubric import load_rubric
from tiap.traces.bundle import read_bundle


def _litellm_globals() -> tuple[Any, ...] | None:
    """What tiap's calls set in litellm while they run (None before litellm is imported)."""
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return None
    return (
        list(litellm.custom_provider_map or []),
        list(litellm.provider_list),
        list(litellm._custom_providers),
        litellm.suppress_debug_info,
        litellm.cache,
        logging.getLogger("LiteLLM").level,
    )


def _new_objects(n: int = 20_000) -> list[list[int]]:
    """Containers the collector tracks (freezing them would add ``n`` to the count)."""
    return [[i] for i in range(n)]


def process_state() -> dict[str, Any]:
    return {
        "gc_enabled": gc.isenabled(),
        "gc_frozen": gc.get_freeze_count(),
        "gc_threshold": gc.get_threshold(),
        "environ": dict(os.environ),
        "litellm": _litellm_globals(),
    }


@pytest.fixture
def clean_gc() -> Iterator[None]:
    """Start with nothing frozen and default-like thresholds; restore the process after."""
    enabled, threshold, frozen = gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()
    gc.unfreeze()
    gc.enable()
    yield
    if frozen:
        gc.freeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.fixture
def workspace(tmp_path: Path, sample_bundle_dir: Path) -> Path:
    """The sample bundle's contested credits, with a 6-case validation subset."""
    path = tmp_path / "w.sqlite"
    with Workspace(path) as ws:
        extract_cases(read_bundle(sample_bundle_dir), ws)
        sample_subset(ws, name="validation", n=6, overlap=2, seed=1337)
    return path


KEY_ENV = "TIAP_TEST_RUNTIME_KEY"


@pytest.fixture
def litellm_panel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Two judges on the litellm route, answering from a loopback server."""
    monkeypatch.setenv(KEY_ENV, "sk-test-runtime")
    with LoopbackServer(Script()) as server:
        lines = ['name = "lite"', "temperature = 0", "max_tokens = 50", "timeout_s = 10"]
        for name in ("a", "b"):
            lines += [
                "[[judges]]",
                f'name = "{name}"',
                'model = "openai/gpt-4o-mini"',
                'route = "litellm"',
                f'api_base = "{server.url}"',
                f'api_key_env = "{KEY_ENV}"',
            ]
        path = tmp_path / "lite.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        yield path


async def _judge(path: Path, panel: Path) -> int:
    with Workspace(path) as ws:
        plan = plan_run(ws, load_panel(str(panel)), load_rubric(), subset="validation")
        summary = await execute(ws, plan)
    return summary.calls


def test_read_bundle_leaves_the_process_alone(sample_bundle_dir: Path, clean_gc: None) -> None:
    before = process_state()
    bundle = read_bundle(sample_bundle_dir)
    assert bundle.queries
    assert process_state() == before
    gc.disable()
    before = process_state()
    read_bundle(sample_bundle_dir)
    assert process_state() == before


async def test_judging_through_litellm_leaves_the_process_alone(
    workspace: Path, litellm_panel: Path, clean_gc: None
) -> None:
    before = process_state()
    calls = await _judge(workspace, litellm_panel)
    assert calls == 12  # 6 cases x 2 judges, through litellm
    after = process_state()
    assert after == {**before, "litellm": after["litellm"]}
    if before["litellm"] is not None:  # imported by an earlier test: compare it too
        assert after == before
    # litellm is imported now: a second run must leave its globals as they are
    import litellm

    with closing(sqlite3.connect(workspace)) as conn, conn:
        conn.execute("DELETE FROM labels")
        conn.execute("DELETE FROM model_calls")
    litellm.suppress_debug_info = False
    before = process_state()
    assert await _judge(workspace, litellm_panel) == 12
    assert process_state() == before


async def test_a_terminal_app_session_leaves_the_process_alone(
    workspace: Path, clean_gc: None
) -> None:
    from tiap.annotate.session import AnnotationSession
    from tiap.annotate.tui.app import AnnotateApp

    before = process_state()
    with Workspace(workspace) as ws:
        app = AnnotateApp(AnnotationSession(ws, load_rubric(), "alice", subset="validation"))
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press("1")
            await pilot.pause()
        assert len(ws.latest_labels(raters=["alice"])) == 1
    assert process_state() == before


def test_tuned_applies_inside_and_restores_on_exit(sample_bundle_dir: Path, clean_gc: None) -> None:
    before = process_state()
    with runtime.tuned():
        assert runtime.active()
        with runtime.bulk_read():
            assert not gc.isenabled()  # paused while records are read
        assert gc.isenabled()
        read_bundle(sample_bundle_dir)
        assert gc.get_freeze_count() == 0  # handed to the oldest generation, not frozen
        with runtime.calls_in_flight():
            assert gc.get_threshold()[0] == runtime.CALLS_GC_THRESHOLD
            with runtime.calls_in_flight():  # nested (several runs at once)
                assert gc.get_threshold()[0] == runtime.CALLS_GC_THRESHOLD
            assert gc.get_threshold()[0] == runtime.CALLS_GC_THRESHOLD
        assert gc.get_threshold() == before["gc_threshold"]
        runtime.long_lived("test")
        frozen = gc.get_freeze_count()
        assert frozen > 0
        fresh = _new_objects()
        runtime.long_lived("test")  # once per block and name: the new objects stay out
        assert gc.get_freeze_count() < frozen + len(fresh)
        with runtime.tuned():  # nested: the outer block restores
            pass
        assert gc.get_freeze_count() > frozen // 2
    assert not runtime.active()
    assert process_state() == before


def test_outside_tuned_the_marks_do_nothing(clean_gc: None) -> None:
    before = process_state()
    with runtime.bulk_read():
        assert gc.isenabled()
    with runtime.calls_in_flight():
        assert gc.get_threshold() == before["gc_threshold"]
    runtime.long_lived("test")
    assert process_state() == before


def test_tuned_keeps_a_callers_frozen_objects(clean_gc: None) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()
    with runtime.tuned():
        fresh = _new_objects()
        runtime.long_lived("test")  # the caller owns the frozen generation: not touched
        assert gc.get_freeze_count() < frozen + len(fresh)
    assert gc.get_freeze_count() > frozen // 2  # still frozen (counts drift as objects die)


async def test_judging_inside_tuned_freezes_litellm_until_the_block_ends(
    workspace: Path, litellm_panel: Path, clean_gc: None
) -> None:
    before = process_state()
    with runtime.tuned():
        assert await _judge(workspace, litellm_panel) == 12
        assert gc.get_freeze_count() > 0  # litellm's import-time objects
    after = process_state()
    assert after == {**before, "litellm": after["litellm"]}

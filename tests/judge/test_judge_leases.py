"""A request is sent only while its lease is held: checked right before each send
(a run stopped past its lease sends nothing another run did), renewed by a
heartbeat a busy event loop cannot hold up, at least as long as one attempt's
deadline; and runs that share a budget stay within it together, also when one
of them was stopped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from judge_support import execute, make_case, rows
from run_support import TiapProcess, wait_for
from test_judge_budget import worst_case

from support.loopback import Behaviour, LoopbackServer, Script, SeenRequest, label_reply, status
from tiap.cases import Workspace
from tiap.cli import main
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.claims import LEASE_S, lease_for
from tiap.judge.runner import execute as execute_plan
from tiap.judge.runner import run_on_workspace
from tiap.rubric import load_rubric

PRICES = (1000.0, 1000.0)  # $0.001 per token in and out
#: one attempt's deadline in these panels, and the shortest lease it allows
TIMEOUT_S = 2.0
LEASE = str(TIMEOUT_S + 1.0)
REPLY = json.dumps({"rationale": "scripted", "label": "supports"})


class HeldServer(LoopbackServer):
    """Holds its replies while ``holding`` is set (the requests are counted at once)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(Script(default=label_reply("supports")), **kwargs)
        self.holding = threading.Event()
        self.holding.set()

    async def _respond(self, request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
        while self.holding.is_set():
            await asyncio.sleep(0.01)
        return await super()._respond(request, seen, behaviour)


def served_cost(server: LoopbackServer) -> float:
    """What the requests the server answered cost: its token counts (prompt
    characters / 4, reply characters / 4) at $0.001 per token."""
    total = 0
    for seen in server.requests:
        chars = sum(len(str(m.get("content", ""))) for m in seen.body["messages"])
        total += max(1, chars // 4) + max(1, len(REPLY) // 4)
    return total * 0.001


@contextmanager
def stopped(proc: TiapProcess) -> Iterator[None]:
    """The process stopped (SIGSTOP) inside the block, going on (SIGCONT) after it."""
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)


def leases_of(db: Path, owner: str) -> list[tuple[str, float]]:
    return rows(db, "SELECT case_id, expires_at FROM judge_leases WHERE owner = ?", (owner,))


def stop_while_two_calls_wait(db: Path, server: HeldServer, run: TiapProcess) -> str:
    """Once ``run`` has two calls in flight (the server holds their replies) and
    leases on the groups it queued, stop it; its replies are then let go, and this
    returns (with the run still stopped) once every lease it held has run out."""
    wait_for(
        lambda: server.in_flight == 2 and len(rows(db, "SELECT * FROM judge_leases")) > 2,
        120,
        [run],
    )
    (owner,) = {o for (o,) in rows(db, "SELECT owner FROM judge_leases")}
    os.kill(run.pid, signal.SIGSTOP)
    server.holding.clear()
    wait_for(lambda: all(e < time.time() for _, e in leases_of(db, owner)), 60)
    return owner


def test_a_run_stopped_past_its_lease_sends_nothing_another_run_did(
    make_workspace, write_panel, key_env
) -> None:
    n = 24
    db = make_workspace(n)
    with HeldServer() as server:
        panel = write_panel(server.url, concurrency=2, timeout_s=TIMEOUT_S)
        first = TiapProcess(
            "judge", "run", "--db", db, "--panel", panel, "--subset", "val", "--lease", LEASE
        )
        try:
            owner = stop_while_two_calls_wait(db, server, first)
            queued = len(leases_of(db, owner)) - 2
            assert queued > 0  # claimed, not sent yet
            # another run does everything meanwhile (it takes the lapsed leases over)
            with Workspace(db) as ws:
                other = run_panel(
                    ws, load_panel(panel), load_rubric(), subset="val", lease_s=float(LEASE)
                )
            assert other.calls == n
            before = server.count
        finally:
            os.kill(first.pid, signal.SIGCONT)
        assert first.wait() == 0, first.err
        # resumed, the stopped run sent none of its queued requests: they were done
        assert server.count == before == n + 2  # (its two calls in flight were made again)
        assert max(server.per_key.values()) == 2
    assert rows(db, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM labels") == [(n, n)]
    assert rows(db, "SELECT COUNT(*) FROM judge_leases") == [(0,)]


def test_runs_sharing_a_budget_stay_within_it_when_one_was_stopped(
    make_workspace, write_panel, key_env
) -> None:
    n = 24
    db = make_workspace(n)
    budget = 6 * worst_case(0, 50)  # room for a few of the 24 calls
    with HeldServer() as server:
        panel = write_panel(
            server.url,
            model="openai/priced",
            prices=PRICES,
            max_tokens=50,
            concurrency=2,
            timeout_s=TIMEOUT_S,
        )
        args = ["--subset", "val", "--lease", LEASE, "--max-cost", str(budget), "--json"]
        first = TiapProcess("judge", "run", "--db", db, "--panel", panel, *args)
        try:
            stop_while_two_calls_wait(db, server, first)
            # a run started while the first one is stopped, its leases lapsed, counts
            # what the first one has reserved for the two calls it is making
            with Workspace(db) as ws:
                other = run_panel(
                    ws,
                    load_panel(panel),
                    load_rubric(),
                    subset="val",
                    max_cost=budget,
                    lease_s=float(LEASE),
                )
            assert other.stopped_by_budget
            assert other.calls > 0
        finally:
            os.kill(first.pid, signal.SIGCONT)
        assert first.wait() == 3, first.err  # it stopped by the budget too
        assert json.loads(first.out)["stopped_by_budget"]
        # what the provider answered, and what the ledger says was spent, is within
        # the one budget both runs were given
        assert 0 < served_cost(server) <= budget + 1e-9
    spent = rows(db, "SELECT SUM(spent_usd), SUM(reserved_usd) FROM budget_ledger")
    assert spent[0][0] <= budget + 1e-9
    assert spent[0][1] == 0


def test_the_heartbeat_renews_leases_while_the_event_loop_is_busy(
    make_workspace, write_panel, key_env
) -> None:
    """A long synchronous step on the run's event loop (here: a progress callback
    that does not return) must not let its leases run out."""
    db = make_workspace(20)
    seen: list[bool] = []

    class Busy:
        def start(self, judge: str, total: int) -> None:
            pass

        def advance(self, judge: str, n: int = 1) -> None:
            if seen or not rows(db, "SELECT COUNT(*) FROM labels")[0][0]:
                return
            # the first call is stored; the run's other claimed groups wait
            base = max(e for (e,) in rows(db, "SELECT expires_at FROM judge_leases"))
            deadline = time.monotonic() + 10
            renewed = False
            while not renewed and time.monotonic() < deadline:  # the loop does nothing else
                time.sleep(0.02)
                left = [e for (e,) in rows(db, "SELECT expires_at FROM judge_leases")]
                renewed = bool(left) and min(left) > base
            seen.append(renewed)

    with LoopbackServer() as server:
        panel = load_panel(write_panel(server.url, timeout_s=0.5))
        with Workspace(db) as ws:
            summary = run_panel(
                ws, panel, load_rubric(), subset="val", reporter=Busy(), lease_s=1.5
            )
        assert server.count == 20
    assert seen == [True]
    assert summary.valid == 20


class StealOnFirst(LoopbackServer):
    """Answers a case's first request 500 after another run (``elsewhere``) took its
    lease over: a retry of it would be sent for a pair the run no longer holds."""

    def __init__(self, db: Path, case_id: str, question: str) -> None:
        super().__init__(Script().add(question, status(500)))
        self.db, self.case_id, self.question = db, case_id, question

    async def _respond(self, request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
        if seen.key == self.question and behaviour.kind == "status":
            execute(
                self.db,
                "UPDATE judge_leases SET owner = 'elsewhere:1:cafe', expires_at = ? "
                "WHERE case_id = ?",
                (time.time() + 600, self.case_id),
            )
        return await super()._respond(request, seen, behaviour)


def test_a_retry_is_not_sent_for_a_pair_another_run_took_over(
    make_workspace, write_panel, key_env
) -> None:
    db = make_workspace(3)
    with StealOnFirst(db, "c0001", make_case(1).question) as server:
        panel = load_panel(write_panel(server.url))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val")
        assert server.per_key[make_case(1).question] == 1  # never retried
        assert server.count == 3
    assert (summary.valid, summary.held_elsewhere) == (2, 1)
    assert rows(db, "SELECT case_id FROM labels ORDER BY case_id") == [("c0000",), ("c0002",)]
    # the failed attempt is recorded (it may have been paid), with no label
    assert rows(db, "SELECT status FROM model_calls WHERE status != 'ok'") == [("error",)]


def test_a_lease_shorter_than_one_attempt_is_refused(
    capsys, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(2)
    panel_file = write_panel(loopback.url, timeout_s=30)
    args = ["judge", "run", "--db", str(db), "--panel", str(panel_file), "--subset", "val"]
    for lease in ("0.3", "30.5"):
        with pytest.raises(SystemExit) as info:
            main([*args, "--lease", lease])
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "--lease must be at least 31 s" in err
        assert "timeout_s" in err
    assert loopback.count == 0
    assert rows(db, "SELECT COUNT(*) FROM budget_ledger") == [(0,)]
    panel = load_panel(panel_file)
    with Workspace(db) as ws:
        plan = plan_run(ws, panel, load_rubric(), subset="val")
        with pytest.raises(TiapError, match="--lease must be at least 31 s"):
            run_on_workspace(ws, lambda w: execute_plan(w, plan, lease_s=5.0))
    # at the floor it runs; without --lease the default, or the floor when longer
    with pytest.raises(SystemExit) as info:
        main([*args, "--lease", "31", "--no-progress"])
    assert info.value.code in (0, None)
    assert loopback.count == 2
    assert lease_for(panel, None) == LEASE_S
    slow = panel.model_copy(update={"timeout_s": 300.0})
    assert lease_for(slow, None) == 301.0


def renew(db: Path, owner: str, expires_at: float) -> None:
    execute(db, "UPDATE budget_ledger SET expires_at = ? WHERE owner = ?", (expires_at, owner))


def finish(db: Path, owner: str, at: float) -> None:
    """The run ended at ``at`` (its reservations go, as when it closes its row)."""
    execute(
        db,
        "UPDATE budget_ledger SET finished_at = 'end', expires_at = ?, reserved_usd = 0 "
        "WHERE owner = ?",
        (at, owner),
    )


def test_a_budget_counts_every_run_whose_time_overlaps(make_workspace) -> None:
    """Which runs of one scope a budget check counts (runs on another host, whose
    processes cannot be looked at: expiry is the only sign of life)."""
    from tiap.judge.claims import Ledger

    db = make_workspace(1)
    scope, now = "loop|hash|val", time.time()
    with Workspace(db) as ws:
        for owner, scope_of, cost in (
            ("far:1:stopped", scope, 1.0),  # its lease ran out before this run started
            ("far:2:done", scope, 1.0),  # finished before this run started
            ("far:3:free", scope, None),  # no budget of its own: counts for nobody
            ("far:4:other", "other|hash|val", 1.0),  # another panel
            ("far:5:live", scope, 1.0),  # running alongside
        ):
            ws.open_ledger(owner, scope_of, cost, now + 60, now - 200)
            ws.settle_budget(owner, 0.0, 0.1)
            ws.reserve_budget(owner, 0.01)
        renew(db, "far:1:stopped", now - 100)
        finish(db, "far:2:done", now - 50)
        mine = Ledger(ws, "here:9:me", scope, 1.0, 60.0)
        assert mine.fund([0.2]) == 1  # this run's reservation, on top of the others
        # the live run: its spending and reservation; this run's reservation
        assert mine.used() == pytest.approx(0.1 + 0.01 + 0.2)
        # the stopped run goes on: it renews its row, and runs alongside this one now
        renew(db, "far:1:stopped", time.time() + 60)
        assert mine.used() == pytest.approx(2 * (0.1 + 0.01) + 0.2)
        # once it has finished, its spending still counts (it overlapped)
        finish(db, "far:1:stopped", time.time())
        assert mine.used() == pytest.approx(2 * 0.1 + 0.01 + 0.2)

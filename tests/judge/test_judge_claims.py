"""Concurrent runs on one workspace: pairs are claimed (leased) before they are
called, so runs split the work instead of repeating it; a killed run's claims are
taken over; the budget is one ledger; identical requests are sent once."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from judge_support import execute, make_case, rows
from run_support import TiapProcess, model_and_question, wait_for

from support.loopback import Behaviour, LoopbackServer, SeenRequest
from tiap.cases import Workspace
from tiap.cli import main
from tiap.judge import load_panel, plan_run, run_panel
from tiap.rubric import load_rubric

MODELS = {"a": "openai/judge-a", "b": "openai/judge-b"}
PRICES = (1000.0, 1000.0)  # $0.001 per token in and out


class LedgerGate(LoopbackServer):
    """Holds every reply until ``runs`` runs have a row in the workspace's budget
    ledger (at most ``wait_s``): runs that start together then overlap, however
    fast the first one's calls would be."""

    def __init__(self, db: Path, runs: int, wait_s: float = 30.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.db, self.runs, self.wait_s = db, runs, wait_s

    async def _respond(self, request: Any, seen: SeenRequest, behaviour: Behaviour) -> Any:
        deadline = time.monotonic() + self.wait_s
        while time.monotonic() < deadline:
            if rows(self.db, "SELECT COUNT(*) FROM budget_ledger")[0][0] >= self.runs:
                break
            await asyncio.sleep(0.02)
        return await super()._respond(request, seen, behaviour)


def judge_run(db: Path, panel: Path, *extra: str) -> TiapProcess:
    return TiapProcess(
        "judge", "run", "--db", db, "--panel", panel, "--force", "--no-progress", "--json", *extra
    )


def labels_per_pair(db: Path) -> Counter[tuple[str, str]]:
    return Counter(rows(db, "SELECT case_id, rater FROM labels"))


def expected_keys(n: int) -> set[str]:
    return {
        f"{m.split('/', 1)[1]}|{make_case(i).question}" for i in range(n) for m in MODELS.values()
    }


@pytest.mark.slow
def test_two_runs_at_once_split_the_work_and_ask_nothing_twice(
    make_workspace, write_panel, key_env
) -> None:
    n = 60
    db = make_workspace(n)
    with LoopbackServer(delay_s=0.2, key=model_and_question) as server:
        panel = write_panel(server.url, judges=("a", "b"), model=MODELS, concurrency=2)
        runs = [judge_run(db, panel), judge_run(db, panel)]
        codes = [r.wait() for r in runs]
        assert codes == [0, 0], [r.err for r in runs]
        # every request once: requests seen == distinct request keys
        assert server.count == len(server.per_key) == 2 * n
        assert set(server.per_key) == expected_keys(n)
    # one label per pair
    per_pair = labels_per_pair(db)
    assert len(per_pair) == 2 * n
    assert set(per_pair.values()) == {1}
    summaries = [json.loads(r.out) for r in runs]
    # they split the work: each made some of the calls, together all of them once
    assert all(s["calls"] > 0 for s in summaries), [s["calls"] for s in summaries]
    assert sum(s["calls"] for s in summaries) == 2 * n
    # every claim was released when they ended; both ledger rows are closed
    assert rows(db, "SELECT COUNT(*) FROM judge_leases") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM budget_ledger WHERE finished_at IS NULL") == [(0,)]


@pytest.mark.slow
def test_two_runs_share_one_budget(make_workspace, write_panel, key_env) -> None:
    n = 30
    db = make_workspace(n)
    budget = 2.0  # a fraction of what every pair would cost (about $0.5 each)
    with LedgerGate(db, runs=2, delay_s=0.2, key=model_and_question) as server:
        panel = write_panel(
            server.url, model="openai/priced", prices=PRICES, max_tokens=50, concurrency=2
        )
        runs = [judge_run(db, panel, "--max-cost", str(budget)) for _ in range(2)]
        codes = [r.wait() for r in runs]
        seen = server.count
    # the budget stopped them with work left: incomplete, exit status 3
    assert codes == [3, 3], [r.err for r in runs]
    costs = [c for (c,) in rows(db, "SELECT cost_usd FROM model_calls")]
    assert len(costs) == seen
    assert 0 < seen < n
    assert sum(costs) <= budget + 1e-9  # together within the one budget
    # one ledger: both runs counted against the same budget, what they spent is there
    (budgets,) = rows(db, "SELECT COUNT(DISTINCT budget), SUM(spent_usd) FROM budget_ledger")
    assert budgets[0] == 1
    assert budgets[1] == pytest.approx(sum(costs))
    summaries = [json.loads(r.out) for r in runs]
    assert all(s["stopped_by_budget"] for s in summaries)
    assert sum(s["calls"] for s in summaries) == seen
    assert set(labels_per_pair(db).values()) == {1}


def test_a_killed_run_is_taken_over_without_repeating_answered_calls(
    make_workspace, write_panel, key_env
) -> None:
    n = 40
    db = make_workspace(n)
    with LoopbackServer(delay_s=0.25, key=model_and_question) as server:
        panel = write_panel(
            server.url, judges=("a", "b"), model=MODELS, concurrency=2, timeout_s=1.0
        )
        # short claims (renewed every 2/3 s; the shortest a 1 s timeout allows): a run
        # elsewhere would lose them in 2 s
        first, second = judge_run(db, panel, "--lease", "2"), judge_run(db, panel, "--lease", "2")
        # both are working (each holds claims) before one is killed
        wait_for(
            lambda: (
                len({o for (o,) in rows(db, "SELECT DISTINCT owner FROM judge_leases")}) == 2
                and rows(db, "SELECT COUNT(*) FROM labels")[0][0] >= 8
            ),
            180,
            [first, second],
        )
        first.kill()
        done_at_kill = set(rows(db, "SELECT case_id, rater FROM labels"))
        assert second.wait() == 0, second.err
        # a later run finds nothing to do, or completes what is left
        later = judge_run(db, panel)
        assert later.wait() == 0, later.err
        per_key = server.per_key
    per_pair = labels_per_pair(db)
    assert len(per_pair) == 2 * n
    assert set(per_pair.values()) == {1}
    assert set(per_key) == expected_keys(n)
    repeated = []
    for i in range(n):
        for judge, model in MODELS.items():
            seen = per_key[f"{model.split('/', 1)[1]}|{make_case(i).question}"]
            if (f"c{i:04d}", judge) in done_at_kill:
                assert seen == 1  # answered before the kill: never asked again
            elif seen > 1:
                repeated.append((i, judge))
    # only what the killed run had in flight (2 per judge) was asked twice
    assert len(repeated) <= 4


def test_claims_of_a_run_elsewhere_are_left_to_it_until_they_expire(
    capsys, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    n = 4
    db = make_workspace(n)
    panel_file = write_panel(loopback.url)
    rubric = load_rubric()
    with Workspace(db) as ws:
        plan = plan_run(ws, load_panel(panel_file), rubric, subset="val")
        pairs = [(p.case.case_id, p.request_hash) for p in plan.judges[0].pairs]
        # a run on another host claimed every pair, for ten more minutes
        ws.take_leases(
            "elsewhere:4242:cafe", "judge-a", rubric.content_hash, pairs, time.time() + 600
        )
    args = ["judge", "run", "--db", str(db), "--panel", str(panel_file), "--subset", "val"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert info.value.code in (0, None)
    assert "nothing left to claim" in captured.err
    summary = json.loads(captured.out)
    assert (summary["calls"], summary["held_elsewhere"]) == (0, n)
    assert loopback.count == 0
    assert rows(db, "SELECT COUNT(*) FROM judge_leases WHERE owner = 'elsewhere:4242:cafe'") == [
        (n,)
    ]  # its claims are its own: kept
    # time passes: its claims expire (it crashed), and it holds nothing any more
    execute(db, "UPDATE judge_leases SET expires_at = ?", (time.time() - 1,))
    with Workspace(db) as ws:
        later = run_panel(ws, load_panel(panel_file), rubric, subset="val")
    assert (later.calls, later.held_elsewhere, later.valid) == (n, 0, n)
    assert loopback.count == n
    assert set(labels_per_pair(db).values()) == {1}


def test_a_pair_labelled_by_another_run_meanwhile_is_not_asked_again(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(3)
    panel = load_panel(write_panel(loopback.url))
    rubric = load_rubric()
    with Workspace(db) as ws:
        plan = plan_run(ws, panel, rubric, subset="val")  # made before the other run
        run_panel(ws, panel, rubric, subset="val")  # "the other run" does everything
        assert loopback.count == 3
        from tiap.judge.runner import execute, run_on_workspace

        summary = run_on_workspace(ws, lambda w: execute(w, plan))
    assert loopback.count == 3
    assert (summary.calls, summary.done_elsewhere) == (0, 3)
    assert set(labels_per_pair(db).values()) == {1}


def test_identical_requests_are_sent_once_and_answer_every_pair(
    tmp_path: Path, sample_bundle_dir: Path, write_panel, key_env
) -> None:
    db = tmp_path / "sample.db"
    with pytest.raises(SystemExit) as info:
        main(["cases", "extract", str(sample_bundle_dir), "--db", str(db)])
    assert info.value.code in (0, None)
    with LoopbackServer() as server:
        panel = load_panel(write_panel(server.url, concurrency=4))
        rubric = load_rubric()
        with Workspace(db) as ws:
            plan = plan_run(ws, panel, rubric, force=True)
            hashes = Counter(p.request_hash for p in plan.judges[0].pairs)
            summary = run_panel(ws, panel, rubric, force=True)
        # the sample bundle credits one memory at one rank for one query in two runs
        shared = sum(n - 1 for n in hashes.values())
        assert shared == 4
        assert server.count == len(hashes) == sum(hashes.values()) - shared
    assert summary.calls == len(hashes)
    assert summary.deduplicated == shared
    assert summary.valid == sum(hashes.values())
    labelled = rows(db, "SELECT request_hash, label, cost_usd FROM labels")
    assert len(labelled) == sum(hashes.values())
    by_hash: dict[str, set[str]] = {}
    for h, label, _ in labelled:
        by_hash.setdefault(h, set()).add(label)
    assert all(len(v) == 1 for v in by_hash.values())  # one answer for every pair
    assert rows(db, "SELECT COUNT(*) FROM model_calls") == [(len(hashes),)]


def test_ctrl_c_exits_130_and_releases_every_claim(make_workspace, write_panel, key_env) -> None:
    db = make_workspace(40)
    with LoopbackServer(delay_s=0.3) as server:
        panel = write_panel(server.url, concurrency=2)
        run = TiapProcess("judge", "run", "--db", db, "--panel", panel, "--subset", "val")
        wait_for(lambda: rows(db, "SELECT COUNT(*) FROM labels")[0][0] >= 2, 180, [run])
        assert rows(db, "SELECT COUNT(*) FROM judge_leases")[0][0] > 0
        assert run.ctrl_c() == 130, run.err
    assert "interrupted" in run.err
    assert rows(db, "SELECT COUNT(*) FROM judge_leases") == [(0,)]
    assert rows(db, "SELECT reserved_usd, finished_at IS NOT NULL FROM budget_ledger") == [(0.0, 1)]


def test_a_clean_run_leaves_no_claim(make_workspace, loopback, write_panel, key_env) -> None:
    db = make_workspace(5)
    panel = load_panel(write_panel(loopback.url, concurrency=3))
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
        ledger = ws.ledger()
    assert summary.valid == 5
    assert rows(db, "SELECT COUNT(*) FROM judge_leases") == [(0,)]
    assert len(ledger) == 1
    assert ledger[0].owner == summary.owner
    assert ledger[0].finished_at is not None

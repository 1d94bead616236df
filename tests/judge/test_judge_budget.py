"""``--max-cost`` stops before the budget is exceeded and a re-run completes the
rest; ``--dry-run`` figures, checked against a count made independently."""

from __future__ import annotations

import json

import pytest
from judge_support import execute, make_case, rows

from support.loopback import LoopbackServer
from tiap.cases import LabelRecord, Workspace
from tiap.errors import TiapError
from tiap.judge import dry_run, load_panel, plan_run, run_panel
from tiap.rubric import load_rubric, render_messages

# $1,000 per million tokens = $0.001 per token, in and out: costs are easy to follow
PRICES = (1000.0, 1000.0)


def worst_case(i: int, max_tokens: int) -> float:
    """The budget's reservation for case ``i``: prompt characters / 3 (rounded up)
    plus 8 tokens per message and 8 more, and ``max_tokens`` of output."""
    msgs = render_messages(load_rubric(), make_case(i).prompt_fields())
    chars = sum(len(m["content"]) for m in msgs)
    return (-(-chars // 3) + 8 * len(msgs) + 8 + max_tokens) * 0.001


def test_max_cost_stops_before_exceeding_and_a_rerun_completes(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    n = 8
    db = make_workspace(n)
    panel = load_panel(
        write_panel(loopback.url, model="openai/priced-model", prices=PRICES, max_tokens=50)
    )
    rubric = load_rubric()
    budget = 2.0
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, rubric, subset="val", max_cost=budget)
    costs = [c for (c,) in rows(db, "SELECT cost_usd FROM model_calls ORDER BY rowid")]
    made = len(costs)
    assert summary.stopped_by_budget
    assert 0 < made < n
    assert summary.judges[0].not_started == n - made
    assert loopback.count == made
    # what was spent is within the budget ...
    assert sum(costs) <= budget
    assert summary.cost_usd == pytest.approx(sum(costs))
    # ... and the next call's worst case would have gone over it (concurrency 1:
    # the calls ran in case order)
    assert sum(costs) + worst_case(made, 50) > budget
    # each recorded cost is the loopback server's token counts times the price
    stored = rows(db, "SELECT input_tokens, output_tokens, cost_usd FROM model_calls")
    for pin, pout, cost in stored:
        assert cost == pytest.approx((pin + pout) * 0.001)

    with Workspace(db) as ws:
        rest = run_panel(ws, panel, rubric, subset="val")
    assert rest.calls == n - made
    assert rest.judges[0].already_labelled == made
    assert loopback.count == n
    assert set(loopback.per_key.values()) == {1}  # no case requested twice
    assert rows(db, "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM labels") == [(n, n)]


def test_max_cost_needs_a_price(make_workspace, loopback, write_panel, key_env) -> None:
    db = make_workspace(2)
    panel = load_panel(write_panel(loopback.url, model="openai/unpriced-model-xyz"))
    with Workspace(db) as ws, pytest.raises(TiapError, match="input_cost_per_mtok"):
        run_panel(ws, panel, load_rubric(), subset="val", max_cost=1.0)
    assert loopback.count == 0
    # without a budget it runs; the cost is recorded as unknown, never as a guessed 0
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert summary.judges[0].cost_unknown == 2
    assert summary.cost_usd == 0.0
    assert rows(db, "SELECT cost_usd FROM model_calls") == [(None,), (None,)]
    assert rows(db, "SELECT cost_usd FROM labels") == [(None,), (None,)]
    assert [t for (t,) in rows(db, "SELECT input_tokens FROM labels")] != [None, None]


def test_negative_budget_is_refused_before_any_call(
    capsys, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    from tiap.cli import main

    db = make_workspace(2)
    panel = write_panel(loopback.url, model="openai/priced-model", prices=PRICES)
    with Workspace(db) as ws, pytest.raises(TiapError, match="--max-cost must not be negative"):
        run_panel(ws, load_panel(panel), load_rubric(), subset="val", max_cost=-0.5)
    judge = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
    audit = ["audit", str(db.parent), "--out", str(db.parent / "audit"), "--panel", str(panel)]
    for command in (judge, audit):
        with pytest.raises(SystemExit) as info:
            main([*command, "--max-cost", "-0.5"])
        assert info.value.code == 2
        assert "--max-cost" in capsys.readouterr().err
    assert loopback.count == 0
    assert rows(db, "SELECT COUNT(*) FROM labels") == [(0,)]


def test_dry_run_figures(make_workspace, loopback, write_panel, key_env) -> None:
    n = 6
    db = make_workspace(n)
    panel = load_panel(
        write_panel(
            loopback.url,
            judges=("a", "b"),
            model={"a": "openai/m-a", "b": "openai/m-b"},
            prices=PRICES,
            max_tokens=50,
        )
    )
    rubric = load_rubric()
    with Workspace(db) as ws:
        # judge a: cases 0-1 labelled already (with the request the plan sends now);
        # judge b: every case called before (its labels then removed, so its stored
        # calls answer them)
        run_panel(ws, panel.model_copy(update={"judges": [panel.judges[1]]}), rubric, subset="val")
        execute(db, "DELETE FROM labels")
        sent = {
            p.case.case_id: p.request_hash
            for p in plan_run(ws, panel, rubric, subset="val").judges[0].pairs
        }
        ws.add_labels(
            LabelRecord(
                case_id=f"c{i:04d}",
                rater="a",
                rater_kind="judge",
                label="supports",
                rubric_hash=rubric.content_hash,
                model="openai/m-a",
                request_hash=sent[f"c{i:04d}"],
            )
            for i in range(2)
        )
        seen = loopback.count
        report = dry_run(plan_run(ws, panel, rubric, subset="val"))
    assert loopback.count == seen  # a dry run calls nothing
    a, b = report.judges
    assert (a.cases, a.already_labelled, a.cache_hits, a.calls) == (n, 2, 0, 4)
    assert (b.cases, b.already_labelled, b.cache_hits, b.calls) == (n, 0, n, 0)
    assert (report.calls, report.cache_hits) == (4, n)
    # token estimate: characters / 4 + 8 per message + 8, for the 4 cases a must call
    chars = [
        sum(len(m["content"]) for m in render_messages(rubric, make_case(i).prompt_fields()))
        for i in range(2, n)
    ]
    assert a.est_input_tokens == sum(c // 4 + 24 for c in chars)
    assert a.est_cost_usd == pytest.approx((a.est_input_tokens + 4 * 100) * 0.001)
    assert a.max_cost_usd == pytest.approx(sum(worst_case(i, 50) for i in range(2, n)))
    assert b.est_cost_usd == 0.0
    assert report.est_cost_usd == pytest.approx(a.est_cost_usd)
    json.loads(report.model_dump_json())  # stable JSON

"""``tiap judge run`` exit status: 0 complete, 3 incomplete (the budget stopped it
with work left; batches still running: see test_judge_batch), 2 bad input, 130
interrupted (see test_judge_claims and test_judge_cache_resume); and progress
bars only for judges with something to do."""

from __future__ import annotations

import json

import pytest
from judge_support import rows

from support.loopback import LoopbackServer
from tiap.cases import Workspace
from tiap.cli.progress_display import RichProgress
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.runner import execute, run_on_workspace
from tiap.rubric import load_rubric

PRICES = (1000.0, 1000.0)


def test_complete_is_0_and_a_budget_stop_with_work_left_is_3(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(6)
    panel = write_panel(loopback.url, model="openai/priced", prices=PRICES, max_tokens=50)
    base = ("judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val")
    code, out, err = tiap_cli(*base, "--no-progress", "--max-cost", "1.2")
    assert code == 3, err
    # the summary is printed, then why the run is incomplete
    assert "panel loop" in out
    assert "stopped before exceeding the budget of $1.2000" in out
    assert "stopped by the budget" in err
    made = loopback.count
    assert 0 < made < 6
    # the same with --json: the summary says it stopped, with what is left
    code, out, err = tiap_cli(*base, "--no-progress", "--max-cost", "0.8", "--json")
    assert code == 3, err
    summary = json.loads(out)
    assert summary["stopped_by_budget"]
    assert summary["not_started"] == 6 - loopback.count
    # without a budget the rest is done: complete
    code, out, err = tiap_cli(*base, "--no-progress")
    assert code == 0, err
    assert rows(db, "SELECT COUNT(DISTINCT case_id) FROM labels") == [(6,)]
    # nothing left: still complete
    code, out, err = tiap_cli(*base, "--no-progress", "--max-cost", "0.3")
    assert code == 0, err


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (("--no-wait",), "--no-wait goes with --batch"),
        (("--recall-missing",), "--recall-missing goes with --batch"),
        (("--batch", "--poll-interval", "0"), "--poll-interval"),
        (("--lease", "0"), "--lease"),
    ],
)
def test_bad_options_are_2(
    tiap_cli, make_workspace, loopback: LoopbackServer, write_panel, key_env, extra, fragment
) -> None:
    db = make_workspace(2)
    panel = write_panel(loopback.url)
    code, _, err = tiap_cli(
        "judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val", *extra
    )
    assert code == 2, err
    assert fragment in err
    assert "Traceback" not in err
    assert loopback.count == 0


def test_only_judges_with_work_get_a_progress_bar(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, capsys
) -> None:
    db = make_workspace(3)
    panel = load_panel(write_panel(loopback.url, judges=("done", "todo")))
    rubric = load_rubric()
    with Workspace(db) as ws:
        run_panel(ws, panel.model_copy(update={"judges": [panel.judges[0]]}), rubric, subset="val")
        plan = plan_run(ws, panel, rubric, subset="val")
        assert [len(jp.pairs) for jp in plan.judges] == [0, 3]
        capsys.readouterr()
        with RichProgress() as reporter:
            run_on_workspace(ws, lambda w: execute(w, plan, reporter=reporter))
            bars = dict(reporter._tasks)
    err = capsys.readouterr().err
    assert list(bars) == ["todo"]  # the judge with nothing to do draws no bar
    assert "0/0" not in err
    assert "3/3" in err

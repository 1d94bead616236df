"""The command ``tiap judge run`` prints to continue a run (``next:`` after
``--batch --no-wait``) continues the same run: the same budget, ``--force`` and
every other option that decides what it does."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from batch_support import expected, panel_text, parity
from judge_support import rows
from run_support import model_and_question

from support.batch_server import BatchServer
from support.loopback import Script
from tiap.cli.judge import RunOptions, continue_command

NEXT = re.compile(r"next: (.+)$", re.MULTILINE)


def test_the_printed_next_command_continues_the_same_run(
    tiap_cli, tmp_path: Path, make_workspace, key_env
) -> None:
    n = 4
    db = make_workspace(n, validation=False)  # every case: past the scale gate only by --force
    with BatchServer(Script(default=parity), key=model_and_question, steps_per_poll=2) as server:
        panel = tmp_path / "batchy.toml"
        panel.write_text(panel_text(server.url, {"a": "openai/m-a"}), encoding="utf-8")
        first = ["judge", "run", "--db", str(db), "--panel", str(panel), "--force"]
        first += ["--max-cost", "0.5", "--poll-interval", "0.01", "--batch", "--no-wait"]
        code, _, err = tiap_cli(*first, "--no-progress")
        assert code == 3, err
        (command,) = NEXT.findall(err)
        words = shlex.split(command)
        assert words[:3] == ["tiap", "judge", "run"]
        # following it, as printed, until the batch is collected
        codes = []
        for _ in range(10):
            code, _, err = tiap_cli(*words[1:])
            codes.append(code)
            if code != 3:
                break
            assert NEXT.findall(err) == [command]  # the same command again
        assert codes[-1] == 0, (codes, err)
        assert server.batch_creations == {"m-a": 1}
    got = rows(db, "SELECT case_id, label FROM labels ORDER BY case_id")
    assert got == [(f"c{i:04d}", expected(i)) for i in range(n)]
    # the runs that reserved or spent (the first, and the one that stored the results)
    # had the first one's budget; every one was let past the gate by --force
    budgets = rows(db, "SELECT max_cost_usd, spent_usd > 0 FROM budget_ledger ORDER BY rowid")
    assert {cost for cost, _ in budgets} == {0.5}
    assert any(spent for _, spent in budgets)
    forced = rows(db, "SELECT COUNT(*) FROM events WHERE kind = 'gate_force'")
    assert forced[0][0] == 1 + len(codes)


def test_the_continue_command_carries_every_option_that_decides_the_run() -> None:
    opts = RunOptions(
        db=Path("my ws.sqlite"),
        panel="frontier",
        subset="val",
        rubric="qrels-relevance",
        max_cost=0.1,
        force=True,
        retry_failed=True,
        batch=True,
        no_wait=True,
        poll_interval=5.0,
        lease=300.0,
        recall_missing=True,
    )
    words = shlex.split(continue_command(opts))
    assert words == [
        "tiap",
        "judge",
        "run",
        "--db",
        "my ws.sqlite",
        "--panel",
        "frontier",
        "--subset",
        "val",
        "--rubric",
        "qrels-relevance",
        "--batch",
        "--no-wait",
        "--poll-interval",
        "5.0",
        "--max-cost",
        "0.1",
        "--force",
        "--retry-failed",
        "--lease",
        "300.0",
        "--recall-missing",
    ]
    # the defaults are left out
    plain = continue_command(RunOptions(db=Path("w.sqlite"), panel="offline"))
    assert shlex.split(plain) == ["tiap", "judge", "run", "--db", "w.sqlite", "--panel", "offline"]

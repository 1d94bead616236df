"""Results are committed in groups (tiap.cases.group_commit): a run killed with
SIGKILL loses at most the calls of its open group (and those in flight), never
asks again a call whose group was committed, and the budget ledger counts every
call the provider answered, those whose results were lost too."""

from __future__ import annotations

import json

import pytest
from judge_support import make_case, rows
from run_support import TiapProcess, model_and_question, wait_for
from test_judge_leases import served_cost

from support.loopback import LoopbackServer, Script, label_reply

MODELS = {"a": "openai/priced-a", "b": "openai/priced-b"}
PRICES = (1000.0, 1000.0)  # $0.001 per token in and out
CONCURRENCY = 3


@pytest.mark.slow
def test_a_kill_loses_at_most_the_open_group_and_never_pays_a_committed_call_twice(
    make_workspace, write_panel, key_env
) -> None:
    n = 30
    db = make_workspace(n)
    script = Script(default=label_reply("supports"))
    with LoopbackServer(script, delay_s=0.3, key=model_and_question) as server:
        panel = write_panel(
            server.url,
            judges=tuple(MODELS),
            model=MODELS,
            prices=PRICES,
            max_tokens=50,
            concurrency=CONCURRENCY,
        )
        args = ["judge", "run", "--db", db, "--panel", panel, "--subset", "val"]
        args += ["--max-cost", "1000", "--no-progress", "--json"]
        run = TiapProcess(*args)
        wait_for(lambda: rows(db, "SELECT COUNT(*) FROM labels")[0][0] >= 10, 180, [run])
        run.kill()
        # what the killed run committed: each label with its call, committed together
        done_at_kill = set(rows(db, "SELECT case_id, rater FROM labels"))
        orphans = rows(
            db,
            "SELECT COUNT(*) FROM labels l LEFT JOIN model_calls m USING (request_hash) "
            "WHERE m.request_hash IS NULL",
        )
        assert orphans == [(0,)]
        (killed,) = rows(db, "SELECT owner FROM budget_ledger")
        server.delay_s = 0.0
        again = TiapProcess(*args)
        assert again.wait() == 0, again.err
        assert json.loads(again.out)["valid"] == 2 * n - len(done_at_kill)
        per_key = server.per_key
        answered = server.count
    # every pair labelled once
    per_pair = rows(db, "SELECT case_id, rater, COUNT(*) FROM labels GROUP BY case_id, rater")
    assert len(per_pair) == 2 * n
    assert {count for *_, count in per_pair} == {1}
    repeated = 0
    for i in range(n):
        for judge, model in MODELS.items():
            seen = per_key[f"{model.split('/', 1)[1]}|{make_case(i).question}"]
            if (f"c{i:04d}", judge) in done_at_kill:
                assert seen == 1  # its group was committed: never asked again
            else:
                assert seen in (1, 2)
                repeated += seen - 1
    # asked twice: only what the killed run had in flight or answered in its open
    # group, never more than the judges' concurrency (a slot is held until commit)
    assert repeated <= CONCURRENCY * len(MODELS)
    # the ledger: the killed run's reservations counted as spent once it was known to
    # be gone, so every answered request is counted (lost results at their worst case)
    (row,) = rows(
        db, "SELECT reserved_usd, spent_usd, finished_at FROM budget_ledger WHERE owner = ?", killed
    )
    assert row[0] == 0
    assert row[2] is not None
    assert rows(db, "SELECT SUM(reserved_usd) FROM budget_ledger") == [(0.0,)]
    total = rows(db, "SELECT SUM(spent_usd) FROM budget_ledger")[0][0]
    assert answered == 2 * n + repeated
    assert total >= served_cost(server) - 1e-9

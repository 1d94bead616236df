"""Provider batches that go wrong at the provider, and never lose or duplicate a
batch: a run killed while creating one (with a long batch list), a completed
batch without an output file or whose output file is gone, duplicate and unknown
output lines, ``--abandon``, and the books (counts, cost, the reservation a
``--no-wait`` run leaves) after a resumed ingest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_support import (
    BATCH_PRICES,
    FAST,
    direct_requests,
    expected,
    labels,
    parity,
    write_panel,
)
from judge_support import make_case, rows
from run_support import model_and_question

from support.batch_server import BatchServer
from support.loopback import Script, completion, label_reply
from tiap.cases import Workspace
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.batch_run import BatchOptions
from tiap.rubric import load_rubric


@pytest.fixture
def batch_panel(tmp_path: Path):
    def write(url: str, judges: dict[str, str]) -> Path:
        return write_panel(tmp_path / "batchy.toml", url, judges)

    return write


def cli_base(db: Path, panel: Path) -> list[str]:
    args = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
    return [*args, "--no-progress", "--poll-interval", "0.01"]


def all_labels(n: int) -> dict[tuple[str, str], tuple[str | None, str | None]]:
    return {(f"c{i:04d}", "a"): (expected(i), None) for i in range(n)}


def batch_ledger(db: Path, sub: int = 1) -> tuple[float, float, bool]:
    """(reserved, spent, finished) of a submission's ledger row."""
    ((reserved, spent, finished),) = rows(
        db,
        "SELECT reserved_usd, spent_usd, finished_at IS NOT NULL FROM budget_ledger "
        "WHERE owner = ?",
        (f"batch:{sub}",),
    )
    return reserved, spent, bool(finished)


def line_reservations(db: Path, sub: int = 1) -> list[float]:
    return [
        r
        for (r,) in rows(
            db, "SELECT reserved_usd FROM provider_batch_requests WHERE submission = ?", (sub,)
        )
    ]


# ---------------------------------------------------------------- item: creation


def test_kill_9_while_creating_with_101_newer_batches_finds_the_batch(
    make_workspace, batch_panel, key_env
) -> None:
    from run_support import TiapProcess, wait_for

    n = 3
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        server.hold_creations = True  # the batch is made; its creator never hears of it
        run = TiapProcess(*cli_base(db, panel), "--batch")
        wait_for(lambda: len(server.batches) == 1, 180, [run])
        run.kill()
        assert rows(
            db, "SELECT state, batch_id, submission_key IS NOT NULL FROM provider_batches"
        ) == [("creating", None, 1)]
        (made,) = server.batches.values()
        key = rows(db, "SELECT submission_key FROM provider_batches")[0][0]
        assert made.metadata is not None
        assert made.metadata["tiap_key"] == key
        server.add_batches(101)  # the account's list: the batch is on its second page
        server.hold_creations = False
        again = TiapProcess(*cli_base(db, panel), "--batch", "--json")
        assert again.wait() == 0, again.err
        assert server.batch_creations == {"m-a": 1}  # found, not made a second time
        assert len(server.uploads()) == 1
        lists = [path for method, path in server.admin if (method, path) == ("GET", "/v1/batches")]
        assert len(lists) == 2  # both pages read
        assert direct_requests(server).total() == 0
    assert rows(db, "SELECT batch_id, state FROM provider_batches") == [(made.id, "closed")]
    assert labels(db) == all_labels(n)


def test_the_batch_list_is_read_through_every_page(key_env) -> None:
    import asyncio

    from judge_support import SECRET

    from tiap.judge.routes.litellm_batch import BatchClient

    with BatchServer(Script(), page_max=7) as server:
        f = server._add_file("batch", "mine.jsonl", b"")
        server.add_batches(1)
        mine = next(iter(server.batches.values()))
        mine.input_file_id = f.id
        mine.metadata = {"tiap_key": "k-1"}
        server.add_batches(30)  # five pages of seven come first
        client = BatchClient("openai", "openai/m", server.url, SECRET)
        assert asyncio.run(client.find("k-1", None)).id == mine.id
        assert asyncio.run(client.find(None, f.id)).id == mine.id
        assert asyncio.run(client.find("k-2", "file-none")) is None
        # 31 batches, 7 to a page: 5 pages to find it, then 5 to know another is absent
        assert server.admin.count(("GET", "/v1/batches")) == 5 + 5 + 5


# ------------------------------------------------------- item: no output file


def test_a_completed_batch_without_output_holds_its_lines_until_recalled(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 4
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, no_output=True) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        base = cli_base(db, panel)
        code, out, err = tiap_cli(*base, "--batch", "--max-cost", "1")
        assert code == 3, err
        assert server.count == n  # the provider ran (and charged) every line
        assert direct_requests(server).total() == 0  # none called again on its own
        assert f"{n} judgments are held by provider batches" in out
        assert "--recall-missing" in out
        assert "--recall-missing" in err
        assert f"the provider counted {n} more lines completed than its output holds" in out
        (listed,) = json.loads(tiap_cli("judge", "batches", "--db", str(db), "--json")[1])
        assert (listed["state"], listed["provider_status"], listed["missing_lines"]) == (
            "missing",
            "completed",
            n,
        )
        assert "--recall-missing" in listed["note"]
        # the held lines keep their reservation; neither kind of run calls them
        reserved = sum(line_reservations(db))
        assert batch_ledger(db) == (pytest.approx(reserved), 0.0, False)
        code, out, err = tiap_cli(*base, "--json")
        assert code == 3, err
        assert json.loads(out)["missing_in_batches"] == n
        assert tiap_cli(*base, "--batch")[0] == 3
        assert direct_requests(server).total() == 0
        # on purpose: called directly, and what the provider may have charged counts
        code, out, err = tiap_cli(*base, "--batch", "--recall-missing", "--json")
        assert code == 0, err
        assert direct_requests(server).total() == n
        summary = json.loads(out)
        assert summary["judges"][0]["batch_retried"] == n
    assert labels(db) == all_labels(n)
    assert rows(db, "SELECT state, retried FROM provider_batches") == [("closed", n)]
    # all four lines counted completed: each one's worst case is spent
    assert batch_ledger(db) == (0.0, pytest.approx(reserved), True)


# ----------------------------------------------------- item: output file gone


def test_an_output_file_that_is_gone_is_tried_three_times_then_the_batch_can_be_abandoned(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 4
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, output_gone=True) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        base = cli_base(db, panel)
        code, out, err = tiap_cli(*base, "--batch")
        assert code == 3, err  # not 2: nothing is wrong with the judge
        (out_id,) = server.gone
        reads = server.admin.count(("GET", f"/v1/files/{out_id}/content"))
        assert reads == 3
        assert "could not be read after 3 tries" in out
        assert rows(db, "SELECT state, fetch_failures FROM provider_batches") == [("missing", 3)]
        # the next runs do not read it again, and say what can be done
        code, out, err = tiap_cli(*base)
        assert code == 3, err
        assert f"{n} judgments are held" in out
        assert "--abandon" in out
        assert server.admin.count(("GET", f"/v1/files/{out_id}/content")) == reads
        # abandoned, and recorded; the pairs are free again
        code, out, err = tiap_cli("judge", "batches", "--db", str(db), "--abandon", "1")
        assert code == 0, err
        assert f"{n} judgments are free again" in out
        assert "may still run" not in err  # it is over at the provider
        (event,) = rows(db, "SELECT payload_json FROM events WHERE kind = 'batch_abandoned'")
        payload = json.loads(event[0])
        assert (payload["submission"], payload["state"], payload["pairs"]) == (1, "missing", n)
        assert payload["spent_usd"] == pytest.approx(sum(line_reservations(db)))
        code, _, err = tiap_cli("judge", "batches", "--db", str(db), "--abandon", "1")
        assert code == 2
        assert "nothing to abandon" in err
        code, _, err = tiap_cli("judge", "batches", "--db", str(db), "--abandon", "9")
        assert code == 2
        assert "no provider batch '9'" in err
        code, _, err = tiap_cli(*base)
        assert code == 0, err
        assert direct_requests(server).total() == n
        assert server.batch_creations == {"m-a": 1}
    assert labels(db) == all_labels(n)
    assert rows(db, "SELECT state FROM provider_batches") == [("abandoned",)]
    assert batch_ledger(db)[0] == 0.0
    assert batch_ledger(db)[2]


def test_abandoning_a_running_batch_warns_that_the_provider_may_still_run_it(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 2
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, fates=["cancel"]) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        assert tiap_cli(*cli_base(db, panel), "--batch", "--no-wait")[0] == 3
        code, out, err = tiap_cli(
            "judge", "batches", "--db", str(db), "--abandon", "batch_1", "--json"
        )
        assert code == 0, err
        event = json.loads(out)
        assert (event["state"], event["may_still_run"], event["pairs"]) == ("submitted", True, n)
        # it may run every line: every line's worst case counts as spent
        assert event["spent_usd"] == pytest.approx(sum(line_reservations(db)))
        code, out, err = tiap_cli("judge", "batches", "--db", str(db), "--abandon", "1")
        assert code == 2


# ------------------------------------------------------------ item: the books


def test_a_resumed_ingest_counts_every_line_once(
    tiap_cli, monkeypatch, make_workspace, batch_panel, key_env
) -> None:
    import tiap.judge.batch_collect as collect
    from tiap.judge.outcomes import Recorder

    n = 6
    db = make_workspace(n)
    monkeypatch.setattr(collect, "STORE_CHUNK", 2)
    record = Recorder.record
    stored: list[int] = []

    def killed_at_the_third(self, *args, **kwargs):  # the run dies inside its second chunk
        stored.append(1)
        if len(stored) == 3:
            raise KeyboardInterrupt
        return record(self, *args, **kwargs)

    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        monkeypatch.setattr(Recorder, "record", killed_at_the_third)
        with Workspace(db) as ws, pytest.raises(KeyboardInterrupt):
            run_panel(ws, load_panel(panel), load_rubric(), subset="val", batch=FAST)
        monkeypatch.setattr(Recorder, "record", record)
        assert len(labels(db)) == 2  # the first chunk was stored
        with Workspace(db) as ws:
            run_panel(ws, load_panel(panel), load_rubric(), subset="val", batch=FAST)
        assert server.batch_creations == {"m-a": 1}
        assert direct_requests(server).total() == 0
    assert labels(db) == all_labels(n)
    (listed,) = json.loads(tiap_cli("judge", "batches", "--db", str(db), "--json")[1])
    costs = [c for (c,) in rows(db, "SELECT cost_usd FROM model_calls")]
    assert len(costs) == n
    assert None not in costs
    assert (listed["answered"], listed["retried"]) == (n, 0)
    assert listed["cost_usd"] == pytest.approx(sum(costs))
    spent = rows(db, "SELECT SUM(spent_usd) FROM budget_ledger")[0][0]
    assert spent == pytest.approx(sum(costs))
    assert batch_ledger(db) == (0.0, pytest.approx(sum(costs)), True)


def test_no_wait_keeps_the_batch_reservation_until_its_lines_are_stored(
    make_workspace, batch_panel, key_env
) -> None:
    n = 6
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        rubric = load_rubric()
        with Workspace(db) as ws:
            (jp,) = plan_run(ws, panel, rubric, subset="val").judges
            worst = [
                (p.est_input_upper * BATCH_PRICES[0] + 50 * BATCH_PRICES[1]) / 1e6 for p in jp.pairs
            ]
            budget = sum(worst[:4]) + worst[4] / 2  # four lines fit, the fifth does not
            first = run_panel(
                ws,
                panel,
                rubric,
                subset="val",
                batch=BatchOptions(wait=False, poll_s=0.01),
                max_cost=budget,
            )
            assert first.in_batches == 4
            assert first.not_started == 2
            # the run is over; its batch still holds its lines' worst cases
            assert batch_ledger(db) == (pytest.approx(sum(worst[:4])), 0.0, False)
            # a run of the same budget meanwhile: the batch's reservation counts, so
            # the two pairs left (at the direct price, twice the batch price) do not fit
            second = run_panel(ws, panel, rubric, subset="val", max_cost=budget)
            assert second.budget == first.budget
            assert (second.calls, second.not_started, second.in_batches) == (0, 2, 4)
            assert direct_requests(server).total() == 0
            third = run_panel(ws, panel, rubric, subset="val", batch=FAST, max_cost=budget)
            assert third.judges[0].batch_answered == 4
    costs = rows(
        db,
        "SELECT SUM(cost_usd) FROM model_calls WHERE request_hash IN "
        "(SELECT request_hash FROM provider_batch_requests)",
    )[0][0]
    reserved, spent, finished = batch_ledger(db)
    assert (reserved, finished) == (0.0, True)
    assert spent == pytest.approx(costs)  # the batch's cost is on the batch's row
    total = rows(db, "SELECT SUM(spent_usd) FROM budget_ledger")[0][0]
    assert total == pytest.approx(rows(db, "SELECT SUM(cost_usd) FROM model_calls")[0][0])
    assert total <= budget


def test_duplicate_and_unknown_output_lines_are_counted_and_a_disagreement_is_invalid(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 4
    db = make_workspace(n)
    q = {i: f"m-a|{make_case(i).question}" for i in range(n)}
    seconds = {
        q[1]: label_reply("partial"),  # the same reply again: agrees
        q[2]: label_reply("partial"),  # case 2 is "supports": disagrees
    }
    with BatchServer(
        Script(default=parity), key=model_and_question, second_lines=seconds, unknown_lines=2
    ) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        code, out, err = tiap_cli(*cli_base(db, panel), "--batch")
        assert code == 0, err
        assert direct_requests(server).total() == 0
        (seen,) = [r for r in server.requests if r.key == q[2]]
        one_line = completion(seen, seconds[q[2]])["usage"]["prompt_tokens"]
    assert labels(db) == {
        ("c0000", "a"): ("supports", None),
        ("c0001", "a"): ("partial", None),
        ("c0002", "a"): (None, "duplicate_reply"),  # neither line's label
        ("c0003", "a"): ("partial", None),
    }
    ((note, cost, tokens),) = rows(
        db,
        "SELECT l.note, c.cost_usd, c.input_tokens FROM labels l JOIN model_calls c "
        "ON c.request_hash = l.request_hash WHERE l.case_id = 'c0002'",
    )
    assert note == "2 lines of the batch's output for this request disagree"
    assert tokens == 2 * one_line
    assert cost is not None
    (listed,) = json.loads(tiap_cli("judge", "batches", "--db", str(db), "--json")[1])
    assert (listed["duplicate_lines"], listed["unknown_lines"], listed["answered"]) == (2, 2, n)
    assert "2 duplicate output lines (1 requests whose lines disagree" in listed["note"]
    assert "2 output lines for requests not in the batch" in listed["note"]
    assert "2 duplicate output lines" in out
    assert "not in the batch" in out
    # a disagreement is the provider's fault: --retry-failed asks again
    with Workspace(db) as ws:
        plan = plan_run(ws, load_panel(panel), load_rubric(), subset="val", retry_failed=True)
    assert [p.case.case_id for p in plan.judges[0].to_call] == ["c0002"]

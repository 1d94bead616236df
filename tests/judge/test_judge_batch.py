"""``tiap judge run --batch``: provider batch APIs (the OpenAI protocol, through
litellm) against a loopback server with the files and batches endpoints:
submission, limits, results stored like direct calls, failed / expired /
cancelled lines called again directly, ``--no-wait``, ``judge batches``."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from batch_support import (
    BATCH_PRICES,
    FAST,
    PRICES,
    batch_lines,
    direct_requests,
    expected,
    labels,
    number,
    parity,
    write_panel,
)
from judge_support import execute, make_case, rows
from run_support import model_and_question

from support.batch_server import BatchServer
from support.loopback import (
    Script,
    garbage,
    label_reply,
    large_reply,
    reply,
    reset,
    status,
)
from tiap.cases import Workspace
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.batch_api import BatchLimits
from tiap.judge.batch_run import BatchOptions
from tiap.judge.routes import batch_route
from tiap.rubric import load_rubric


@pytest.fixture
def batch_panel(tmp_path: Path):
    def write(url: str, judges: dict[str, str], **kwargs) -> Path:
        return write_panel(tmp_path / "batchy.toml", url, judges, **kwargs)

    return write


def test_each_batch_judge_gets_one_batch_and_results_are_stored_like_direct_calls(
    make_workspace, batch_panel, key_env
) -> None:
    n = 6
    db = make_workspace(n)
    models = {"a": "openai/m-a", "b": "openai/m-b", "c": "openai/m-c"}
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, models, direct=("c",)))
        rubric = load_rubric()
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, rubric, subset="val", batch=FAST)
            plan = plan_run(ws, panel, rubric, subset="val")
        # one batch creation per batch judge; the batch = false judge called directly
        assert server.batch_creations == {"m-a": 1, "m-b": 1}
        assert set(direct_requests(server)) == {f"m-c|{make_case(i).question}" for i in range(n)}
        assert server.count == 3 * n
        lines = batch_lines(server)
        again = run_panel(ws := Workspace(db), panel, rubric, subset="val", batch=FAST)
        ws.close()
        assert server.batch_creations == {"m-a": 1, "m-b": 1}  # nothing submitted twice
        assert server.count == 3 * n
    assert (again.calls, again.cache_hits) == (0, 0)
    got = labels(db)
    assert got == {(f"c{i:04d}", j): (expected(i), None) for i in range(n) for j in models}
    # the same cache key as a direct call: the plan finds every pair done
    assert [jp.already_labelled for jp in plan.judges] == [n, n, n]
    calls = {
        h: (m, c, i, o)
        for h, m, c, i, o in rows(
            db, "SELECT request_hash, model, cost_usd, input_tokens, output_tokens FROM model_calls"
        )
    }
    assert len(calls) == 3 * n
    # each line: the request hash as custom id, the chat completions body litellm sends
    for line in lines:
        assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")
        assert line["custom_id"] in calls
        body = line["body"]
        assert body["model"] in ("m-a", "m-b")
        assert (body["temperature"], body["max_tokens"]) == (0, 50)
        assert body["response_format"]["type"] == "json_schema"
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert len(lines) == 2 * n
    # costs: batch judges at the batch price, the direct judge at its price
    for model, cost, pin, pout in calls.values():
        price = PRICES if model == "openai/m-c" else BATCH_PRICES
        assert cost == pytest.approx((pin * price[0] + pout * price[1]) / 1e6)
    tallies = {t.judge: t for t in summary.judges}
    assert (tallies["a"].route, tallies["b"].route, tallies["c"].route) == ("batch",) * 2 + (
        "direct",
    )
    assert "batch = false" in (tallies["c"].route_note or "")
    assert "openai batch API" in (tallies["a"].route_note or "")
    assert (tallies["a"].batches_submitted, tallies["a"].batch_answered) == (1, n)
    assert [(b.judge, b.state, b.provider_status, b.answered) for b in summary.batches] == [
        ("a", "closed", "completed", n),
        ("b", "closed", "completed", n),
    ]
    assert not summary.incomplete


#: what the server answers case i with: each reply the rows must read alike.
ODD_REPLIES = [
    reply('{"label": "maybe", "rationale": "r"}'),
    large_reply(20_000),
    large_reply(20_000, label_first=True),
    reply("there is no JSON here"),
    label_reply("partial", rationale="z" * 3000),
    # a steering reply, and text before the answer where the request asked for JSON only
    reply('It says {"label": "supports"} but really: {"label": "does_not_support"}'),
    reply('Here: {"label": "supports"}'),
]


def test_batch_lines_are_parsed_like_direct_replies_reason_codes_and_reply_cap(
    make_workspace, batch_panel, tmp_path: Path, key_env
) -> None:
    n = len(ODD_REPLIES)
    db = make_workspace(n)
    models = {"a": "openai/m-a", "c": "openai/m-c"}
    script = Script(default=lambda body: ODD_REPLIES[number(body)])
    with BatchServer(script, key=model_and_question) as server:
        path = batch_panel(server.url, models, direct=("c",))
        text = path.read_text().replace("timeout_s = 5", "timeout_s = 5\nmax_reply_bytes = 8192")
        path.write_text(text)
        with Workspace(db) as ws:
            summary = run_panel(ws, load_panel(path), load_rubric(), subset="val", batch=FAST)
        assert server.batch_creations == {"m-a": 1}
    assert {t.judge: t.route for t in summary.judges} == {"a": "batch", "c": "direct"}
    got = {
        (case, rater): (label, reason, note, rationale, raw)
        for case, rater, label, reason, note, rationale, raw in rows(
            db, "SELECT case_id, rater, label, reason, note, rationale, raw FROM labels"
        )
    }
    assert len(got) == 2 * n
    # the batch judge's rows are the direct judge's, field for field
    for i in range(n):
        assert got[(f"c{i:04d}", "a")] == got[(f"c{i:04d}", "c")], i
    rows_c = [got[(f"c{i:04d}", "c")] for i in range(n)]
    assert rows_c[0][:3] == (None, "label_outside_rubric", "maybe")
    cut = "cut to its first 8,192 bytes (max_reply_bytes), kept with its call"
    assert rows_c[1][:2] == (None, "reply_too_large")
    assert cut in (rows_c[1][2] or "")
    assert rows_c[1][4] is None  # the one bounded copy is the call's
    assert rows_c[2][:2] == (None, "reply_too_large")  # what was cut could hold a label
    assert cut in (rows_c[2][2] or "")
    assert rows_c[3][:3] == (None, "not_json", None)
    assert rows_c[4][:2] == ("partial", None)
    assert rows_c[4][3] == "z" * 2000 + "…"
    assert rows_c[5][:3] == (
        None,
        "ambiguous_reply",
        "2 labels in one reply: supports, does_not_support",
    )
    around = "text around its JSON answer (the request asked for JSON only)"
    assert rows_c[6][:3] == (None, "ambiguous_reply", around)
    # both calls of a cut reply keep it cut, and say so
    for model in models.values():
        responses = [
            json.loads(r)
            for (r,) in rows(db, "SELECT response_json FROM model_calls WHERE model = ?", (model,))
        ]
        cut_records = [r for r in responses if r.get("truncated")]
        assert len(cut_records) == 2, model
        assert all(len(r["content"].encode()) <= 8192 for r in cut_records)
        assert all(r["reply_bytes"] > 20_000 for r in cut_records)


def test_batches_keep_to_the_per_batch_request_and_byte_limits(
    make_workspace, batch_panel, key_env
) -> None:
    n = 10
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        with Workspace(db) as ws:
            run_panel(
                ws,
                panel,
                load_rubric(),
                subset="val",
                batch=BatchOptions(
                    poll_s=0.01, limits=BatchLimits(max_requests=4, max_bytes=10**9)
                ),
            )
        assert server.batch_creations == {"m-a": math.ceil(n / 4)}
        assert [len(f.data.splitlines()) for f in server.uploads()] == [4, 4, 2]
        line = max(len(raw) + 1 for f in server.uploads() for raw in f.data.splitlines())
    db2 = make_workspace(n, name="bytes.db")
    limit = 3 * line  # three of the longest lines to a batch
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        with Workspace(db2) as ws:
            run_panel(
                ws,
                panel,
                load_rubric(),
                subset="val",
                batch=BatchOptions(
                    poll_s=0.01, limits=BatchLimits(max_requests=1000, max_bytes=limit)
                ),
            )
        sizes = [len(f.data) for f in server.uploads()]
        assert all(size <= limit for size in sizes)
        assert sum(len(f.data.splitlines()) for f in server.uploads()) == n
        assert len(sizes) >= math.ceil(n / 3)
    assert len(labels(db2)) == n


def test_failed_malformed_and_missing_lines(make_workspace, batch_panel, key_env) -> None:
    db = make_workspace(6)
    script = Script(default=label_reply("supports"))
    q = {i: f"m-a|{make_case(i).question}" for i in range(6)}
    script.add(q[0], status(500))  # retryable: called again directly
    script.add(q[1], status(400, message="bad line"))  # stored as a direct call would be
    script.add(q[2], garbage())  # a malformed output line: called again directly
    script.add(q[3], reset())  # in neither file: called again directly
    script.add(q[4], label_reply("partial"))
    script.add(q[5], reply("no json here"))  # an invalid judgment, stored
    with BatchServer(script, key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val", batch=FAST)
        assert set(direct_requests(server)) == {q[0], q[2], q[3]}
        assert server.batch_creations == {"m-a": 1}
    assert labels(db) == {
        ("c0000", "a"): ("supports", None),
        ("c0001", "a"): (None, "bad_request"),
        ("c0002", "a"): ("supports", None),
        ("c0003", "a"): ("supports", None),
        ("c0004", "a"): ("partial", None),
        ("c0005", "a"): (None, "not_json"),
    }
    (tally,) = summary.judges
    assert (tally.batch_answered, tally.batch_retried) == (3, 3)
    (report,) = summary.batches
    assert (report.answered, report.retried) == (3, 3)
    assert report.note == "1 malformed output lines"


@pytest.mark.parametrize(("fate", "answered"), [("expired", 2), ("cancelled", 2), ("failed", 0)])
def test_expired_cancelled_and_failed_batches_are_completed_directly(
    make_workspace, batch_panel, key_env, fate: str, answered: int
) -> None:
    n = 5
    db = make_workspace(n)
    with BatchServer(
        Script(default=parity), key=model_and_question, fates=[fate], expire_after=2
    ) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val", batch=FAST)
        assert sum(direct_requests(server).values()) == n - answered
        assert server.batch_creations == {"m-a": 1}
    assert labels(db) == {(f"c{i:04d}", "a"): (expected(i), None) for i in range(n)}
    (report,) = summary.batches
    assert (report.provider_status, report.answered, report.retried) == (
        fate,
        answered,
        n - answered,
    )
    assert summary.judges[0].batch_retried == n - answered


def test_no_wait_exits_3_then_the_same_command_collects(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 4
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, steps_per_poll=2) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        base = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
        base += ["--no-progress", "--poll-interval", "0.01"]
        code, out, err = tiap_cli(*base, "--batch", "--no-wait")
        assert code == 3, err
        assert f"next: tiap judge run --db {db} --panel {panel} --subset val --batch" in err
        assert f"{n} judgments wait in provider batches" in out
        assert server.batch_creations == {"m-a": 1}
        assert server.count == 0
        # the batches command lists it (read-only), also as JSON
        code, out, _ = tiap_cli("judge", "batches", "--db", str(db), "--json")
        assert code == 0
        (listed,) = json.loads(out)
        assert (listed["judge"], listed["state"], listed["requests"]) == ("a", "submitted", n)
        assert listed["batch_id"] == "batch_1"
        code, out, _ = tiap_cli("judge", "batches", "--db", str(db))
        assert "batch_1" in out
        # a direct run leaves the batch's pairs alone and says they wait
        code, out, err = tiap_cli(*base, "--json")
        assert code == 3, err
        assert json.loads(out)["in_batches"] == n
        assert server.count == 0
        # the same command again collects the results: nothing submitted twice
        code, out, err = tiap_cli(*base, "--batch")
        assert code == 0, err
        assert server.batch_creations == {"m-a": 1}
        assert server.count == n
    assert labels(db) == {(f"c{i:04d}", "a"): (expected(i), None) for i in range(n)}
    code, out, _ = tiap_cli("judge", "batches", "--db", str(db), "--json")
    (listed,) = json.loads(out)
    assert (listed["state"], listed["provider_status"], listed["answered"]) == (
        "closed",
        "completed",
        n,
    )


def test_a_batch_created_but_not_recorded_is_found_not_made_again(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    n = 3
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, steps_per_poll=5) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        base = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
        base += ["--no-progress", "--poll-interval", "0.01", "--batch"]
        assert tiap_cli(*base, "--no-wait")[0] == 3
        # as if the run had died after creating the batch, before recording its id
        execute(db, "UPDATE provider_batches SET state = 'creating', batch_id = NULL")
        code, _, err = tiap_cli(*base)
        assert code == 0, err
        assert server.batch_creations == {"m-a": 1}
        assert ("GET", "/v1/batches") in server.admin  # it looked the batch up
        assert len(server.uploads()) == 1
    assert rows(db, "SELECT batch_id, state FROM provider_batches") == [("batch_1", "closed")]
    assert len(labels(db)) == n


def test_a_server_without_batch_endpoints_is_called_directly(
    make_workspace, batch_panel, key_env
) -> None:
    from support.loopback import LoopbackServer

    db = make_workspace(3)
    with LoopbackServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val", batch=FAST)
        assert server.count == 3
    assert labels(db) == {(f"c{i:04d}", "a"): (expected(i), None) for i in range(3)}
    assert "could not be submitted" in (summary.judges[0].route_note or "")
    assert rows(db, "SELECT state FROM provider_batches") == [("abandoned",)]
    assert rows(db, "SELECT COUNT(*) FROM provider_batch_requests WHERE state = 'pending'") == [
        (3,)
    ]


def test_the_budget_reserves_each_line_at_the_batch_price(
    capsys, make_workspace, batch_panel, key_env
) -> None:
    n = 6
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/m-a"}))
        rubric = load_rubric()
        with Workspace(db) as ws:
            plan = plan_run(ws, panel, rubric, subset="val")
            (jp,) = plan.judges
            worst = [
                (p.est_input_upper * BATCH_PRICES[0] + 50 * BATCH_PRICES[1]) / 1e6 for p in jp.pairs
            ]
            budget = sum(worst[:4]) + worst[4] / 2  # four lines fit, the fifth does not
            summary = run_panel(ws, panel, rubric, subset="val", batch=FAST, max_cost=budget)
        assert [len(f.data.splitlines()) for f in server.uploads()] == [4]
    assert summary.stopped_by_budget
    assert summary.incomplete
    assert summary.not_started == 2
    assert len(labels(db)) == 4
    assert rows(db, "SELECT SUM(cost_usd) FROM model_calls")[0][0] <= budget


def test_which_judges_batch() -> None:
    frontier = load_panel("frontier")
    for judge in frontier.judges:
        provider, why = batch_route(judge)
        assert provider is None
        assert "openrouter" in why
    offline = load_panel("offline").judges[0]
    assert batch_route(offline)[0] is None
    base = frontier.judges[0].model_copy(update={"model": "openai/gpt-4o-mini"})
    assert batch_route(base)[0] == "openai"
    local = base.model_copy(update={"api_base": "http://127.0.0.1:9/v1"})
    assert batch_route(local)[0] == "openai"
    assert batch_route(local.model_copy(update={"batch": False})) == (
        None,
        "batch = false in the panel: called directly",
    )
    assert batch_route(base.model_copy(update={"model": "azure/my-deployment"}))[0] == "azure"


def test_kill_9_after_submission_then_the_same_command_submits_nothing_twice(
    make_workspace, batch_panel, key_env
) -> None:
    from run_support import TiapProcess, wait_for

    n = 5
    db = make_workspace(n)
    models = {"a": "openai/m-a", "b": "openai/m-b"}
    # the batches stay 'validating' until the test lets them go on
    with BatchServer(
        Script(default=parity), key=model_and_question, steps_per_poll=10**6
    ) as server:
        panel = batch_panel(server.url, models)
        args = ["judge", "run", "--db", db, "--panel", panel, "--subset", "val", "--batch"]
        run = TiapProcess(*args, "--poll-interval", "0.1", "--no-progress")
        wait_for(
            lambda: (
                rows(db, "SELECT COUNT(*) FROM provider_batches WHERE batch_id IS NOT NULL")
                == [(2,)]
            ),
            180,
            [run],
        )
        run.kill()
        assert server.batch_creations == {"m-a": 1, "m-b": 1}
        assert rows(db, "SELECT COUNT(*) FROM labels") == [(0,)]
        server.steps_per_poll = 1
        again = TiapProcess(*args, "--poll-interval", "0.01", "--no-progress", "--json")
        assert again.wait() == 0, again.err
        # the recorded batches were polled and collected; none submitted again
        assert server.batch_creations == {"m-a": 1, "m-b": 1}
        assert len(server.uploads()) == 2
        assert server.count == 2 * n
        assert direct_requests(server) == Counter()
    assert labels(db) == {(f"c{i:04d}", j): (expected(i), None) for i in range(n) for j in models}
    summary = json.loads(again.out)
    assert [t["batch_answered"] for t in summary["judges"]] == [n, n]
    assert [t["batches_submitted"] for t in summary["judges"]] == [0, 0]


@pytest.mark.slow
def test_two_batch_runs_at_once_submit_each_request_once(
    make_workspace, batch_panel, key_env
) -> None:
    from run_support import TiapProcess

    n = 8
    db = make_workspace(n)
    models = {"a": "openai/m-a", "b": "openai/m-b"}
    with BatchServer(Script(default=parity), key=model_and_question, steps_per_poll=3) as server:
        panel = batch_panel(server.url, models)
        args = ["judge", "run", "--db", db, "--panel", panel, "--subset", "val", "--batch"]
        runs = [TiapProcess(*args, "--poll-interval", "0.05", "--json") for _ in range(2)]
        codes = [r.wait() for r in runs]
        assert codes == [0, 0], [r.err for r in runs]
        custom_ids = Counter(line["custom_id"] for line in batch_lines(server))
        assert len(custom_ids) == 2 * n
        assert set(custom_ids.values()) == {1}  # every request in one batch, once
        assert server.batch_creations == {"m-a": 1, "m-b": 1}
        assert server.count == 2 * n
    assert labels(db) == {(f"c{i:04d}", j): (expected(i), None) for i in range(n) for j in models}


def test_requests_litellm_cannot_write_as_batch_lines_are_called_directly(
    make_workspace, batch_panel, key_env
) -> None:
    db = make_workspace(2)
    # litellm refuses temperature 0 for o-series models: no batch line can be written
    with BatchServer(Script(default=parity), key=model_and_question) as server:
        panel = load_panel(batch_panel(server.url, {"a": "openai/o3-mini"}))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val", batch=FAST)
        assert server.batch_creations == Counter()
        assert server.uploads() == []
    (tally,) = summary.judges
    assert "cannot be batch lines" in (tally.route_note or "")
    assert tally.calls == 2  # called directly (and refused the same way there)
    assert len(labels(db)) == 2
    assert rows(db, "SELECT COUNT(*) FROM provider_batches") == [(0,)]


def test_a_batch_cancelled_through_the_api_is_completed_directly(
    tiap_cli, make_workspace, batch_panel, key_env
) -> None:
    import asyncio

    from judge_support import SECRET

    from tiap.judge.routes.litellm_batch import BatchClient

    n = 3
    db = make_workspace(n)
    with BatchServer(Script(default=parity), key=model_and_question, fates=["cancel"]) as server:
        panel = batch_panel(server.url, {"a": "openai/m-a"})
        base = ["judge", "run", "--db", str(db), "--panel", str(panel), "--subset", "val"]
        base += ["--no-progress", "--poll-interval", "0.01", "--batch"]
        assert tiap_cli(*base, "--no-wait")[0] == 3
        (batch_id,) = [b for (b,) in rows(db, "SELECT batch_id FROM provider_batches")]
        client = BatchClient("openai", "openai/m-a", server.url, SECRET)
        cancelled = asyncio.run(client.cancel(batch_id))
        assert cancelled.status == "cancelling"
        code, out, err = tiap_cli(*base, "--json")
        assert code == 0, err
        assert ("POST", f"/v1/batches/{batch_id}/cancel") in server.admin
        assert sum(direct_requests(server).values()) == n  # every line called directly
        assert server.batch_creations == {"m-a": 1}
    assert labels(db) == {(f"c{i:04d}", "a"): (expected(i), None) for i in range(n)}
    (report,) = json.loads(out)["batches"]
    assert (report["provider_status"], report["answered"], report["retried"]) == ("cancelled", 0, n)

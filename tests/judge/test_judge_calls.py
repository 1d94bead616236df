"""The call path against a real OpenAI-compatible server on 127.0.0.1: replies,
retries (only where they belong), invalid output, fatal errors, stored rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_support import SECRET, make_case, rows

from support.loopback import (
    LoopbackServer,
    Script,
    garbage,
    label_reply,
    reply,
    reset,
    slow,
    status,
)
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric

ROUTES = ["openai", "litellm"]


def q(i: int) -> str:
    """The loopback server's key of case ``i`` (its question)."""
    return make_case(i).question


@pytest.mark.parametrize("route", ROUTES)
def test_each_behaviour_gives_the_right_requests_rows_and_labels(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, route: str
) -> None:
    db = make_workspace(12)
    s = loopback.script
    s.add(q(0), label_reply("supports"))
    s.add(q(1), status(429, retry_after=1), label_reply("partial"))
    s.add(q(2), status(500), label_reply("does_not_support"))
    s.add(q(3), reset(), label_reply("supports"))
    s.add(q(4), slow(1.5), slow(1.5), slow(1.5))  # past the 0.5 s timeout, every attempt
    s.add(q(5), reply('{"rationale": "cut off", "label": "supp'))  # malformed JSON content
    s.add(q(6), label_reply("maybe"))  # a label outside the rubric
    s.add(q(7), status(400, message="bad request"))
    s.add(q(8), reply(""))
    s.add(q(9), reply("I'm sorry, I can't help with that."))
    s.add(q(10), garbage(), garbage(), garbage())  # a body that is not JSON: a server fault
    s.add(q(11), status(503), status(503), label_reply("partial"))
    panel = load_panel(write_panel(loopback.url, timeout_s=0.5, max_attempts=3, route=route))
    rubric = load_rubric()
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, rubric, subset="val")

    # Exactly the requests each behaviour calls for: retried only on 429, 5xx,
    # connection resets, timeouts; never on 400 or on content problems.
    expected = {0: 1, 1: 2, 2: 2, 3: 2, 4: 3, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 3, 11: 3}
    assert dict(loopback.per_key) == {q(i): n for i, n in expected.items()}
    assert loopback.count == sum(expected.values())

    # Retry-After: 1 was waited before the second request of case 1.
    times = [r.time for r in loopback.requests if r.key == q(1)]
    assert times[1] - times[0] >= 0.95

    labels = {
        case_id: (label, reason)
        for case_id, label, reason in rows(
            db, "SELECT case_id, label, reason FROM labels WHERE rater = 'judge-a'"
        )
    }
    assert labels == {
        "c0000": ("supports", None),
        "c0001": ("partial", None),
        "c0002": ("does_not_support", None),
        "c0003": ("supports", None),
        "c0004": (None, "timeout"),
        "c0005": (None, "not_json"),
        "c0006": (None, "label_outside_rubric"),
        "c0007": (None, "bad_request"),
        "c0008": (None, "empty"),
        "c0009": (None, "refusal"),
        "c0010": (None, "server_error"),
        "c0011": ("partial", None),
    }
    # the reason is a code; what it is about is in the note
    (note,) = rows(db, "SELECT note FROM labels WHERE case_id = 'c0006'")[0]
    assert note == "maybe"
    assert rows(db, "SELECT COUNT(*) FROM labels")[0][0] == 12

    calls = {
        h: (status_, model)
        for h, status_, model in rows(db, "SELECT request_hash, status, model FROM model_calls")
    }
    assert len(calls) == 12
    statuses = sorted(s_ for s_, _ in calls.values())
    assert statuses.count("error") == 3  # timeout, 400, garbage body
    assert {m for _, m in calls.values()} == {"openai/gpt-4o-mini"}
    # every label row points at its call
    for (h,) in rows(db, "SELECT request_hash FROM labels"):
        assert h in calls

    tally = summary.judges[0]
    assert tally.calls == 12
    assert tally.valid == 5
    assert tally.retries == sum(n - 1 for n in expected.values())
    assert tally.invalid == {
        "timeout": 1,
        "not_json": 1,
        "label_outside_rubric": 1,
        "bad_request": 1,
        "empty": 1,
        "refusal": 1,
        "server_error": 1,
    }
    assert summary.invalid == tally.invalid


def test_request_carries_the_rubric_schema_temperature_and_key(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(1)
    panel = load_panel(write_panel(loopback.url, max_tokens=123))
    rubric = load_rubric()
    with Workspace(db) as ws:
        run_panel(ws, panel, rubric, subset="val")
    (seen,) = loopback.requests
    body = seen.body
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 123
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["label"]["enum"] == rubric.label_names
    assert seen.authorization == f"Bearer {SECRET}"
    assert "<memory>" in body["messages"][1]["content"]
    # the stored request is what was sent, without the key
    (req,) = rows(db, "SELECT request_json FROM model_calls")
    stored = json.loads(req[0])
    assert stored["messages"] == body["messages"]
    assert SECRET not in req[0]


def test_cost_and_tokens_are_recorded_per_call(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(3)
    panel = load_panel(write_panel(loopback.url))
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
    stored = rows(db, "SELECT input_tokens, output_tokens, cost_usd FROM model_calls")
    assert len(stored) == 3
    for pin, pout, cost in stored:
        assert pin > 0
        assert pout > 0
        # gpt-4o-mini list price in litellm's table: $0.15 / $0.60 per million tokens
        assert cost is not None
        assert abs(cost - (pin * 0.15e-6 + pout * 0.6e-6)) < 1e-12
    assert abs(summary.cost_usd - sum(c for _, _, c in stored)) < 1e-12
    label_costs = rows(db, "SELECT cost_usd, input_tokens FROM labels")
    assert sorted(label_costs) == sorted((c, i) for i, _, c in stored)


def test_rate_limit_retried_until_attempts_run_out(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(1)
    loopback.script.add(q(0), *[status(429, retry_after=0)] * 5)
    panel = load_panel(write_panel(loopback.url, max_attempts=4))
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert loopback.count == 4
    assert rows(db, "SELECT label, reason FROM labels") == [(None, "rate_limited")]
    assert summary.judges[0].retries == 3


def test_not_found_is_not_retried_and_stops_the_judge_without_labels(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(3)
    loopback.script.always.extend([status(404, message="no such model")] * 3)
    panel = load_panel(write_panel(loopback.url))
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert loopback.count == 1
    assert rows(db, "SELECT COUNT(*) FROM labels")[0][0] == 0
    assert rows(db, "SELECT status FROM model_calls") == [("error",)]
    tally = summary.judges[0]
    assert tally.error is not None
    assert tally.error.startswith("not_found")
    assert tally.not_started == 2
    assert summary.errors


def test_auth_error_is_scrubbed_everywhere(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, tmp_path: Path
) -> None:
    db = make_workspace(2)
    # a provider that echoes the key it was given in its error message
    loopback.script.always.extend([status(401, message=f"invalid key {SECRET}")] * 2)
    panel = load_panel(write_panel(loopback.url))
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert loopback.count == 1  # 401 is never retried
    tally = summary.judges[0]
    assert tally.error is not None
    assert tally.error.startswith("auth_error")
    assert "[redacted]" in tally.error
    assert SECRET not in summary.model_dump_json()
    (error,) = rows(db, "SELECT error FROM model_calls")[0]
    assert "[redacted]" in error
    assert SECRET not in error
    for f in tmp_path.iterdir():
        if f.name.startswith("ws.db"):
            assert SECRET.encode() not in f.read_bytes(), f.name


def test_two_judges_run_concurrently_within_their_limits(
    make_workspace, write_panel, key_env
) -> None:
    db = make_workspace(12)
    with LoopbackServer(delay_s=0.2) as server:
        panel = load_panel(write_panel(server.url, judges=("a", "b"), concurrency=3))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert server.count == 24
    # 3 per judge: never more than 6 requests in flight, and more than one at a time
    assert 2 <= server.max_in_flight <= 6
    assert [j.valid for j in summary.judges] == [12, 12]
    assert rows(db, "SELECT rater, COUNT(*) FROM labels GROUP BY rater") == [("a", 12), ("b", 12)]


def test_retry_failed_calls_again_only_where_transport_failed(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    db = make_workspace(3)
    loopback.script.add(q(0), *[status(500)] * 2)  # server error after all attempts
    loopback.script.add(q(1), reply("no JSON here"))  # the judge's own output: not retried
    panel = load_panel(write_panel(loopback.url, max_attempts=2))
    rubric = load_rubric()
    with Workspace(db) as ws:
        run_panel(ws, panel, rubric, subset="val")
        assert loopback.count == 2 + 1 + 1
        # a plain re-run leaves the failed judgment alone
        run_panel(ws, panel, rubric, subset="val")
        assert loopback.count == 4
        summary = run_panel(ws, panel, rubric, subset="val", retry_failed=True)
        assert loopback.count == 5
        assert summary.calls == 1
        assert [r.label for r in ws.label_history("c0000")] == [None, "supports"]
        assert [r.reason for r in ws.label_history("c0001")] == ["not_json"]
        latest = {r.case_id: r.label for r in ws.latest_labels(raters=["judge-a"])}
    assert latest == {"c0000": "supports", "c0001": None, "c0002": "supports"}


def test_openrouter_reported_cost_is_recorded(make_workspace, write_panel, key_env) -> None:
    db = make_workspace(2)
    script = Script(default=label_reply("partial", cost=0.0123))
    with LoopbackServer(script) as server:
        panel = load_panel(
            write_panel(
                server.url, model="openrouter/anthropic/claude-sonnet-4", prices=(3.0, 15.0)
            )
        )
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val")
        body = server.requests[0].body
    assert body["model"] == "anthropic/claude-sonnet-4"
    assert body["usage"] == {"include": True}  # litellm asks OpenRouter for its cost
    # the provider's own figure, not the panel's list price times tokens
    assert rows(db, "SELECT cost_usd FROM model_calls") == [(0.0123,), (0.0123,)]
    assert summary.cost_usd == pytest.approx(0.0246)

"""The two routes of a call (direct OpenAI protocol, litellm) against the scripted
loopback server: the same request bytes, the same stored rows, the same failure
reasons; one deadline per attempt; a reply past ``max_reply_bytes`` kept once, cut."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from judge_support import execute, make_case, rows

from support.loopback import (
    LoopbackServer,
    Script,
    drip,
    garbage,
    label_reply,
    large_reply,
    reset,
    slow,
    status,
)
from tiap import __version__
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric

ROUTES = ("openai", "litellm")
MODELS = {
    "openai": "openai/gpt-4o-mini",
    "openrouter": "openrouter/anthropic/claude-sonnet-4",
    "hosted_vllm": "hosted_vllm/judge-x",
}


def q(i: int) -> str:
    return make_case(i).question


def scripted(cost: float | None) -> tuple[Script, dict[str, tuple[str | None, str | None]]]:
    """The behaviours per case, and the (label, reason) each must end in. ``cost``:
    the charge each reply states (``usage.cost``, as OpenRouter's do)."""
    script = Script()
    script.add(q(0), label_reply("supports", cost=cost))
    script.add(q(1), status(429, retry_after=0.2), label_reply("partial", cost=cost))
    script.add(q(2), *[status(500)] * 3)
    script.add(q(3), *[reset()] * 3)
    script.add(q(4), *[slow(1.5)] * 3)  # past the 0.5 s deadline, every attempt
    script.add(q(5), *[garbage()] * 3)  # a body that is not JSON
    script.add(q(6), label_reply("maybe", cost=cost))  # a label outside the rubric
    script.add(q(7), status(400, message="bad request"))
    script.add(q(8), reset(), label_reply("does_not_support", cost=cost))
    expected = {
        "c0000": ("supports", None),
        "c0001": ("partial", None),
        "c0002": (None, "server_error"),
        "c0003": (None, "connection_error"),
        "c0004": (None, "timeout"),
        "c0005": (None, "server_error"),
        "c0006": (None, "label_outside_rubric"),
        "c0007": (None, "bad_request"),
        "c0008": ("does_not_support", None),
    }
    return script, expected


LABEL_COLUMNS = (
    "case_id, rater, rater_kind, label, reason, rationale, raw, rubric_id, rubric_hash, panel, "
    "model, request_hash, settings_hash, origin, cost_usd, input_tokens, output_tokens"
)
CALL_COLUMNS = (
    "request_hash, model, api_base, request_json, response_json, status, cost_usd, "
    "input_tokens, output_tokens"
)


def judged(server: LoopbackServer, make_workspace, write_panel, model: str, route: str) -> dict:
    """One run of the scripted cases on ``route``; what the server saw and what was stored."""
    db = make_workspace(9, name=f"{route}.db")
    # OpenRouter states each call's charge; the others do not (their price is used)
    server.script, expected = scripted(0.0123 if model.startswith("openrouter/") else None)
    server.reset_log()
    path = write_panel(
        server.url, filename=f"{route}.toml", model=model, timeout_s=0.5, route=route
    )
    with Workspace(db) as ws:
        summary = run_panel(ws, load_panel(path), load_rubric(), subset="val")
    seen = [(r.key, r.raw, r.headers.get("User-Agent", "")) for r in server.requests]
    labels = rows(db, f"SELECT {LABEL_COLUMNS} FROM labels ORDER BY case_id")
    notes = dict(rows(db, "SELECT case_id, note FROM labels"))
    calls = rows(db, f"SELECT {CALL_COLUMNS} FROM model_calls ORDER BY request_hash")
    errors = {
        h: json.loads(e)
        for h, e in rows(db, "SELECT request_hash, error FROM model_calls WHERE error IS NOT NULL")
    }
    return {
        "expected": expected,
        "seen": seen,
        "labels": labels,
        "notes": notes,
        "calls": calls,
        "errors": {h: (e["reason"], e["status"]) for h, e in errors.items()},
        "summary": summary,
    }


@pytest.mark.parametrize("provider", list(MODELS))
def test_both_routes_send_the_same_bytes_and_store_the_same_rows(
    loopback: LoopbackServer, make_workspace, write_panel, key_env, provider: str
) -> None:
    model = MODELS[provider]
    runs = {route: judged(loopback, make_workspace, write_panel, model, route) for route in ROUTES}
    direct, lite = runs["openai"], runs["litellm"]

    # the same requests, byte for byte, in the same order (headers aside) ...
    assert [(k, raw) for k, raw, _ in direct["seen"]] == [(k, raw) for k, raw, _ in lite["seen"]]
    assert len(direct["seen"]) == 1 + 2 + 3 + 3 + 3 + 3 + 1 + 1 + 2
    # ... on two different routes (the direct one names itself)
    assert {ua for *_, ua in direct["seen"]} == {f"tiap/{__version__}"}
    assert all(not ua.startswith("tiap/") for *_, ua in lite["seen"])
    body = json.loads(direct["seen"][0][1])
    assert body["model"] == model.split("/", 1)[1]
    if provider == "openrouter":
        assert body["usage"] == {"include": True}  # as litellm asks OpenRouter for its cost

    # the same label rows and call rows, the same failure reasons
    for a, b in zip(direct["labels"], lite["labels"], strict=True):
        assert a == b, [(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    assert direct["calls"] == lite["calls"]
    assert direct["errors"] == lite["errors"]
    for run in runs.values():
        got = {r[0]: (r[3], r[4]) for r in run["labels"]}
        assert got == run["expected"]
        assert run["notes"]["c0006"] == "maybe"
        assert run["summary"].judges[0].retries == 1 + 2 + 2 + 2 + 2 + 1
    costs = {r[0]: r[14] for r in direct["labels"] if r[3] is not None}
    if provider == "openrouter":
        assert set(costs.values()) == {0.0123}  # the provider's own figure, on both routes
    if provider == "openai":
        pin, pout = next((r[15], r[16]) for r in direct["labels"] if r[0] == "c0000")
        assert costs["c0000"] == pytest.approx(pin * 0.15e-6 + pout * 0.6e-6)  # litellm's table
    if provider == "hosted_vllm":
        assert set(costs.values()) == {None}  # no known price: unknown, on both routes


@pytest.mark.parametrize("route", ROUTES)
def test_a_trickling_reply_fails_at_the_deadline(
    make_workspace, write_panel, key_env, route: str
) -> None:
    db = make_workspace(1)
    # a valid reply, its body 10 bytes every 0.5 s: some 15 s in all
    with LoopbackServer(Script(always=[drip(chunk=10, every_s=0.5)])) as server:
        path = write_panel(server.url, timeout_s=2, max_attempts=1, route=route)
        with Workspace(db) as ws:
            start = time.monotonic()
            summary = run_panel(ws, load_panel(path), load_rubric(), subset="val")
            elapsed = time.monotonic() - start
    assert rows(db, "SELECT label, reason FROM labels") == [(None, "timeout")]
    assert summary.invalid == {"timeout": 1}
    assert 1.9 <= elapsed < 5.0


def _stored_text(db: Path) -> int:
    """Characters of reply text stored anywhere in the workspace."""
    (labels,) = rows(
        db,
        "SELECT COALESCE(SUM(LENGTH(raw)), 0) + COALESCE(SUM(LENGTH(rationale)), 0) "
        "+ COALESCE(SUM(LENGTH(note)), 0) FROM labels",
    )[0]
    (calls,) = rows(db, "SELECT COALESCE(SUM(LENGTH(response_json)), 0) FROM model_calls")[0]
    return labels + calls


@pytest.mark.parametrize("route", ROUTES)
def test_a_huge_reply_is_kept_once_cut_to_the_cap(
    tmp_path: Path, make_workspace, write_panel, key_env, route: str
) -> None:
    db = make_workspace(2)
    script = Script()
    # 5 MB of rationale before the label: the part kept has no label
    huge = large_reply(5_000_000)
    script.add(q(0), huge)
    # a judgment, then 5 MB of padding: the part kept has a label, but what was cut
    # could hold another, so it is not read as the answer either
    padded = large_reply(5_000_000, label="partial", label_first=True)
    script.add(q(1), padded)
    sizes = {len(b.content.encode()) for b in (huge, padded) if b.content}
    with LoopbackServer(script) as server:
        panel = load_panel(write_panel(server.url, route=route))
        with Workspace(db) as ws:
            summary = run_panel(ws, panel, load_rubric(), subset="val")
    assert server.count == 2  # never retried
    got = rows(db, "SELECT case_id, label, reason, raw, rationale, note FROM labels ORDER BY 1")
    (_, label0, reason0, raw0, rationale0, note0), (_, label1, reason1, raw1, _, note1) = got
    assert (label0, reason0) == (None, "reply_too_large")
    assert (label1, reason1) == (None, "reply_too_large")
    assert raw0 is None  # the one copy is the call's
    assert raw1 is None
    assert rationale0 is None
    assert "max_reply_bytes" in note0
    assert "max_reply_bytes" in note1
    assert summary.invalid == {"reply_too_large": 2}
    cap = 64 * 1024
    read = set()
    for (response,) in rows(db, "SELECT response_json FROM model_calls"):
        record = json.loads(response)
        assert record["truncated"] is True
        assert len(record["content"].encode()) == cap
        read.add(record["reply_bytes"])
    # litellm read the whole replies (their sizes are known); the direct route stopped
    assert read == ({None} if route == "openai" else sizes)
    # one bounded copy per reply, and a small workspace (not 3 x 5 MB x 2)
    assert _stored_text(db) < 2 * cap + 4_000
    size = sum(f.stat().st_size for f in tmp_path.iterdir() if f.name.startswith("ws.db"))
    assert size < 1_000_000

    # a re-run answered from the cache reads the same from the stored, cut reply
    execute(db, "DELETE FROM labels")
    with Workspace(db) as ws:
        again = run_panel(ws, panel, load_rubric(), subset="val")
    assert again.cache_hits == 2
    again_rows = rows(db, "SELECT case_id, label, reason, raw, rationale, note FROM labels")
    assert sorted(again_rows) == got


def test_a_request_litellm_cannot_build_goes_through_litellm_and_fails_as_there(
    make_workspace, loopback: LoopbackServer, write_panel, key_env
) -> None:
    # litellm refuses temperature 0 for an o-series model before sending anything:
    # the direct route has no request to copy, so the call is litellm's, and fails there
    db = make_workspace(2)
    outcomes = {}
    for route in ROUTES:
        path = write_panel(loopback.url, filename=f"{route}.toml", model="openai/o3-mini")
        text = path.read_text().replace("concurrency = 1", f'concurrency = 1\nroute = "{route}"')
        path.write_text(text)
        with Workspace(db) as ws:
            execute(db, "DELETE FROM labels")
            execute(db, "DELETE FROM model_calls")
            run_panel(ws, load_panel(path), load_rubric(), subset="val")
        outcomes[route] = rows(db, "SELECT case_id, label, reason FROM labels ORDER BY 1")
    assert loopback.count == 0
    assert outcomes["openai"] == outcomes["litellm"]
    assert outcomes["openai"] == [("c0000", None, "bad_request"), ("c0001", None, "bad_request")]

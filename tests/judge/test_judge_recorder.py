"""Storing calls: many calls stored at once (the writer's groups) store exactly what
storing them one by one stores: the same ``model_calls`` rows (their requests'
JSON put together from a template too), labels (in the same order, a pair labelled
by an earlier call of the same request skipped), budget and leases."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from judge_support import make_case

from tiap.cases import Workspace
from tiap.cases.rows import JsonTemplate
from tiap.judge.call import CallOutcome
from tiap.judge.claims import Ledger
from tiap.judge.failures import Failure
from tiap.judge.outcomes import CallResult, Rater, Recorder
from tiap.rubric import Reason, load_rubric

OWNER = "host:1:run"


def reply(label: str) -> CallOutcome:
    content = f'{{"rationale": "r", "label": "{label}"}}'
    record = {"content": content, "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    return CallOutcome(
        content=content, response=record, attempts=1, input_tokens=10, output_tokens=5
    )


def request(model: str, n: int) -> dict[str, object]:
    messages = [{"role": "user", "content": f"case {n} – “quoted” ünïcode"}]
    schema = {"type": "object", "properties": {"label": {"enum": ["a", "b"]}}}
    return {"model": model, "seed": None, "response_format": schema, "messages": messages}


def results(rubric_hash: str) -> list[CallResult]:
    a = Rater("judge-a", "openai/a", None, "p", "s" * 64, structured=False)
    b = Rater("judge-b", "openai/b", None, "p", "t" * 64, structured=False)
    failed = CallOutcome(
        failure=Failure(Reason.SERVER_ERROR, True, False, 500, "HTTP 500"), attempts=3
    )
    return [
        CallResult(a, "h1", request("a", 1), ["c0000", "c0001"], reply("supports"), 0.5, 0, 1.0),
        CallResult(b, "h2", request("b", 2), ["c0000"], reply("partial"), None, 0, 2.0),
        CallResult(a, "h3", request("a", 3), ["c0002"], failed, None, 0, 0.5),
        # the same request again for a pair just labelled: skipped, its call kept
        CallResult(
            a,
            "h1",
            request("a", 1),
            ["c0001", "c0003"],
            reply("does_not_support"),
            0.25,
            0,
            1.0,
        ),
    ]


def stored(path: Path, together: bool) -> tuple[list[tuple], list[tuple], list[tuple], list]:
    rubric = load_rubric()
    with Workspace(path) as ws:
        ws.add_cases([make_case(i) for i in range(4)])
        ledger = Ledger(ws, OWNER, "scope", 10.0, 60.0)
        _ = ledger.budget
        ws.reserve_budget(OWNER, 4.5)
        ws.take_leases(
            OWNER, "judge-a", rubric.content_hash, [("c0000", "h1"), ("c0003", "h1")], 1e12
        )
        recorder = Recorder(rubric, owner=OWNER, ledger=ledger, secrets=["sk-secret"])
        calls = results(rubric.content_hash)
        if together:
            calls = [
                replace(
                    r, request_json=JsonTemplate(r.request, "messages").text(r.request["messages"])
                )
                for r in calls
            ]
            out = recorder.record_calls(ws, calls)
        else:
            out = [
                recorder.record(
                    ws,
                    r.rater,
                    request_hash=r.request_hash,
                    request=r.request,
                    case_ids=r.case_ids,
                    outcome=r.outcome,
                    cost=r.cost,
                    epoch=r.epoch,
                    reserved=r.reserved,
                )
                for r in calls
            ]
        summary = [([(x.case_id, x.label) for x in s.labels], s.skipped) for s in out]
    conn = sqlite3.connect(path)
    try:
        labels = conn.execute(
            "SELECT case_id, rater, label, reason, rationale, note, raw, request_hash, "
            "settings_hash, cost_usd, input_tokens, output_tokens FROM labels ORDER BY id"
        ).fetchall()
        calls_rows = conn.execute(
            "SELECT request_hash, model, request_json, response_json, status, error, cost_usd, "
            "input_tokens, output_tokens FROM model_calls ORDER BY rowid"
        ).fetchall()
        ledger_rows = conn.execute("SELECT reserved_usd, spent_usd FROM budget_ledger").fetchall()
        leases = conn.execute("SELECT case_id FROM judge_leases").fetchall()
    finally:
        conn.close()
    return labels, calls_rows, ledger_rows + leases, summary


def test_calls_stored_together_store_what_one_by_one_stores(tmp_path: Path) -> None:
    one_by_one = stored(tmp_path / "one.db", together=False)
    together = stored(tmp_path / "together.db", together=True)
    assert together == one_by_one
    labels, calls, budget_and_leases, summary = together
    assert [(c, r, lab) for c, r, lab, *_ in labels] == [
        ("c0000", "judge-a", "supports"),
        ("c0001", "judge-a", "supports"),
        ("c0000", "judge-b", "partial"),
        ("c0002", "judge-a", None),
        ("c0003", "judge-a", "does_not_support"),
    ]
    assert summary[-1] == ([("c0003", "does_not_support")], 1)
    assert [c[0] for c in calls] == ["h1", "h2", "h3"]  # h1's success kept
    # reserved 4.5, all settled; spent: the costs, the reservation for an unknown one
    reserved, spent = budget_and_leases[0]
    assert reserved == 0
    assert abs(spent - (0.5 + 2.0 + 0.5 + 0.25)) < 1e-12
    assert budget_and_leases[1:] == []  # the stored pairs' leases are released

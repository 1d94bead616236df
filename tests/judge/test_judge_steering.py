"""Replies that try to steer the reading of their answer, through the real loopback
server: stored as ``ambiguous_reply`` abstentions with their note, by the direct
call path and by the cache alike, under each judge's response format."""

from __future__ import annotations

import json

import pytest
from judge_support import execute, make_case, rows

from support.loopback import LoopbackServer, label_reply, reply
from tiap.cases import Workspace
from tiap.judge import load_panel, run_panel
from tiap.rubric import load_rubric

STEERING = 'The memory says {"label": "supports"} but really: {"label": "does_not_support"}'
PREAMBLE = 'Here is my verdict: {"rationale": "it has the date", "label": "supports"}'


def q(i: int) -> str:
    return make_case(i).question


def labels(db) -> dict[tuple[str, str], tuple[str | None, str | None, str | None]]:
    return {
        (case_id, rater): (label, reason, note)
        for case_id, rater, label, reason, note in rows(
            db, "SELECT case_id, rater, label, reason, note FROM labels"
        )
    }


@pytest.mark.parametrize("route", ["openai", "litellm"])
def test_a_steering_reply_is_stored_as_ambiguous_with_its_note(
    make_workspace, loopback: LoopbackServer, write_panel, key_env, route: str
) -> None:
    db = make_workspace(3)
    s = loopback.script
    s.add(q(0), reply(STEERING), reply(STEERING))
    s.add(q(1), reply(PREAMBLE), reply(PREAMBLE))
    s.add(q(2), label_reply("partial"), label_reply("partial"))
    panel = load_panel(
        write_panel(
            loopback.url,
            judges=("free", "strict"),
            response_format={"free": "none", "strict": "json_schema"},
            route=route,
        )
    )
    rubric = load_rubric()
    with Workspace(db) as ws:
        summary = run_panel(ws, panel, rubric, subset="val")
    assert loopback.count == 6
    # the free-text judge was sent no response format, the structured one its schema
    formats = {json.dumps(r.body.get("response_format"))[:30] for r in loopback.requests}
    assert formats == {"null", '{"type": "json_schema", "json_'}

    two = "2 labels in one reply: supports, does_not_support"
    around = "text around its JSON answer (the request asked for JSON only)"
    expected = {
        ("c0000", "free"): (None, "ambiguous_reply", two),
        ("c0000", "strict"): (None, "ambiguous_reply", two),
        ("c0001", "free"): ("supports", None, None),
        ("c0001", "strict"): (None, "ambiguous_reply", around),
        ("c0002", "free"): ("partial", None, None),
        ("c0002", "strict"): ("partial", None, None),
    }
    assert labels(db) == expected
    # the reply is kept as it came, for a person to read
    (raw,) = rows(db, "SELECT raw FROM labels WHERE case_id = 'c0000' AND rater = 'free'")[0]
    assert raw == STEERING
    by_judge = {t.judge: t for t in summary.judges}
    assert by_judge["free"].invalid == {"ambiguous_reply": 1}
    assert by_judge["strict"].invalid == {"ambiguous_reply": 2}
    assert summary.invalid == {"ambiguous_reply": 3}

    # answered again from the cache (no request), each judge's reply is read by the
    # same rule: the cache path knows the judge's response format too
    execute(db, "DELETE FROM labels")
    with Workspace(db) as ws:
        again = run_panel(ws, panel, rubric, subset="val")
    assert loopback.count == 6
    assert sum(t.cache_hits for t in again.judges) == 6
    assert labels(db) == expected

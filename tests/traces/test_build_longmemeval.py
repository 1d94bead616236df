"""LongMemEval adapter on small hand-written records: every rule in isolation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiap.errors import InputError, TiapError
from tiap.traces.longmemeval import load_longmemeval


def _t(role: str, content: str, has_answer: bool | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": role, "content": content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


S_A = [_t("user", "I bought a red bike on Monday.", True), _t("assistant", "Nice bike!", False)]
S_B = [_t("user", "What is a good pasta recipe?"), _t("assistant", "Try carbonara.")]
S_C = [_t("user", "My cat is called Tom.", False), _t("assistant", "Cute name.", False)]


def _record(qid: str, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What colour is my bike?",
        "answer": "red",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 11:00"],
        "haystack_session_ids": ["answer_aa", "sharegpt_x_0"],
        "haystack_sessions": [S_A, S_B],
        "answer_session_ids": ["answer_aa"],
    }
    rec.update(over)
    return rec


THREE_DATES = ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 11:00", "2023/05/22 (Mon) 9:00"]

RECORDS = [
    _record("q1"),
    # abstention: the answer session has no flagged turn
    _record(
        "q2_abs",
        question_type="knowledge-update",
        answer="You did not mention this.",
        haystack_session_ids=["answer_cc", "sharegpt_x_0"],
        haystack_sessions=[S_C, S_B],
        answer_session_ids=["answer_cc"],
    ),
    # a session id listed twice in one haystack (identical content), an integer answer,
    # and an answer session that is not in the haystack
    _record(
        "q3",
        question_type="multi-session",
        answer=3,
        haystack_dates=THREE_DATES,
        haystack_session_ids=["answer_aa", "sharegpt_x_0", "sharegpt_x_0"],
        haystack_sessions=[S_A, S_B, S_B],
        answer_session_ids=["answer_aa", "answer_zz"],
    ),
    # same id twice with different content
    _record(
        "q4",
        haystack_dates=THREE_DATES,
        haystack_session_ids=["answer_aa", "sharegpt_x_0", "sharegpt_x_0"],
        haystack_sessions=[S_A, S_B, S_C],
    ),
    _record("q1", question="a repeated question id"),
]  # fmt: skip


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(RECORDS), encoding="utf-8")
    return path


def test_turn_sources_namespaced_per_question(lme_file: Path) -> None:
    ds = load_longmemeval(lme_file)
    ids = [s.source_id for s in ds.sources if s.conversation_id == "q1"]
    assert ids == ["q1:answer_aa:1", "q1:answer_aa:2", "q1:sharegpt_x_0:1", "q1:sharegpt_x_0:2"]
    first = ds.sources[0]
    assert first.speaker == "user"
    assert first.time == "2023/05/20 (Sat) 10:00"
    assert first.metadata == {"session_id": "answer_aa", "turn": 1, "has_answer": True}
    # the same session in another haystack is another source
    assert "q3:answer_aa:1" in {s.source_id for s in ds.sources}
    assert ds.turns[0].speaker == "User"
    assert ds.turns[0].listener == "Assistant"


def test_has_answer_evidence_and_abstention_exclusion(lme_file: Path) -> None:
    ds = load_longmemeval(lme_file)
    q = {x.query_id: x for x in ds.queries}
    assert q["q1"].evidence == ["q1:answer_aa:1"]
    assert q["q1"].category == "single-session-user"
    assert not q["q1"].abstention
    assert "q2_abs" not in q
    no_ev = [(i.item, i.detail) for i in ds.log.issues if i.kind == "query_no_evidence"]
    assert no_ev == [("q2_abs", "no turn is flagged has_answer (abstention question)")]
    assert ds.excluded_queries == ["q2_abs", "q1 (record 4)"]
    unflagged = [i.item for i in ds.log.issues if i.kind == "answer_session_unflagged"]
    assert unflagged == ["q2_abs:answer_cc"]


def test_fallback_and_session_rules(lme_file: Path) -> None:
    ds = load_longmemeval(lme_file, evidence="has-answer-or-sessions")
    q = {x.query_id: x for x in ds.queries}
    assert q["q2_abs"].abstention
    assert q["q2_abs"].evidence == ["q2_abs:answer_cc:1", "q2_abs:answer_cc:2"]
    assert q["q2_abs"].metadata["evidence_rule"] == "answer-sessions"
    assert [i.item for i in ds.log.issues if i.kind == "evidence_fallback"] == ["q2_abs"]
    assert q["q1"].evidence == ["q1:answer_aa:1"]  # flagged turns still win

    ds = load_longmemeval(lme_file, evidence="answer-sessions")
    q = {x.query_id: x for x in ds.queries}
    assert q["q1"].evidence == ["q1:answer_aa:1", "q1:answer_aa:2"]

    ds = load_longmemeval(lme_file, granularity="session")
    q = {x.query_id: x for x in ds.queries}
    assert q["q1"].evidence == ["q1:answer_aa"]
    src = {s.source_id: s for s in ds.sources}
    assert src["q1:answer_aa"].text == "user: I bought a red bike on Monday.\nassistant: Nice bike!"
    # parser units are turns, linked to their session source
    assert ds.turns[0].unit_id == "q1:answer_aa:1"
    assert ds.turns[0].source_id == "q1:answer_aa"


def test_duplicate_sessions_missing_answer_sessions_and_answers(lme_file: Path) -> None:
    ds = load_longmemeval(lme_file)
    dup = [(i.kind, i.item, i.value) for i in ds.log.issues if i.kind.startswith("duplicate_s")]
    assert dup == [
        ("duplicate_session", "q3:sharegpt_x_0", "position 2 (2023/05/22 (Mon) 9:00)"),
        ("duplicate_session_conflict", "q4:sharegpt_x_0", "position 2 (2023/05/22 (Mon) 9:00)"),
    ]
    q3_sources = [s.source_id for s in ds.sources if s.conversation_id == "q3"]
    assert len(q3_sources) == 4  # the repeated session is stored once
    missing = [(i.item, i.value) for i in ds.log.issues if i.kind == "evidence_unresolved"]
    assert missing == [("q3", "answer_zz")]
    q = {x.query_id: x for x in ds.queries}
    assert q["q3"].answer == "3"
    assert [(i.item, i.kind) for i in ds.log.issues if i.kind == "duplicate_query_id"] == [
        ("q1", "duplicate_query_id")
    ]
    assert q["q1"].question == "What colour is my bike?"  # the first record wins
    # 2 + 2 + 3 + 3 slots; the repeated record q1 is not read past its id
    assert ds.counts["records"] == 5
    assert ds.counts["session_slots"] == 10


def test_stream_reads_a_file_larger_than_its_buffer(
    lme_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiap.traces.jsonstream as js

    whole = load_longmemeval(lme_file)
    monkeypatch.setattr(js, "_CHUNK", 7)
    small = load_longmemeval(lme_file)
    assert [q.model_dump() for q in small.queries] == [q.model_dump() for q in whole.queries]
    assert small.input_sha256 == whole.input_sha256


def test_bad_records_and_options(tmp_path: Path, lme_file: Path) -> None:
    bad = tmp_path / "bad.json"
    rec = _record("qx")
    rec["haystack_dates"] = rec["haystack_dates"][:1]
    bad.write_text(json.dumps([_record("ok"), rec], indent=1))
    with pytest.raises(InputError, match="record 1 \\('qx'\\): haystack_session_ids"):
        load_longmemeval(bad)
    rec = _record("qy")
    del rec["question"]
    bad.write_text(json.dumps([rec]))
    with pytest.raises(InputError, match="record 0 \\('qy'\\): missing field 'question'"):
        load_longmemeval(bad)
    with pytest.raises(TiapError, match="unknown granularity"):
        load_longmemeval(lme_file, granularity="word")
    with pytest.raises(TiapError, match="unknown evidence rule"):
        load_longmemeval(lme_file, evidence="all")

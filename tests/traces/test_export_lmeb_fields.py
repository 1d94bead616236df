"""`tiap traces export lmeb` keeps what a dialogue turn carries (speaker, timestamp,
conversation, session and turn ids, metadata) beside LMEB's fields, and `traces build
lmeb` reads it back: an export and a build lose nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.traces.bundle import Bundle, read_bundle
from tiap.traces.export import corpus_row, export_lmeb
from tiap.traces.lmeb import load_lmeb, scene_of
from tiap.traces.models import Source


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def dialogue(sample_bundle_dir: Path) -> Bundle:
    """The sample bundle with session and turn ids as LoCoMo's and LongMemEval's
    adapters keep them in a source's metadata."""
    sample = read_bundle(sample_bundle_dir)
    sources = {}
    for i, (sid, s) in enumerate(sample.sources.items()):
        meta = (
            {"dia_id": f"D1:{i}", "session": 1, "image_caption": "a dog"}
            if i % 2
            else {"session_id": f"s{i // 4}", "turn": i % 4, "has_answer": True}
        )
        sources[sid] = s.model_copy(update={"metadata": meta})
    return Bundle(sample.config, sample.queries, sources, {}, {})


def test_the_corpus_carries_each_turns_fields(dialogue: Bundle, tmp_path: Path) -> None:
    export_lmeb(dialogue, tmp_path / "task")
    rows = _jsonl(tmp_path / "task" / "corpus.jsonl")
    first, second = (dialogue.sources[r["id"]] for r in rows[:2])
    assert rows[0] == {
        "_id": first.source_id,
        "id": first.source_id,
        "title": "",  # LMEB scores title + " " + text: the source text, unchanged
        "text": first.text,
        "speaker": first.speaker,
        "time": first.time,
        "conversation_id": first.conversation_id,
        "session_id": "s0",
        "turn_id": 0,
        "metadata": {"session_id": "s0", "turn": 0, "has_answer": True},
    }
    assert (rows[1]["session_id"], rows[1]["turn_id"]) == (1, "D1:1")
    assert rows[1]["time"] == second.time == "2024-03-02 10:15 (Sat)"
    # a source with none of them is LMEB's line alone
    bare = corpus_row(Source(source_id="x", text="hello"))
    assert bare == {"_id": "x", "id": "x", "title": "", "text": "hello"}
    queries = _jsonl(tmp_path / "task" / "queries.jsonl")
    q = dialogue.queries[0]
    assert queries[0] == {
        "_id": q.query_id,
        "id": q.query_id,
        "text": q.question,
        "answer": q.answer,
        "category": q.category,
        "conversation_id": q.conversation_id,
    }


def test_export_then_build_loses_nothing(dialogue: Bundle, tmp_path: Path) -> None:
    export_lmeb(dialogue, tmp_path / "task", by_category=True)
    for directory in (tmp_path / "task", tmp_path / "task" / "single_hop"):
        back = load_lmeb(directory)
        assert back.sources == list(dialogue.sources.values())  # every field, every source
        wanted = {q.query_id: q for q in dialogue.queries}
        assert back.queries
        for b in back.queries:
            a = wanted[b.query_id]
            assert (b.question, b.answer, b.category, b.evidence) == (
                a.question,
                a.answer,
                a.category,
                a.evidence,
            )
            # ranked over its LMEB scene; its own conversation is kept beside
            assert b.conversation_id == scene_of(a.query_id)
            assert b.metadata == {**a.metadata, "conversation_id": a.conversation_id}


def test_without_candidates_the_conversation_is_kept_in_the_metadata(
    dialogue: Bundle, tmp_path: Path
) -> None:
    export_lmeb(dialogue, tmp_path / "task")
    (tmp_path / "task" / "candidates.jsonl").unlink()
    back = load_lmeb(tmp_path / "task")
    # every query is still ranked over the whole corpus: no conversation on either side
    assert {s.conversation_id for s in back.sources} == {None}
    assert {q.conversation_id for q in back.queries} == {None}
    original = list(dialogue.sources.values())
    for a, b in zip(original, back.sources, strict=True):
        assert b.metadata == {**a.metadata, "conversation_id": a.conversation_id}
        assert (b.speaker, b.time, b.text) == (a.speaker, a.time, a.text)


def test_a_foreign_corpus_with_session_and_turn_fields(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    lines = [
        {"id": "d1", "title": "", "text": "hi", "session_id": "S1", "turn_id": 3, "time": 17},
        {"id": "d2", "title": "Bob", "text": "yo", "speaker": "Bob", "metadata": "odd"},
    ]
    (task / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (task / "queries.jsonl").write_text(
        json.dumps({"id": "q1", "text": "who?", "answer": 42, "category": 2}) + "\n"
    )
    (task / "qrels.tsv").write_text("q1\td2\t1\n")
    back = load_lmeb(task)
    d1, d2 = back.sources
    assert d1.time is None
    assert d1.metadata == {"session_id": "S1", "turn_id": 3, "time": 17}  # nothing dropped
    assert (d2.speaker, d2.text) == ("Bob", "Bob yo")
    assert d2.metadata == {"metadata": "odd", "title": "Bob"}
    (q,) = back.queries
    assert (q.answer, q.category) == ("42", "2")


@pytest.mark.shared_data
@pytest.mark.slow
def test_locomo_round_trip_keeps_timestamps_and_turn_ids(tiap_cli, built, tmp_path: Path) -> None:
    bundle_dir = built.copy("locomo-raw", tmp_path / "locomo")
    original = read_bundle(bundle_dir)
    task = tmp_path / "task"
    tiap_cli.ok("traces", "export", "lmeb", str(bundle_dir), str(task))
    rows = _jsonl(task / "corpus.jsonl")
    turn = next(r for r in rows if r["id"] == "conv-26:D1:3")
    assert (turn["session_id"], turn["turn_id"]) == (1, "D1:3")
    assert turn["time"] == "1:56 pm on 8 May, 2023"
    back_dir = tmp_path / "back"
    tiap_cli.ok("traces", "build", "lmeb", str(task), "-o", str(back_dir), "-q")
    back = read_bundle(back_dir)
    assert list(back.sources.values()) == list(original.sources.values())
    assert back.rankings("bm25-raw") == original.rankings("bm25-raw")

"""BEAM: every rule on small hand-made scale directories, then the real 100K slice.

The real-data tests read ``shared/data/beam/100K`` (20 conversations, 400
questions) and check the figures its README documents; they are skipped only
when that folder is absent.
"""

from __future__ import annotations

import csv
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bundle_support import conversations
from tiap.cli import main
from tiap.errors import InputError, TiapError
from tiap.traces.adapter_output import DatasetTraces
from tiap.traces.beam import flatten_ids, load_beam
from tiap.traces.build import BuildOptions, build_bundle
from tiap.traces.bundle import read_bundle
from tiap.traces.dataset_registry import DATASETS
from tiap.traces.report import BuildReport
from tiap.traces.stores import default_stores


def _help_text(out: str) -> str:
    """Help output as one line of words, without the boxes around it."""
    return " ".join(out.replace("│", " ").split())


def _msg(role: str, mid: int, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "id": mid, **extra, "content": content}


RUNAWAY = "Step one.\n" + " " * 300 + "\n" + "|" + " " * 150 + "|\n   "
CHAT_1 = [
    {
        "batch_number": 1,
        "time_anchor": None,
        "turns": [
            [
                _msg(
                    "user",
                    0,
                    "I'm planning a trip to Lisbon with my sister. ->-> 1,1",
                    time_anchor="March-15-2024",
                    index="1,1",
                    question_type="main_question",
                ),
                _msg("assistant", 1, "Lisbon is lovely in spring; book the tram tour early."),
            ],
            [
                _msg(
                    "user",
                    2,
                    "My budget is 900 euros for the whole week. ->-> 1,3",
                    index="1,3",
                    question_type="main_question",
                ),
                _msg("assistant", 3, RUNAWAY),
                _msg(
                    "user",
                    4,
                    "Yes, the hostel near the river works for me. ->->  1,4",
                    question_type="answer_ai_question",
                ),
                _msg("assistant", 5, "Great, the hostel is booked. ->-> 1,4"),
            ],
        ],
    },
    {
        "batch_number": 2,
        "time_anchor": None,
        "turns": [
            [
                _msg(
                    "user",
                    6,
                    "We moved the trip to April instead. ->-> 2,N/A",
                    time_anchor="April-02-2024",
                    index="2,N/A",
                    question_type="main_question",
                ),
                _msg("assistant", 7, "x" * 120 + " the end"),
            ]
        ],
    },
]
QUESTIONS_1 = {
    "abstention": [
        {"question": "What is my sister's name?", "ideal_response": "Not mentioned.",
         "difficulty": "easy", "rubric": ["says it was not mentioned"],
         "plan_reference": "Batch 1, Bullet 2"},
    ],
    "contradiction_resolution": [
        {"question": "Did I book a hostel?", "ideal_answer": "Yes, near the river.",
         "source_chat_ids": {"first_statement": [4], "second_statement": [4, 5]},
         "difficulty": "clear", "rubric": ["mentions the hostel"]},
    ],
    "event_ordering": [
        {"question": "In what order did I mention things?", "answer": "trip, budget, move",
         "source_chat_ids": [0, [2, 4], 6, 0], "rubric": ["trip", "budget", "move"]},
    ],
    "knowledge_update": [
        {"question": "When is the trip?", "answer": "April",
         "source_chat_ids": {"original_info": [0], "updated_info": []}},
    ],
    "preference_following": [
        {"question": "Plan my day.", "expected_compliance": "Stays on budget.",
         "source_chat_ids": []},
        {"question": "Odd ids?", "expected_compliance": "x",
         "source_chat_ids": ["2", 99, True, 3.0]},
    ],
    "new_category": [
        {"question": "A category this adapter does not know", "ideal_answer": "kept",
         "source_chat_ids": [1]},
    ],
}  # fmt: skip
CHAT_2 = [
    {
        "batch_number": 1,
        "time_anchor": "May-01-2024",
        "turns": [
            [
                _msg("user", 0, "Help me learn chess openings.", question_type="main_question"),
                _msg("assistant", 1, "Start with the Italian game."),
            ]
        ],
    }
]
QUESTIONS_2 = {
    "information_extraction": [
        {"question": "Which opening?", "answer": "Italian game", "source_chat_ids": [1]},
    ],
}


def _write_conv(folder: Path, chat: Any, questions: Any, nested: bool = False) -> None:
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat, indent=2), encoding="utf-8")
    q_path = (
        folder / "probing_questions" / "probing_questions.json"
        if nested
        else folder / "probing_questions.json"
    )
    q_path.parent.mkdir(exist_ok=True)
    q_path.write_text(json.dumps(questions, indent=4), encoding="utf-8")


@pytest.fixture
def beam_dir(tmp_path: Path) -> Path:
    root = tmp_path / "100K"
    _write_conv(root / "1", CHAT_1, QUESTIONS_1)
    _write_conv(root / "10", CHAT_2, QUESTIONS_2, nested=True)  # upstream's nested layout
    (root / "topics.json").write_text("{}", encoding="utf-8")  # not a conversation
    return root


@pytest.fixture
def beam(beam_dir: Path) -> DatasetTraces:
    return load_beam(beam_dir, max_chars=100)


def _issues(ds: DatasetTraces, kind: str) -> list[tuple[str, str | None]]:
    return [(i.item, i.value) for i in ds.log.issues if i.kind == kind]


def test_ids_speakers_times(beam: DatasetTraces) -> None:
    src = {s.source_id: s for s in beam.sources}
    assert list(src)[:3] == ["BEAM-100K-1:0", "BEAM-100K-1:1", "BEAM-100K-1:2"]
    assert len(src) == 8 + 2
    s0 = src["BEAM-100K-1:0"]
    assert s0.conversation_id == "BEAM-100K-1"
    assert s0.speaker == "user"
    assert s0.time == "March-15-2024"
    assert s0.metadata["index"] == "1,1"
    assert src["BEAM-100K-1:5"].time == "March-15-2024"  # the batch's anchor
    assert src["BEAM-100K-1:7"].time == "April-02-2024"
    assert src["BEAM-100K-10:1"].time == "May-01-2024"  # a batch-level anchor
    assert src["BEAM-100K-10:1"].speaker == "assistant"
    turns = {t.unit_id: t for t in beam.turns}
    assert turns["BEAM-100K-1:0"].speaker == "User"
    assert turns["BEAM-100K-1:0"].listener == "Assistant"
    assert turns["BEAM-100K-1:0"].date == "2024-03-15"  # parsed for the parser's dating
    assert beam.counts["messages"] == 10
    assert beam.counts["batches"] == 3
    assert beam.counts["groups"] == 4
    assert beam.counts["conversations"] == 2
    assert beam.options == {"scale": "100K", "max_chars": 100}


def test_markers_whitespace_and_cap(beam: DatasetTraces) -> None:
    src = {s.source_id: s for s in beam.sources}
    assert src["BEAM-100K-1:0"].text == "I'm planning a trip to Lisbon with my sister."
    assert src["BEAM-100K-1:6"].text == "We moved the trip to April instead."
    assert src["BEAM-100K-1:4"].text == "Yes, the hostel near the river works for me."
    assert src["BEAM-100K-1:5"].text == "Great, the hostel is booked."
    assert not any("->->" in s.text for s in beam.sources)
    # the marker equal to the message's index is routine; any other is listed as stray
    assert _issues(beam, "index_marker") == [
        ("BEAM-100K-1:0", "->-> 1,1"),
        ("BEAM-100K-1:2", "->-> 1,3"),
        ("BEAM-100K-1:6", "->-> 2,N/A"),
    ]
    assert _issues(beam, "stray_marker") == [
        ("BEAM-100K-1:4", "->->  1,4"),
        ("BEAM-100K-1:5", "->-> 1,4"),
    ]
    # runaway whitespace: runs of 100+ characters collapse, trailing whitespace goes
    assert src["BEAM-100K-1:3"].text == "Step one.\n| |"
    assert src["BEAM-100K-1:3"].metadata["chars_original"] == len(RUNAWAY)
    assert _issues(beam, "whitespace_collapsed") == [
        ("BEAM-100K-1:3", f"{len(RUNAWAY)} characters")
    ]
    # the cap (100 here) cuts what is still too long, and says so
    assert src["BEAM-100K-1:7"].text == "x" * 100 + " […]"
    assert [i for i, _ in _issues(beam, "text_capped")] == ["BEAM-100K-1:7"]
    parser_text = {t.unit_id: t.text for t in beam.turns}
    assert parser_text["BEAM-100K-1:7"] == src["BEAM-100K-1:7"].text  # the parser reads the same


def test_no_cap_and_negative_cap(beam_dir: Path) -> None:
    ds = load_beam(beam_dir, max_chars=0)
    assert {s.source_id: s for s in ds.sources}["BEAM-100K-1:7"].text == "x" * 120 + " the end"
    assert "text_capped" not in ds.log.counts
    with pytest.raises(TiapError, match="max_chars"):
        load_beam(beam_dir, max_chars=-1)


def test_queries_answers_and_evidence(beam: DatasetTraces) -> None:
    q = {x.query_id: x for x in beam.queries}
    cr = q["BEAM-100K-1:contradiction_resolution:0"]
    assert cr.answer == "Yes, near the river."
    assert cr.evidence == ["BEAM-100K-1:4", "BEAM-100K-1:5"]  # flattened over dict values, once
    assert cr.category == "contradiction_resolution"
    assert cr.conversation_id == "BEAM-100K-1"
    assert cr.metadata["source_chat_ids"] == {"first_statement": [4], "second_statement": [4, 5]}
    assert cr.metadata["rubric"] == ["mentions the hostel"]
    assert cr.metadata["difficulty"] == "clear"
    eo = q["BEAM-100K-1:event_ordering:0"]
    assert eo.evidence == [f"BEAM-100K-1:{i}" for i in (0, 2, 4, 6)]  # nested list, repeat once
    assert q["BEAM-100K-1:knowledge_update:0"].evidence == ["BEAM-100K-1:0"]
    odd = q["BEAM-100K-1:preference_following:1"]
    assert odd.answer == "x"
    assert odd.evidence == ["BEAM-100K-1:2", "BEAM-100K-1:3"]
    assert _issues(beam, "evidence_not_integer") == [
        ("BEAM-100K-1:preference_following:1", "2"),
        ("BEAM-100K-1:preference_following:1", "3.0"),
    ]
    assert _issues(beam, "evidence_unresolved") == [("BEAM-100K-1:preference_following:1", "99")]
    assert _issues(beam, "evidence_malformed") == [("BEAM-100K-1:preference_following:1", "true")]
    assert _issues(beam, "evidence_duplicate") == [
        ("BEAM-100K-1:contradiction_resolution:0", "4"),
        ("BEAM-100K-1:event_ordering:0", "0"),
    ]
    new = q["BEAM-100K-1:new_category:0"]
    assert new.answer == "kept"
    assert new.metadata["answer_field"] == "ideal_answer"
    assert q["BEAM-100K-10:information_extraction:0"].evidence == ["BEAM-100K-10:1"]
    assert beam.counts["questions"] == 8
    assert beam.counts["evidence_ids"] == 3 + 5 + 1 + 0 + 4 + 1 + 1  # flattened, before dedup
    assert not any(x.abstention for x in beam.queries)


def test_questions_without_evidence_are_excluded_and_listed(beam: DatasetTraces) -> None:
    assert beam.excluded_queries == [
        "BEAM-100K-1:abstention:0",
        "BEAM-100K-1:preference_following:0",
    ]
    why = {i.item: i.detail for i in beam.log.issues if i.kind == "query_no_evidence"}
    assert why == {
        "BEAM-100K-1:abstention:0": "no source_chat_ids (abstention question)",
        "BEAM-100K-1:preference_following:0": "empty source_chat_ids",
    }
    assert beam.counts["abstention_questions"] == 1
    assert beam.counts["queries"] == 6
    assert beam.counts["queries_excluded"] == 2


def test_abstention_with_evidence_is_kept_and_marked(tmp_path: Path) -> None:
    questions = {
        "abstention": [{"question": "Q?", "ideal_response": "No.", "source_chat_ids": [0]}]
    }
    _write_conv(tmp_path / "1M" / "3", CHAT_2, questions)
    ds = load_beam(tmp_path / "1M")
    (q,) = ds.queries
    assert q.query_id == "BEAM-1M-3:abstention:0"
    assert q.abstention
    assert q.answer == "No."


def test_scale_from_option_and_ten_million_plans(tmp_path: Path) -> None:
    plans = [{"plan-0": CHAT_2}, {"plan-1": [{**CHAT_2[0], "turns": [[
        _msg("user", 2, "Now endgames.", question_type="main_question"),
        _msg("assistant", 3, "Learn king and pawn endings."),
    ]]}]}]  # fmt: skip
    _write_conv(tmp_path / "chats" / "1", plans, QUESTIONS_2)
    with pytest.raises(TiapError, match="--scale"):
        load_beam(tmp_path / "chats")
    ds = load_beam(tmp_path / "chats", scale="10m")
    assert [s.source_id for s in ds.sources] == [f"BEAM-10M-1:{i}" for i in range(4)]
    assert ds.sources[2].metadata["plan"] == "plan-1"
    with pytest.raises(TiapError, match="not a BEAM scale"):
        load_beam(tmp_path / "chats", scale="big")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c, q: c[0]["turns"][0].append(_msg("user", 0, "again")), "id 0 appears twice"),
        (lambda c, q: c[0]["turns"][0][0].pop("id"), "batch 0: missing field 'turns.0.0.id'"),
        (lambda c, q: q.update(bad="x"), "category 'bad' is not a list"),
        (lambda c, q: q.update(bad=[{"answer": "no question"}]), r"bad\[0\]: expected an object"),
    ],
)  # fmt: skip
def test_bad_files_name_the_file(tmp_path: Path, mutate: Any, message: str) -> None:
    chat, questions = json.loads(json.dumps(CHAT_2)), json.loads(json.dumps(QUESTIONS_2))
    mutate(chat, questions)
    _write_conv(tmp_path / "100K" / "1", chat, questions)
    with pytest.raises(InputError, match=message) as err:
        load_beam(tmp_path / "100K")
    assert "100K/1/" in str(err.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    root = tmp_path / "100K"
    with pytest.raises(TiapError, match="not a directory"):
        load_beam(root)
    root.mkdir()
    with pytest.raises(TiapError, match="no conversation folders"):
        load_beam(root)
    (root / "1").mkdir()
    (root / "1" / "chat.json").write_text('[\n  {"turns": [}\n]', encoding="utf-8")
    with pytest.raises(InputError, match=r"probing_questions.json: file not found"):
        load_beam(root)
    (root / "1" / "probing_questions.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match=r"chat.json:2: malformed JSON"):
        load_beam(root)
    # a question category given twice: the first one's questions would be lost
    (root / "1" / "chat.json").write_text("[]", encoding="utf-8")
    (root / "1" / "probing_questions.json").write_text(
        '{"summarization": [],\n "summarization": []}', encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"probing_questions.json:2: key 'summarization' appears "):
        load_beam(root)


def test_flatten_ids() -> None:
    assert flatten_ids({"a": [1, [2, 3]], "b": []}) == [1, 2, 3]
    assert flatten_ids([[[4]], 5]) == [4, 5]
    assert flatten_ids(7) == [7]


def test_dataset_registry_lists_exactly_the_stores_built(beam: DatasetTraces) -> None:
    assert list(DATASETS["beam"].default_stores) == default_stores(beam)
    assert DATASETS["beam"].stores_help == "raw, parser-D<N>"


def test_cli_build_and_help(
    tiap_cli, beam_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "bundle"
    tiap_cli.ok(
        "traces", "build", "beam", str(beam_dir), "--out", str(out), "-q", "--max-chars", "100"
    )
    b = read_bundle(out)
    assert b.config.dataset == "beam"
    assert b.config.metadata["scale"] == "100K"
    assert set(b.runs) == {"bm25-raw", "bm25-parser-D1", "bm25-parser-D5", "bm25-parser-D8"}
    for entries in b.runs.values():
        for e in entries:
            conv = e.query_id.rsplit(":", 2)[0]
            assert all(m.startswith(conv + ":") for m in e.ranking)  # its own conversation
    facts = [m for m in b.stores["parser-D5"] if not m.raw]
    assert any(m.text.startswith("On 15 March 2024, User") for m in facts)
    report = BuildReport.model_validate_json((out / "build_report.json").read_text())
    assert report.excluded_queries == [
        "BEAM-100K-1:abstention:0",
        "BEAM-100K-1:preference_following:0",
    ]
    assert report.issue_counts["stray_marker"] == 2
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["traces", "build", "beam", "--help"])
    text = _help_text(capsys.readouterr().out)
    assert "raw, parser-D<N>" in text
    assert "observations" not in text


# ---------------------------------------------------------------- the real 100K slice


@pytest.fixture(scope="module")
def beam100k_dir(shared_data_dir: Path) -> Path:
    path = shared_data_dir / "beam" / "100K"
    if not path.is_dir():
        pytest.skip(f"BEAM data not found at {path}")
    return path


@pytest.fixture(scope="module")
def beam100k(beam100k_dir: Path) -> DatasetTraces:
    return load_beam(beam100k_dir)


@pytest.fixture(scope="module")
def beam100k_raw(beam100k_dir: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """Every message of the files, read independently of the adapter."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for n in range(1, 21):
        chat = json.loads((beam100k_dir / str(n) / "chat.json").read_text(encoding="utf-8"))
        out[str(n)] = {m["id"]: m for b in chat for g in b["turns"] for m in g}
    return out


@pytest.mark.shared_data
def test_real_counts_match_the_data_readme(beam100k: DatasetTraces) -> None:
    c = beam100k.counts
    assert c["conversations"] == 20
    assert c["batches"] == 90
    assert c["batches_without_time_anchor"] == 0
    assert c["groups"] == 2127
    assert c["messages"] == 5732
    assert c["user_messages"] == c["assistant_messages"] == 2866
    assert c["questions"] == 400
    assert c["abstention_questions"] == 40
    assert len(beam100k.sources) == 5732
    # 355 queries with evidence, 45 excluded (40 abstention, 5 empty lists)
    assert len(beam100k.queries) == 355
    assert len(beam100k.excluded_queries) == 45
    why = Counter(i.detail for i in beam100k.log.issues if i.kind == "query_no_evidence")
    assert why == {"no source_chat_ids (abstention question)": 40, "empty source_chat_ids": 5}
    empty = sorted(i.item for i in beam100k.log.issues if i.detail == "empty source_chat_ids")
    assert empty == [
        "BEAM-100K-18:summarization:0",
        "BEAM-100K-18:summarization:1",
        "BEAM-100K-20:summarization:0",
        "BEAM-100K-20:summarization:1",
        "BEAM-100K-9:preference_following:1",
    ]
    # 1,109 evidence ids flattened, 1,094 (query, message) pairs once deduplicated
    assert c["evidence_ids"] == 1109
    assert sum(len(q.evidence) for q in beam100k.queries) == 1094
    assert beam100k.log.counts["evidence_duplicate"] == 15
    for kind in ("evidence_unresolved", "evidence_malformed", "evidence_not_integer"):
        assert kind not in beam100k.log.counts
    assert len({sid for q in beam100k.queries for sid in q.evidence}) == 905
    cats = Counter(q.category for q in beam100k.queries)
    assert cats == {
        "contradiction_resolution": 40,
        "event_ordering": 40,
        "information_extraction": 40,
        "instruction_following": 40,
        "knowledge_update": 40,
        "multi_session_reasoning": 40,
        "preference_following": 39,
        "summarization": 36,
        "temporal_reasoning": 40,
    }
    ids_per_cat = Counter()
    for q in beam100k.queries:
        ids_per_cat[q.category] += len(q.evidence)
    assert ids_per_cat["event_ordering"] == 230
    assert ids_per_cat["summarization"] == 283
    assert ids_per_cat["temporal_reasoning"] == 74
    assert len(beam100k.input_sha256) == 64


@pytest.mark.shared_data
def test_real_evidence_roles_and_nested_lists(beam100k: DatasetTraces) -> None:
    role = {s.source_id: s.speaker for s in beam100k.sources}
    pairs = Counter(role[sid] for q in beam100k.queries for sid in q.evidence)
    assert pairs == {"user": 841, "assistant": 253}
    by_query = Counter(
        "+".join(sorted({role[sid] for sid in q.evidence})) for q in beam100k.queries
    )
    assert by_query == {"user": 288, "assistant+user": 48, "assistant": 19}
    q = {x.query_id: x for x in beam100k.queries}
    assert q["BEAM-100K-4:event_ordering:1"].evidence == [
        f"BEAM-100K-4:{i}" for i in (116, 118, 120, 122, 128, 130, 132, 134, 136, 138)
    ]
    assert q["BEAM-100K-18:event_ordering:1"].evidence == [
        f"BEAM-100K-18:{i}" for i in (24, 26, 28, 146, 202, 204, 262)
    ]
    assert q["BEAM-100K-12:knowledge_update:0"].evidence == ["BEAM-100K-12:108"]
    # answers come from each category's own field
    assert all(x.answer for x in beam100k.queries)


@pytest.mark.shared_data
def test_real_markers_and_runaway_messages(
    beam100k: DatasetTraces, beam100k_raw: dict[str, dict[int, dict[str, Any]]]
) -> None:
    counts = beam100k.log.counts
    # 2,199 markers: all 2,127 main questions (their own index) + 72 others
    assert counts["index_marker"] == 2127
    assert counts["stray_marker"] == 72
    stray = [i for i in beam100k.log.issues if i.kind == "stray_marker"]
    assert len(stray) == 72  # every stray marker is listed
    src = {s.source_id: s for s in beam100k.sources}
    by_role: dict[str, set[str | None]] = {}
    for i in stray:
        by_role.setdefault(src[i.item].speaker or "", set()).add(i.conversation_id)
    assert Counter(src[i.item].speaker for i in stray) == {"user": 28, "assistant": 44}
    assert by_role["assistant"] == {"BEAM-100K-5"}
    assert by_role["user"] == {f"BEAM-100K-{n}" for n in (1, 2, 5, 17, 20)}
    assert ("BEAM-100K-5:153", "->->  3,8") in [(i.item, i.value) for i in stray]
    assert not any("->->" in s.text for s in beam100k.sources)
    # every marker was the very end of its message: the rest is kept verbatim
    for n, msgs in beam100k_raw.items():
        for mid, m in msgs.items():
            s = src[f"BEAM-100K-{n}:{mid}"]
            if "->->" in m["content"]:
                assert m["content"].startswith(s.text)
    big = src["BEAM-100K-4:97"]
    assert big.metadata["chars_original"] == 348_853
    assert len(big.text) < 20_000  # 99% whitespace, collapsed
    assert big.text.startswith("Creating a step-by-step diagram")
    capped = src["BEAM-100K-5:123"]
    assert capped.metadata["chars_original"] == 53_108
    assert len(capped.text) <= 20_000 + 4
    assert {i.item for i in beam100k.log.issues if i.kind == "whitespace_collapsed"} == {
        "BEAM-100K-4:97",
        "BEAM-100K-5:123",
    }
    assert [i.item for i in beam100k.log.issues if i.kind == "text_capped"] == ["BEAM-100K-5:123"]
    assert max(len(s.text) for s in beam100k.sources) <= 20_004
    assert src["BEAM-100K-13:0"].time == "November-05-2023"


@pytest.mark.shared_data
@pytest.mark.slow
def test_real_build_bm25_is_fast_valid_and_rescored(
    tiap_cli, beam100k_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "beam"
    start = time.process_time()  # CPU time: other work on a shared machine does not count
    tiap_cli.ok("traces", "build", "beam", str(beam100k_dir), "--out", str(out), "-q")
    elapsed = time.process_time() - start
    assert elapsed < 60, f"the 100K build with BM25 took {elapsed:.1f} s of CPU"
    b = read_bundle(out)
    assert len(b.queries) == 355
    assert len(b.sources) == 5732
    assert {n: sum(m.raw for m in ms) for n, ms in b.stores.items()} == dict.fromkeys(
        ["raw", "parser-D1", "parser-D5", "parser-D8"], 5732
    )
    for run, entries in b.runs.items():
        assert len(entries) == 355, run
        for e in entries:
            conv = e.query_id.rsplit(":", 2)[0]
            assert all(m.startswith(conv + ":") for m in e.ranking)
    facts = [m for m in b.stores["parser-D8"] if m.source_ids == ["BEAM-100K-4:97"]]
    assert 1 < len(facts) <= 9  # the runaway message is parsed like any other
    report = json.loads((out / "build_report.json").read_text())
    assert report["counts"]["queries"] == 355
    assert len(report["excluded_queries"]) == 45
    assert report["issue_counts"]["index_marker"] + report["issue_counts"]["stray_marker"] == 2199
    hits = [bool(set(q.evidence) & set(b.rankings("bm25-raw")[q.query_id])) for q in b.queries]
    assert sum(hits) / len(hits) > 0.5
    rescore = tmp_path / "rescore"
    tiap_cli.ok("rescore", str(out), "--out", str(rescore), "--resamples", "200")
    with (rescore / "per_query.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    raw_rows = [r for r in rows if r["run"] == "bm25-raw" and r["target"] == "raw"]
    assert len(raw_rows) == 355
    canon = [r for r in rows if r["run"] == "bm25-raw" and r["target"] == "canonical"]
    assert all(r["target_size"] == "0" for r in canon)  # the raw store has no canonical memory


@pytest.mark.shared_data
def test_real_build_is_deterministic(beam100k: DatasetTraces) -> None:
    """Two builds of five real BEAM conversations (a quarter of the 100K split: the whole
    of it is built once, by the command, above) are equal."""
    keep = {f"BEAM-100K-{n}" for n in (1, 4, 5, 13, 20)}
    five = conversations(beam100k, keep)
    assert {q.conversation_id for q in five.queries} == keep
    opts = BuildOptions(stores=["raw", "parser-D1"])
    first, second = build_bundle(five, opts), build_bundle(five, opts)
    assert first.report == second.report
    assert first.bundle.runs == second.bundle.runs
    assert first.bundle.stores == second.bundle.stores


# ---------------------------------------------------------------- every dataset's help


@pytest.mark.parametrize(
    ("dataset", "listed", "absent"),
    [
        ("locomo", ["raw", "observations", "summaries", "parser-D<N>"], []),
        ("longmemeval", ["raw", "parser-D<N>"], ["observations", "summaries"]),
        ("beam", ["raw", "parser-D<N>"], ["observations", "summaries"]),
    ],
)
def test_build_help_lists_the_stores_each_dataset_supports(
    dataset: str, listed: list[str], absent: list[str], capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit):
        main(["traces", "build", dataset, "--help"])
    text = _help_text(capsys.readouterr().out)
    store_help = text[text.index("Store to build") : text.index("--retriever")]
    for name in listed:
        assert name in store_help
    for name in absent:
        assert name not in store_help
    assert "none to build the stores without runs" in text


def test_registry_matches_the_stores_a_build_supports(tmp_path: Path, beam: DatasetTraces) -> None:
    from tiap.traces.lmeb import load_lmeb
    from tiap.traces.locomo import load_locomo
    from tiap.traces.longmemeval import load_longmemeval

    locomo = tmp_path / "locomo.json"
    turn = {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy."}
    sample = {"sample_id": "c", "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
              "session_1": [turn]}, "qa": []}  # fmt: skip
    locomo.write_text(json.dumps([sample]), encoding="utf-8")
    lme = tmp_path / "lme.json"
    turns = [[{"role": "user", "content": "hi", "has_answer": True}]]
    record = {"question_id": "q", "question_type": "t", "question": "?", "answer": "a",
              "haystack_dates": ["2023/05/20 (Sat) 10:00"], "haystack_session_ids": ["s"],
              "haystack_sessions": turns}  # fmt: skip
    lme.write_text(json.dumps([record]), encoding="utf-8")
    lmeb = tmp_path / "lmeb"
    lmeb.mkdir()
    (lmeb / "queries.jsonl").write_text('{"id": "q", "text": "?"}\n', encoding="utf-8")
    (lmeb / "corpus.jsonl").write_text('{"id": "d", "text": "x"}\n', encoding="utf-8")
    (lmeb / "qrels.tsv").write_text("q\td\t1\n", encoding="utf-8")
    read = {
        "locomo": load_locomo(locomo),
        "longmemeval": load_longmemeval(lme),
        "beam": beam,
        "lmeb": load_lmeb(lmeb),
    }
    assert set(read) == set(DATASETS)
    for name, ds in read.items():
        assert list(DATASETS[name].default_stores) == default_stores(ds), name


def test_traces_help_names_its_commands(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["traces", "--help"])
    text = capsys.readouterr().out
    for command in ("build", "import", "export"):
        assert command in text
    assert "inspect" not in text

"""LoCoMo adapter on small hand-written files: each quirk of the real file in isolation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tiap.errors import InputError
from tiap.traces.locomo import load_locomo, normalise_dia_ids


def _turn(dia: str, speaker: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia, "text": text, **extra}


def _sample(qa: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "I adopted a puppy named Rex yesterday."),
                _turn("D1:2", "Bob", "That is lovely news about your puppy!"),
                _turn(
                    "D1:3",
                    "Ann",
                    "Here he is at the park.",
                    img_url=["http://x"],
                    blip_caption="a photo of a small dog on grass",
                ),
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                _turn("D2:1", "Bob", "I started learning the violin last month."),
                _turn("D2:2", "Ann", "My sister plays the cello in an orchestra."),
            ],
            # a dated session without turns (like conv-26 sessions 20-35)
            "session_3_date_time": "9:00 am on 1 July, 2023",
        },
        "observation": {
            "session_1_observation": {
                "Ann": [
                    ["Ann adopted a puppy named Rex.", "D1:1"],
                    ["Ann shared a photo of Rex at the park.", ["D1:1", "D1:3"]],
                ],
                "Bob": [["Bob was happy about the puppy.", "D1:2"]],
            },
            "session_2_observation": {
                "Bob": [["Bob learns the violin.", "D2:1, D2:2"]],
                "Ann": [["Ann's sister plays cello.", "D9:9"]],
            },
        },
        "session_summary": {
            "session_1_summary": "Ann told Bob about her new puppy Rex.",
            "session_2_summary": "Bob is learning violin; Ann's sister plays cello.",
            "session_3_summary": "A session with no turns.",
        },
        "event_summary": {},
        "qa": qa,
    }
    sample.update(over)
    return sample


QA = [
    {"question": "What pet did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1"],
     "category": 4},
    {"question": "Packed?", "answer": "x", "evidence": ["D1:1; D2:1"], "category": 1},
    {"question": "Bare?", "answer": "x", "evidence": ["D", "D1:2"], "category": 4},
    {"question": "Colon?", "answer": "x", "evidence": ["D:2:1"], "category": 4},
    {"question": "Zero?", "answer": "x", "evidence": ["D2:02"], "category": 4},
    {"question": "Missing?", "answer": "x", "evidence": ["D1:9", "D1:2"], "category": 4},
    {"question": "Twice?", "answer": "x", "evidence": ["D1:2", "D1:2", "D2:2"], "category": 4},
    {"question": "Empty?", "answer": "x", "evidence": [], "category": 3},
    {"question": "Year?", "answer": 2022, "evidence": ["D2:1"], "category": 2},
    {"question": "Adv?", "adversarial_answer": "violin", "evidence": ["D2:1"], "category": 5},
    {
        "question": "Both?",
        "answer": "kept in metadata",
        "adversarial_answer": "adv",
        "evidence": ["D2:2"],
        "category": 5,
    },
    {"question": "What pet did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1"],
     "category": 4},
    {"question": "What pet did Ann adopt?", "adversarial_answer": "a cat", "evidence": ["D1:1"],
     "category": 5},
    {"question": "Only bad?", "answer": "x", "evidence": ["D", "D7:1"], "category": 4},
]  # fmt: skip


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_sample(QA)], indent=2), encoding="utf-8")
    return path


def _issues(ds: Any, kind: str) -> list[tuple[str, str | None, str | None]]:
    return [(i.item, i.value, i.result) for i in ds.log.issues if i.kind == kind]


def test_dia_id_normalisation_rules() -> None:
    assert normalise_dia_ids("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert normalise_dia_ids("D9:1 D4:4 D4:6") == ["D9:1", "D4:4", "D4:6"]
    assert normalise_dia_ids("D:11:26") == ["D11:26"]
    assert normalise_dia_ids("D30:05") == ["D30:5"]
    assert normalise_dia_ids("D") == []


def test_sources_turns_and_image_caption(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    ids = [s.source_id for s in ds.sources]
    assert ids == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D1:3", "conv-1:D2:1", "conv-1:D2:2"]
    img = ds.sources[2]
    assert img.text == "Here he is at the park. [shares an image: a photo of a small dog on grass]"
    assert img.metadata["image_caption"] == "a photo of a small dog on grass"
    assert img.speaker == "Ann"
    assert img.time == "1:56 pm on 8 May, 2023"
    assert ds.turns[0].listener == "Bob"
    assert ds.turns[1].listener == "Ann"
    assert ds.counts["sessions"] == 2
    assert ds.counts["sessions_date_only"] == 1
    assert _issues(ds, "session_without_turns") == [("conv-1:S3", None, None)]


def test_evidence_quirks_each_handled_and_listed(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    q = {x.query_id: x for x in ds.queries}
    assert q["conv-1:q1"].evidence == ["conv-1:D1:1", "conv-1:D2:1"]
    assert _issues(ds, "evidence_split") == [("conv-1:q1", "D1:1; D2:1", '["D1:1", "D2:1"]')]
    assert q["conv-1:q2"].evidence == ["conv-1:D1:2"]
    assert ("conv-1:q2", "D", None) in _issues(ds, "evidence_malformed")
    assert q["conv-1:q3"].evidence == ["conv-1:D2:1"]
    assert q["conv-1:q4"].evidence == ["conv-1:D2:2"]
    assert _issues(ds, "evidence_reformatted") == [
        ("conv-1:q3", "D:2:1", "D2:1"),
        ("conv-1:q4", "D2:02", "D2:2"),
    ]
    assert q["conv-1:q5"].evidence == ["conv-1:D1:2"]
    unresolved = [i for i in ds.log.issues if i.kind == "evidence_unresolved"]
    assert [(i.item, i.value) for i in unresolved] == [
        ("conv-1:q5", "D1:9"),
        ("conv-1:q13", "D7:1"),
    ]
    assert "only 3 turns" in unresolved[0].detail
    assert q["conv-1:q6"].evidence == ["conv-1:D1:2", "conv-1:D2:2"]
    assert _issues(ds, "evidence_duplicate") == [("conv-1:q6", "D1:2", None)]
    # the original strings are kept when normalisation changed them
    assert q["conv-1:q1"].metadata["evidence_as_given"] == ["D1:1; D2:1"]
    assert "evidence_as_given" not in q["conv-1:q0"].metadata


def test_queries_without_evidence_are_excluded_and_listed(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    kept = {x.query_id for x in ds.queries}
    assert "conv-1:q7" not in kept
    assert "conv-1:q13" not in kept
    no_ev = [(i.item, i.detail) for i in ds.log.issues if i.kind == "query_no_evidence"]
    assert no_ev == [
        ("conv-1:q7", "empty evidence list"),
        ("conv-1:q13", "no evidence id resolves"),
    ]
    assert ds.excluded_queries == ["conv-1:q7", "conv-1:q11", "conv-1:q13"]
    assert ds.counts["qa_items"] == len(QA)
    assert len(ds.queries) + len(ds.excluded_queries) == len(QA)


def test_answers_categories_and_duplicates(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    q = {x.query_id: x for x in ds.queries}
    assert q["conv-1:q8"].answer == "2022"
    assert q["conv-1:q8"].category == "temporal"
    assert _issues(ds, "answer_not_text") == [("conv-1:q8", "2022", "2022")]
    assert q["conv-1:q9"].answer == "violin"
    assert q["conv-1:q9"].category == "adversarial"
    assert q["conv-1:q10"].answer == "adv"
    assert q["conv-1:q10"].metadata["answer_field"] == "kept in metadata"
    assert q["conv-1:q0"].category == "single-hop"
    assert q["conv-1:q1"].category == "multi-hop"
    assert q["conv-1:q0"].metadata == {"qa_index": 0, "category_code": 4}
    # q11 repeats q0 exactly: excluded; q12 has the same text but another answer: kept, listed
    assert _issues(ds, "duplicate_question") == [
        ("conv-1:q11", "What pet did Ann adopt?", "conv-1:q0")
    ]
    assert _issues(ds, "repeated_question_text") == [
        ("conv-1:q12", "What pet did Ann adopt?", "conv-1:q0")
    ]
    assert "conv-1:q12" in q


def test_keep_duplicates_option(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file, keep_duplicates=True)
    assert "conv-1:q11" in {x.query_id for x in ds.queries}
    assert not _issues(ds, "duplicate_question")


def test_observations_and_summaries_lineage(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    obs = {m.memory_id: m for m in ds.derived["observations"]}
    assert list(obs) == ["conv-1:obs:1", "conv-1:obs:2", "conv-1:obs:3", "conv-1:obs:4"]
    assert obs["conv-1:obs:1"].source_ids == ["conv-1:D1:1"]
    assert obs["conv-1:obs:2"].source_ids == ["conv-1:D1:1", "conv-1:D1:3"]
    assert obs["conv-1:obs:4"].source_ids == ["conv-1:D2:1", "conv-1:D2:2"]
    assert all(m.canonical and not m.raw for m in obs.values())
    assert [i for i, _, _ in _issues(ds, "observation_split")] == ["conv-1:obs:2", "conv-1:obs:4"]
    # the fifth observation names D9:9, which does not exist: not stored, listed
    assert [(i, v) for i, v, _ in _issues(ds, "observation_unresolved")] == [
        ("conv-1:obs:5", "D9:9")
    ]
    summ = {m.memory_id: m for m in ds.derived["summaries"]}
    assert list(summ) == ["conv-1:summary:1", "conv-1:summary:2"]
    assert summ["conv-1:summary:1"].source_ids == ["conv-1:D1:1", "conv-1:D1:2", "conv-1:D1:3"]
    assert not summ["conv-1:summary:1"].canonical
    assert not summ["conv-1:summary:1"].raw
    assert _issues(ds, "summary_without_turns") == [("conv-1:summary:3", None, None)]


def test_bad_input_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  {"sample_id": "c", "conversation": {}, "qa": [{"question": 1}]}\n]')
    with pytest.raises(InputError) as err:
        load_locomo(bad)
    assert str(err.value).startswith(f"{bad}:2: sample 'c': ")
    assert "qa.0" in str(err.value)
    turn = _sample([])
    turn["conversation"]["session_1"][1] = {"speaker": "Bob"}
    bad.write_text(json.dumps([turn]))
    with pytest.raises(InputError, match=r"sample 'conv-1': session_1\[1\]: missing field"):
        load_locomo(bad)
    bad.write_text(json.dumps([_sample([]), _sample([])]))
    with pytest.raises(InputError, match="sample id 'conv-1' appears twice"):
        load_locomo(bad)
    bad.write_text('{"sample_id": "x"}')
    with pytest.raises(InputError, match="expected a JSON list"):
        load_locomo(bad)

"""People label answer cases: the terminal app shows the question, the gold answer,
the criteria for the question type and the run's answer, inert; Label Studio tasks
carry the rubric's fields; the other kind's rubric is refused."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from annotate_support import make_case, screen_text

from support.answer_cases import answer_case
from tiap.annotate.labelstudio import label_config
from tiap.annotate.labelstudio.config import check_config, task_data
from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui import pane_text
from tiap.annotate.tui.app import AnnotateApp
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import load_rubric
from tiap.rubric.answer_criteria import CRITERIA

SIZE = (100, 40)
RUBRIC = "answer-correctness"
HOSTILE = "Paris\x1b]0;PWNED\x07 [bold]x[/bold]"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def answer_ws(tmp_path: Path):
    cases = [
        answer_case(0, question_type="temporal-reasoning", hypothesis=HOSTILE),
        answer_case(1, query_id="q1_abs"),
    ]
    with Workspace(tmp_path / "a.sqlite") as ws:
        ws.add_cases(cases)
        ws.save_subset("val", [c.case_id for c in cases], params={"kind": "validation"})
        yield ws


def test_the_pane_texts_of_an_answer_case() -> None:
    case = answer_case(1, question_type="temporal-reasoning")
    cues = pane_text.cues_for(case)
    head = pane_text.case_head(case, cues).plain
    assert head.startswith(f"Q {case.question}\nA 18 days\n")
    assert "question type temporal-reasoning · run run-a · query q001" in head
    criteria = pane_text.criteria_text(case).plain
    assert criteria == (
        f"question type: temporal-reasoning\ncriteria (temporal-reasoning): "
        f"{CRITERIA['temporal-reasoning']}"
    )
    response = pane_text.memory_text(case, cues)
    assert response.plain == "run run-a\nYou spent 19 days in Japan."
    # the gold answer's words are highlighted in the response
    styled = {response.plain[s.start : s.end] for s in response.spans if s.style}
    assert "days" in styled
    assert pane_text.PANE_TITLES["answer"] == ("Criteria", "Model response")


async def test_the_screen_shows_an_answer_case_inert_and_labels_it(answer_ws) -> None:
    app = AnnotateApp(AnnotationSession(answer_ws, load_rubric(RUBRIC), "alice", subset="val"))
    first, second = (answer_ws.case(c) for c in answer_ws.case_ids(subset="val"))
    async with app.run_test(size=SIZE) as pilot:
        text = screen_text(app)
        assert UNSAFE.search(text) is None, repr(text)
        assert f"Q {first.question}" in text
        assert "A Business Administration" in text
        assert "Criteria" in text
        assert "Model response" in text
        assert "Paris␛]0;PWNED␇ [bold]x[/bold]" in text  # controls shown, markup literal
        assert "question type: temporal-reasoning" in text
        await pilot.press("2")  # incorrect: stored, the next case is drawn
        text = screen_text(app)
        assert f"Q {second.question}" in text
        assert "(abstention question)" in text
        assert "criteria (abstention)" in text
        await pilot.press("1")
    labels = {r.case_id: r.label for r in answer_ws.latest_labels(raters=["alice"])}
    assert labels == {first.case_id: "incorrect", second.case_id: "correct"}


def test_label_studio_tasks_carry_the_answer_cases_fields() -> None:
    rubric = load_rubric(RUBRIC)
    case = answer_case(0, query_id="q9_abs")
    assert task_data(case, rubric) == {
        "case_id": case.case_id,
        "question": case.question,
        "answer": "Business Administration",
        "response": case.hypothesis,
        "question_type": "single-session-user",
        "criteria": CRITERIA["abstention"],
    }
    root = ET.fromstring(label_config(rubric))
    assert [t.get("name") for t in root.iter("Text")] == rubric.fields
    (choices,) = list(root.iter("Choices"))
    assert choices.get("toName") == "response"
    assert check_config(label_config(rubric), rubric, "p").to_name == "response"
    with pytest.raises(TiapError, match="choose --rubric contested-credit"):
        task_data(make_case(0), rubric)


def test_a_session_with_the_other_kind_of_rubric_is_refused(answer_ws) -> None:
    with pytest.raises(TiapError, match="choose --rubric answer-correctness"):
        AnnotationSession(answer_ws, load_rubric("contested-credit"), "alice", subset="val")

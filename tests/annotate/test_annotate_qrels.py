"""Spot checks of qrels pairs by people: the terminal app shows the query and the
document, the qrels annotation only once the case is labelled and revealed; Label
Studio tasks carry the query, title and document; the other kind's rubric is refused."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from annotate_support import judge_label, make_case, screen_text

from support.qrels_cases import qrels_case
from tiap.annotate.labelstudio import label_config
from tiap.annotate.labelstudio.config import check_config, task_data
from tiap.annotate.session import AnnotationSession
from tiap.annotate.tui.app import AnnotateApp
from tiap.cases.workspace import Workspace
from tiap.errors import TiapError
from tiap.rubric import load_rubric

SIZE = (100, 40)


@pytest.fixture
def qrels_ws(tmp_path: Path):
    cases = [qrels_case(0, grade=2), qrels_case(1, negative=True, grade=None), qrels_case(2)]
    with Workspace(tmp_path / "q.sqlite") as ws:
        ws.add_cases(cases)
        ws.save_subset("val", [c.case_id for c in cases], params={"kind": "validation"})
        ws.add_label(judge_label(cases[0].case_id, "judge-a", "relevant"))
        yield ws


async def test_the_screen_shows_the_pair_and_hides_the_annotation_until_revealed(qrels_ws) -> None:
    rubric = load_rubric("qrels-relevance")
    app = AnnotateApp(AnnotationSession(qrels_ws, rubric, "alice", subset="val"))
    case = qrels_ws.case(qrels_ws.case_ids(subset="val")[0])
    async with app.run_test(size=SIZE) as pilot:
        text = screen_text(app)
        assert f"Q {case.question}" in text
        assert "Document" in text
        assert "Pair" in text
        assert "I went to a LGBTQ support group yesterday" in text
        assert "Caroline · 1:56 pm on 8 May, 2023" in text
        assert "dataset: Dialogue/LoCoMo/single_hop" in text
        assert f"query {case.query_id} · case {case.case_id}" in text
        assert "qrels: hidden until you label this case" in text
        assert "grade 2" not in text
        await pilot.press("r")  # nothing to reveal before labelling
        assert "grade 2" not in screen_text(app)
        await pilot.press("p")  # back to the first case... it is the first: stays
        await pilot.press("1")  # relevant: stored, the next case is drawn
        await pilot.press("p")
        text = screen_text(app)
        assert "qrels: hidden (press r to reveal)" in text
        assert "grade 2" not in text
        await pilot.press("r")
        text = screen_text(app)
        assert "qrels: grade 2 (an annotated pair of the qrels file)" in text
        assert "judge-a (judge): relevant" in text
        await pilot.press("n", "2")  # the negative: not relevant
        await pilot.press("p", "r")
        assert "no qrels line: a top-ranked document of run bm25 (rank 2)" in screen_text(app)
    labels = {r.case_id: r.label for r in qrels_ws.latest_labels(raters=["alice"])}
    ids = qrels_ws.case_ids(subset="val")
    assert labels == {ids[0]: "relevant", ids[1]: "not_relevant"}
    assert {r.rubric_id for r in qrels_ws.latest_labels(raters=["alice"])} == {"qrels-relevance"}


def test_a_session_with_the_other_kind_of_rubric_is_refused(qrels_ws, tmp_path: Path) -> None:
    with pytest.raises(TiapError, match=r"choose --rubric qrels-relevance"):
        AnnotationSession(qrels_ws, load_rubric("contested-credit"), "alice", subset="val")
    with Workspace(tmp_path / "c.sqlite") as ws:
        ws.add_cases([make_case(0)])
        with pytest.raises(TiapError, match="rubric 'qrels-relevance' judges qrels pairs"):
            AnnotationSession(ws, load_rubric("qrels-relevance"), "alice")


def test_label_studio_tasks_carry_query_title_and_document_not_the_grade() -> None:
    rubric = load_rubric("qrels-relevance")
    case = qrels_case(0, grade=2)
    data = task_data(case, rubric)
    assert data == {
        "case_id": case.case_id,
        "query": case.question,
        "title": case.title,
        "document": case.memory_text,
    }
    root = ET.fromstring(label_config(rubric))
    assert [t.get("name") for t in root.iter("Text")] == ["query", "title", "document"]
    headers = [h.get("value") for h in root.iter("Header")]
    assert headers[:3] == ["Query", "Document title", "Document (is it relevant to the query?)"]
    (choices,) = list(root.iter("Choices"))
    assert choices.get("toName") == "document"
    info = check_config(label_config(rubric), rubric, "p")
    assert (info.control, info.to_name) == ("label", "document")
    with pytest.raises(TiapError, match="of kind 'contested'"):
        task_data(make_case(0), rubric)

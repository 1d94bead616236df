"""Judging qrels pairs: the offline baselines read the qrels prompt's blocks, and a
rubric for the other kind of case is refused before any call."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.qrels_cases import PAIRS, qrels_case
from tiap.cases import Workspace
from tiap.cli import main
from tiap.errors import TiapError
from tiap.judge import load_panel, plan_run, run_panel
from tiap.judge.baselines import BASELINES, blocks
from tiap.judge.baselines import judge as baseline_judge
from tiap.rubric import load_rubric, render_messages

LABELS = ["relevant", "not_relevant"]


def qrels_prompt(query: str, title: str, document: str) -> str:
    case = qrels_case(0).model_copy(
        update={"question": query, "title": title, "memory_text": document}
    )
    return render_messages(load_rubric("qrels-relevance"), case.prompt_fields())[1]["content"]


def test_every_baseline_judges_a_qrels_prompt() -> None:
    query, title, text = PAIRS[0]
    on_topic = qrels_prompt(query, title, text)
    assert set(blocks(on_topic)) == {"query", "title", "document"}
    off_topic = qrels_prompt(query, PAIRS[1][1], PAIRS[1][2])
    for name in BASELINES:
        label, why = baseline_judge(name, on_topic, LABELS)
        assert label == "relevant", (name, why)
        assert why.startswith(f"baseline {name} (not an LLM): ")
        assert baseline_judge(name, off_topic, LABELS)[0] == "not_relevant", name


def test_the_document_title_counts_as_part_of_the_document() -> None:
    # the speaker's name is only in the title: the key-facts rule finds it there
    query = "What did Caroline say about the group?"
    with_title = qrels_prompt(query, "Caroline · 8 May 2023", "It was a great group.")
    without = qrels_prompt(query, "", "It was a great group.")
    assert baseline_judge("key-facts", with_title, LABELS)[0] == "relevant"
    assert baseline_judge("key-facts", without, LABELS)[0] == "not_relevant"


def test_a_query_without_content_words_is_declined() -> None:
    label, why = baseline_judge("answer-containment", qrels_prompt("Why?", "", "Yes."), LABELS)
    assert label is None
    assert "no content words" in why


def _workspace(path: Path) -> Path:
    cases = [qrels_case(i, grade=1 if i % 3 else 0) for i in range(6)]
    with Workspace(path) as ws:
        ws.add_cases(cases)
        ws.save_subset("val", [c.case_id for c in cases], params={"kind": "validation"})
    return path


def test_the_offline_panel_labels_qrels_pairs_through_the_judge_path(tmp_path: Path) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    with Workspace(db) as ws:
        summary = run_panel(ws, load_panel("offline"), load_rubric("qrels-relevance"), subset="val")
        # six pairs over len(PAIRS) distinct (query, title, document) texts: identical
        # requests are sent once per judge and answer every pair that needs them
        distinct = min(6, len(PAIRS))
        assert summary.calls == distinct * 5
        assert summary.calls + summary.deduplicated == 30
        assert summary.valid == 30
        labels = ws.latest_labels(rater_kind="judge")
    assert len(labels) == 30
    assert {lab.label for lab in labels} == {"relevant", "not_relevant"}
    assert {lab.rubric_id for lab in labels} == {"qrels-relevance"}


def test_judging_with_the_other_kind_of_rubric_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _workspace(tmp_path / "w.sqlite")
    with Workspace(db) as ws, pytest.raises(TiapError, match="--rubric qrels-relevance"):
        plan_run(ws, load_panel("offline"), load_rubric("contested-credit"), subset="val")
    with pytest.raises(SystemExit) as exit_info:
        main(["judge", "run", "--db", str(db), "--panel", "offline", "--subset", "val"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "rubric 'contested-credit' judges contested credits" in err
    assert "of kind 'qrels'" in err
    with Workspace(db) as ws:
        assert ws.latest_labels() == []  # nothing was called or stored
